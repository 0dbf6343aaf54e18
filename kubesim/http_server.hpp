// HttpServer: the HTTPS listener of kubesim. Accepts on one address/port (port 0 picks a free
// one), runs every connection on its own strand of a shared io_context, and keeps a registry
// of live connections so they can all be dropped at once (fault injection, restarts).
//
// THREAD: listen/port/pause/resume/closeAll/stop may be called from any thread; the io
// threads are owned by the caller (KubesimServer runs io_context::run on its pool).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "host/runtime/status.hpp"
#include "kubesim/http_connection.hpp"
#include "kubesim/http_types.hpp"

namespace ccm::kubesim {

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, boost::asio::ssl::context& tls, HttpHandler& handler,
             ConnectionLimits limits = {});
  ~HttpServer();

  // Binds and starts accepting. port 0: the kernel picks a free port (see port()).
  Status listen(const std::string& address, uint16_t port);
  uint16_t port() const { return port_.load(); }

  // Stops accepting: the listening socket is closed, so new connections are refused.
  void pause();
  // Re-opens the listening socket on the same address and port.
  Status resume();
  // Drops every live connection (watches end abruptly, as when a server dies), except the
  // one from `keep_peer` when given. Returns how many were dropped.
  size_t closeAll(std::string_view keep_peer = {});
  size_t connectionCount() const;
  // HTTP/2 connections: GOAWAY on each (streamed answers ended when end_streams), or
  // RST_STREAM on each streamed answer. Return how many HTTP/2 connections were told.
  size_t goAwayAll(bool end_streams);
  size_t resetStreams();
  TransportStats& stats() { return stats_; }
  // pause() + closeAll().
  void stop();

 private:
  void accept();
  Status open();
  std::vector<std::shared_ptr<HttpConnection>> live(bool http2_only,
                                                    std::string_view skip_peer = {}) const;

  boost::asio::io_context& io_;
  boost::asio::ssl::context& tls_;
  HttpHandler& handler_;
  const ConnectionLimits limits_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::ip::tcp::acceptor acceptor_;  // used on strand_
  std::string address_;
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> accepting_{false};

  TransportStats stats_;
  mutable std::mutex mu_;
  std::unordered_map<HttpConnection*, std::weak_ptr<HttpConnection>> connections_;  // mu_
  std::shared_ptr<std::atomic<bool>> alive_;  // connections check it before touching the registry
};

}  // namespace ccm::kubesim
