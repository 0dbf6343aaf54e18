// HttpServer: accept loop and connection registry.
#include "kubesim/http_server.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "host/log/log.hpp"

namespace ccm::kubesim {

namespace net = boost::asio;

HttpServer::HttpServer(net::io_context& io, net::ssl::context& tls, HttpHandler& handler,
                       ConnectionLimits limits)
    : io_(io),
      tls_(tls),
      handler_(handler),
      limits_(limits),
      strand_(net::make_strand(io)),
      acceptor_(strand_),
      alive_(std::make_shared<std::atomic<bool>>(true)) {}

HttpServer::~HttpServer() {
  stop();
  *alive_ = false;
}

Status HttpServer::listen(const std::string& address, uint16_t port) {
  address_ = address;
  port_ = port;
  return open();
}

Status HttpServer::open() {
  std::promise<Status> done;
  net::dispatch(strand_, [&] {
    boost::system::error_code ec;
    auto addr = net::ip::make_address(address_, ec);
    if (ec) {
      done.set_value(Status(Code::InvalidArgument, "bad bind address " + address_));
      return;
    }
    net::ip::tcp::endpoint ep(addr, port_.load());
    acceptor_.open(ep.protocol(), ec);
    if (!ec) {
      acceptor_.set_option(net::socket_base::reuse_address(true), ec);
      acceptor_.bind(ep, ec);
    }
    if (!ec) {
      acceptor_.listen(net::socket_base::max_listen_connections, ec);
    }
    if (ec) {
      boost::system::error_code ignored;
      acceptor_.close(ignored);
      done.set_value(Status(Code::Unavailable, "cannot listen on " + address_ + ":" +
                                                   std::to_string(port_.load()) + ": " +
                                                   ec.message()));
      return;
    }
    port_ = acceptor_.local_endpoint(ec).port();
    accepting_ = true;
    accept();
    done.set_value(okStatus());
  });
  return done.get_future().get();
}

void HttpServer::accept() {
  acceptor_.async_accept(
      net::make_strand(io_),
      [this, alive = alive_](boost::system::error_code ec, net::ip::tcp::socket socket) {
        if (!*alive || !accepting_) {
          return;
        }
        if (ec) {
          if (ec == net::error::operation_aborted) {
            return;
          }
          ccm::log::warning("accept failed", {{"error", ec.message()}});
        } else {
          auto conn = std::make_shared<HttpConnection>(std::move(socket), tls_, handler_, limits_, stats_,
                                                       [this, alive](HttpConnection* c) {
                                                         if (!*alive) {
                                                           return;
                                                         }
                                                         std::lock_guard lock(mu_);
                                                         connections_.erase(c);
                                                       });
          {
            std::lock_guard lock(mu_);
            connections_[conn.get()] = conn;
          }
          conn->start();
        }
        accept();
      });
}

void HttpServer::pause() {
  std::promise<void> done;
  net::dispatch(strand_, [&] {
    accepting_ = false;
    boost::system::error_code ec;
    acceptor_.close(ec);
    done.set_value();
  });
  done.get_future().wait();
}

Status HttpServer::resume() {
  if (accepting_) {
    return okStatus();
  }
  return open();
}

std::vector<std::shared_ptr<HttpConnection>> HttpServer::live(bool http2_only,
                                                              std::string_view skip_peer) const {
  std::vector<std::shared_ptr<HttpConnection>> conns;
  std::lock_guard lock(mu_);
  for (const auto& [ptr, weak] : connections_) {
    auto c = weak.lock();
    if (c && (skip_peer.empty() || c->peer() != skip_peer) && (!http2_only || c->http2())) {
      conns.push_back(std::move(c));
    }
  }
  return conns;
}

size_t HttpServer::closeAll(std::string_view keep_peer) {
  auto conns = live(false, keep_peer);
  for (auto& c : conns) {
    c->close();
  }
  return conns.size();
}

size_t HttpServer::goAwayAll(bool end_streams) {
  auto conns = live(true);
  for (auto& c : conns) {
    c->goAway(end_streams);
  }
  return conns.size();
}

size_t HttpServer::resetStreams() {
  auto conns = live(true);
  for (auto& c : conns) {
    c->resetStreams();
  }
  return conns.size();
}

size_t HttpServer::connectionCount() const {
  std::lock_guard lock(mu_);
  return connections_.size();
}

void HttpServer::stop() {
  if (io_.stopped()) {
    *alive_ = false;
    return;
  }
  pause();
  // As a server shutting down: GOAWAY first, so HTTP/2 clients see a clean end, then the rest.
  if (goAwayAll(true) > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  closeAll();
}

}  // namespace ccm::kubesim
