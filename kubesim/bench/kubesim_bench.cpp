// kubesim-bench: load generator for kubesim. Starts a kubesim process (or uses a running one)
// and measures, over TLS with keep-alive connections:
//   patch   node PATCH requests/s with N concurrent clients (merge patch of a label)
//   get     node GET requests/s with N concurrent clients
//   watch   watch fan-out: events/s delivered to W watchers while writers patch nodes
//   memory  RSS of a fresh kubesim before and after registering M realistic nodes
// and reports a table and JSON (--json-out).
//
// THREAD: one io thread for all clients (--client-threads to change); the main thread drives
// the scenarios.
// Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility>, so it
// comes first, where sorting the includes cannot move it after Boost.
// clang-format off
#include <utility>
// clang-format on

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string kubesim = "kubesim";
  std::vector<std::string> scenarios = {"patch", "get", "watch", "memory"};
  int clients = 16;
  int watchers = 10;
  int writers = 4;
  int patch_nodes = 1000;
  int memory_nodes = 5000;
  double seconds = 10;
  int client_threads = 1;
  int server_threads = 2;
  std::string json_out;
};

struct Server {
  pid_t pid = -1;
  uint16_t port = 0;
  std::string token;
  std::string ca;
  std::string dir;
};

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

long rssKb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return -1;
}

// CPU seconds (user + system) the process has used so far.
double cpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = stat.rfind(')');
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15; ++i) {
    rest >> field;
    if (i == 14) {
      utime = std::stol(field);
    }
    if (i == 15) {
      stime = std::stol(field);
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

Server startServer(const Options& o, int nodes) {
  Server s;
  char tmpl[] = "/tmp/kubesim-bench-XXXXXX";
  s.dir = mkdtemp(tmpl);
  std::string ready = s.dir + "/ready.json";
  s.pid = fork();
  if (s.pid == 0) {
    std::string log = s.dir + "/kubesim.log";
    FILE* f = std::fopen(log.c_str(), "w");
    if (f != nullptr) {
      dup2(fileno(f), 1);
      dup2(fileno(f), 2);
    }
    std::vector<std::string> args = {o.kubesim,
                                     "--port=0",
                                     "--cert-dir=" + s.dir + "/certs",
                                     "--ready-file=" + ready,
                                     "--nodes=" + std::to_string(nodes),
                                     "--threads=" + std::to_string(o.server_threads),
                                     "--heartbeat-period=1h",
                                     "--node-status-period=1h",
                                     "--watch-history=20000"};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::perror("execv kubesim");
    _exit(127);
  }
  auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!std::filesystem::exists(ready)) {
    int st;
    if (waitpid(s.pid, &st, WNOHANG) == s.pid) {
      std::cerr << "kubesim exited; log:\n" << readAll(s.dir + "/kubesim.log");
      std::exit(1);
    }
    if (Clock::now() > deadline) {
      std::cerr << "kubesim did not become ready\n";
      kill(s.pid, SIGKILL);
      std::exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string r = readAll(ready);
  auto p = r.find("\"port\":");
  s.port = static_cast<uint16_t>(std::stoi(r.substr(p + 7)));
  s.token = readAll(s.dir + "/certs/admin.token");
  while (!s.token.empty() && (s.token.back() == '\n')) {
    s.token.pop_back();
  }
  s.ca = readAll(s.dir + "/certs/ca.crt");
  return s;
}

void stopServer(Server& s) {
  if (s.pid > 0) {
    kill(s.pid, SIGTERM);
    int st;
    waitpid(s.pid, &st, 0);
    s.pid = -1;
  }
  std::filesystem::remove_all(s.dir);
}

// One keep-alive HTTPS client running a request loop.
class Client : public std::enable_shared_from_this<Client> {
 public:
  using MakeRequest = std::function<http::request<http::string_body>(uint64_t seq)>;

  Client(net::io_context& io, ssl::context& tls, const Server& server, MakeRequest make,
         std::atomic<bool>& stop)
      : stream_(net::make_strand(io), tls), server_(server), make_(std::move(make)), stop_(stop) {}

  void start() {
    auto self = shared_from_this();
    beast::get_lowest_layer(stream_).async_connect(
        net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), server_.port),
        [self](beast::error_code ec) {
          if (ec) {
            return self->fail(ec);
          }
          self->stream_.async_handshake(ssl::stream_base::client, [self](beast::error_code ec2) {
            if (ec2) {
              return self->fail(ec2);
            }
            self->next();
          });
        });
  }

  uint64_t ok = 0;
  uint64_t errors = 0;
  std::vector<double> latencies_us;

 private:
  void fail(beast::error_code ec) {
    if (!stop_) {
      std::cerr << "client error: " << ec.message() << "\n";
    }
    ++errors;
  }
  void next() {
    if (stop_) {
      return;
    }
    req_ = make_(seq_++);
    if (stop_) {
      return;  // the generator may end the run
    }
    req_.set(http::field::host, "127.0.0.1");
    req_.set(http::field::authorization, "Bearer " + server_.token);
    req_.keep_alive(true);
    req_.prepare_payload();
    started_ = Clock::now();
    auto self = shared_from_this();
    http::async_write(stream_, req_, [self](beast::error_code ec, size_t) {
      if (ec) {
        return self->fail(ec);
      }
      self->res_ = {};
      http::async_read(
          self->stream_, self->buf_, self->res_, [self](beast::error_code ec2, size_t) {
            if (ec2) {
              return self->fail(ec2);
            }
            if (self->res_.result_int() < 300) {
              ++self->ok;
              self->latencies_us.push_back(
                  std::chrono::duration<double, std::micro>(Clock::now() - self->started_).count());
            } else {
              ++self->errors;
              if (self->errors < 3) {
                std::cerr << "HTTP " << self->res_.result_int() << ": "
                          << self->res_.body().substr(0, 200) << "\n";
              }
            }
            self->next();
          });
    });
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  const Server& server_;
  MakeRequest make_;
  std::atomic<bool>& stop_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
  beast::flat_buffer buf_;
  uint64_t seq_ = 0;
  Clock::time_point started_;
};

// A watch connection counting delivered events.
class WatchClient : public std::enable_shared_from_this<WatchClient> {
 public:
  WatchClient(net::io_context& io, ssl::context& tls, const Server& server, std::string target)
      : stream_(net::make_strand(io), tls), server_(server), target_(std::move(target)) {}

  void start(std::function<void()> on_ready) {
    on_ready_ = std::move(on_ready);
    auto self = shared_from_this();
    beast::get_lowest_layer(stream_).async_connect(
        net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), server_.port),
        [self](beast::error_code ec) {
          if (ec) {
            return;
          }
          self->stream_.async_handshake(ssl::stream_base::client, [self](beast::error_code ec2) {
            if (ec2) {
              return;
            }
            self->req_ = http::request<http::string_body>(http::verb::get, self->target_, 11);
            self->req_.set(http::field::host, "127.0.0.1");
            self->req_.set(http::field::authorization, "Bearer " + self->server_.token);
            http::async_write(self->stream_, self->req_, [self](beast::error_code ec3, size_t) {
              if (ec3) {
                return;
              }
              self->read();
            });
          });
        });
  }

  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> bytes{0};

 private:
  void read() {
    auto self = shared_from_this();
    stream_.async_read_some(net::buffer(buf_), [self](beast::error_code ec, size_t n) {
      if (ec) {
        return;
      }
      if (self->on_ready_) {
        auto f = std::move(self->on_ready_);
        self->on_ready_ = nullptr;
        f();
      }
      uint64_t count = 0;
      for (size_t i = 0; i < n; ++i) {
        if (self->buf_[i] == '\n' && self->prev_ == '}') {
          ++count;
        }
        self->prev_ = self->buf_[i];
      }
      self->events += count;
      self->bytes += n;
      self->read();
    });
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  const Server& server_;
  std::string target_;
  http::request<http::string_body> req_;
  std::array<char, 65536> buf_{};
  char prev_ = 0;
  std::function<void()> on_ready_;
};

std::string nodeName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "node-%05d", i);
  return buf;
}

struct Result {
  std::string name;
  double value = 0;
  std::string unit;
  std::string note;
};

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

ssl::context makeTls(const Server& s) {
  ssl::context tls(ssl::context::tls_client);
  tls.add_certificate_authority(net::buffer(s.ca));
  tls.set_verify_mode(ssl::verify_peer);
  return tls;
}

void runLoad(const Options& o, const Server& s, bool patch, std::vector<Result>& out) {
  net::io_context io;
  ssl::context tls = makeTls(s);
  std::atomic<bool> stop{false};
  std::vector<std::shared_ptr<Client>> clients;
  for (int c = 0; c < o.clients; ++c) {
    auto make = [&o, c, patch](uint64_t seq) {
      int node = 1 + static_cast<int>((seq * 7919 + static_cast<uint64_t>(c) * 104729) %
                                      static_cast<uint64_t>(o.patch_nodes));
      if (patch) {
        http::request<http::string_body> r(http::verb::patch, "/api/v1/nodes/" + nodeName(node),
                                           11);
        r.set(http::field::content_type, "application/merge-patch+json");
        r.body() = R"({"metadata":{"labels":{"bench":"c)" + std::to_string(c) + "-" +
                   std::to_string(seq) + "\"}}}";
        return r;
      }
      http::request<http::string_body> r(http::verb::get, "/api/v1/nodes/" + nodeName(node), 11);
      r.set(http::field::accept, "application/json");
      return r;
    };
    clients.push_back(std::make_shared<Client>(io, tls, s, make, stop));
  }
  for (auto& c : clients) {
    c->start();
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.client_threads));
  for (int t = 0; t < o.client_threads; ++t) {
    threads.emplace_back([&] { io.run(); });
  }
  // Warm up, then measure.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint64_t ok0 = 0;
  for (auto& c : clients) {
    ok0 += c->ok;
  }
  auto t0 = Clock::now();
  double cpu0 = cpuSeconds(s.pid);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  double cpu1 = cpuSeconds(s.pid);
  uint64_t ok1 = 0;
  uint64_t errors = 0;
  for (auto& c : clients) {
    ok1 += c->ok;
    errors += c->errors;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  io.stop();
  for (auto& t : threads) {
    t.join();
  }
  std::vector<double> lat;
  for (auto& c : clients) {
    lat.insert(lat.end(), c->latencies_us.begin(), c->latencies_us.end());
  }
  double rate = static_cast<double>(ok1 - ok0) / secs;
  std::string name = patch ? "node PATCH" : "node GET";
  char note[200];
  double cpu_us = ok1 > ok0 ? (cpu1 - cpu0) * 1e6 / static_cast<double>(ok1 - ok0) : 0;
  std::snprintf(note, sizeof(note),
                "%d clients, p50 %.2f ms, p99 %.2f ms, server CPU %.0f us/request "
                "(= %.0f/s per core), errors %llu",
                o.clients, percentile(lat, 0.5) / 1000, percentile(lat, 0.99) / 1000, cpu_us,
                cpu_us > 0 ? 1e6 / cpu_us : 0.0, static_cast<unsigned long long>(errors));
  out.push_back({name, rate, "req/s", note});
}

void runWatch(const Options& o, const Server& s, std::vector<Result>& out) {
  net::io_context io;
  ssl::context tls = makeTls(s);
  std::atomic<int> ready{0};
  std::vector<std::shared_ptr<WatchClient>> watchers;
  // Start from "now": a bookmark-free watch from the current RV (fetched via a list below is
  // not needed: watching without resourceVersion sends the initial state first, so use RV of
  // the last node's creation, which is recent enough for the history window).
  for (int w = 0; w < o.watchers; ++w) {
    auto wc = std::make_shared<WatchClient>(
        io, tls, s, "/api/v1/nodes?watch=1&allowWatchBookmarks=false&timeoutSeconds=600");
    watchers.push_back(wc);
    wc->start([&] { ++ready; });
  }
  std::atomic<bool> stop{false};
  std::vector<std::shared_ptr<Client>> writers;
  for (int c = 0; c < o.writers; ++c) {
    auto make = [&o, c](uint64_t seq) {
      int node = 1 + static_cast<int>((seq * 7919 + static_cast<uint64_t>(c) * 104729) %
                                      static_cast<uint64_t>(o.patch_nodes));
      http::request<http::string_body> r(http::verb::patch, "/api/v1/nodes/" + nodeName(node), 11);
      r.set(http::field::content_type, "application/merge-patch+json");
      r.body() = R"({"metadata":{"labels":{"watchbench":"w)" + std::to_string(c) + "-" +
                 std::to_string(seq) + "\"}}}";
      return r;
    };
    writers.push_back(std::make_shared<Client>(io, tls, s, make, stop));
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.client_threads));
  for (int t = 0; t < o.client_threads; ++t) {
    threads.emplace_back([&] { io.run(); });
  }
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (ready < o.watchers && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Let the initial ADDED events drain.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  for (auto& w : writers) {
    w->start();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint64_t e0 = 0;
  uint64_t ok0 = 0;
  for (auto& w : watchers) {
    e0 += w->events;
  }
  for (auto& w : writers) {
    ok0 += w->ok;
  }
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  uint64_t e1 = 0;
  uint64_t ok1 = 0;
  uint64_t bytes = 0;
  for (auto& w : watchers) {
    e1 += w->events;
    bytes += w->bytes;
  }
  for (auto& w : writers) {
    ok1 += w->ok;
  }
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  io.stop();
  for (auto& t : threads) {
    t.join();
  }
  double writes = static_cast<double>(ok1 - ok0) / secs;
  double events = static_cast<double>(e1 - e0) / secs;
  char note[200];
  std::snprintf(note, sizeof(note),
                "%d watchers, %d writers at %.0f writes/s, %.1f%% of writes delivered to each",
                o.watchers, o.writers, writes,
                writes > 0 ? 100.0 * events / (writes * o.watchers) : 0.0);
  out.push_back({"watch fan-out", events, "events/s", note});
  (void)bytes;
}

void runMemory(const Options& o, std::vector<Result>& out) {
  Server s = startServer(o, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  long before = rssKb(s.pid);
  // Register the nodes through the admin API.
  net::io_context io;
  ssl::context tls = makeTls(s);
  std::atomic<bool> stop{false};
  bool once = false;
  auto client = std::make_shared<Client>(
      io, tls, s,
      [&](uint64_t) {
        if (once) {
          stop = true;
        }
        once = true;
        http::request<http::string_body> r(http::verb::post, "/admin/nodes", 11);
        r.set(http::field::content_type, "application/json");
        r.body() = R"({"count":)" + std::to_string(o.memory_nodes) + "}";
        return r;
      },
      stop);
  auto t0 = Clock::now();
  client->start();
  io.run_for(std::chrono::seconds(300));
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  long after = rssKb(s.pid);
  stopServer(s);
  char note[200];
  std::snprintf(note, sizeof(note), "RSS %ld MiB empty; %d nodes registered at once in %.2f s",
                before / 1024, o.memory_nodes, secs);
  out.push_back({"RSS with " + std::to_string(o.memory_nodes) + " nodes",
                 static_cast<double>(after) / 1024.0, "MiB", note});
}

void usage() {
  std::cout << "kubesim-bench --kubesim=PATH [--scenarios=patch,get,watch,memory] [--clients=16]\n"
               "  [--watchers=10] [--writers=4] [--patch-nodes=1000] [--memory-nodes=5000]\n"
               "  [--seconds=10] [--client-threads=1] [--server-threads=2] [--json-out=PATH]\n";
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* k) -> std::optional<std::string> {
      std::string p = std::string("--") + k + "=";
      if (a.rfind(p, 0) == 0) {
        return a.substr(p.size());
      }
      return std::nullopt;
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (auto v = val("kubesim")) {
      o.kubesim = *v;
    } else if (auto v = val("scenarios")) {
      o.scenarios.clear();
      std::stringstream ss(*v);
      std::string s;
      while (std::getline(ss, s, ',')) {
        o.scenarios.push_back(s);
      }
    } else if (auto v = val("clients")) {
      o.clients = std::stoi(*v);
    } else if (auto v = val("watchers")) {
      o.watchers = std::stoi(*v);
    } else if (auto v = val("writers")) {
      o.writers = std::stoi(*v);
    } else if (auto v = val("patch-nodes")) {
      o.patch_nodes = std::stoi(*v);
    } else if (auto v = val("memory-nodes")) {
      o.memory_nodes = std::stoi(*v);
    } else if (auto v = val("seconds")) {
      o.seconds = std::stod(*v);
    } else if (auto v = val("client-threads")) {
      o.client_threads = std::stoi(*v);
    } else if (auto v = val("server-threads")) {
      o.server_threads = std::stoi(*v);
    } else if (auto v = val("json-out")) {
      o.json_out = *v;
    } else {
      usage();
      return 2;
    }
  }
  std::vector<Result> results;
  auto want = [&](const char* s) {
    return std::find(o.scenarios.begin(), o.scenarios.end(), s) != o.scenarios.end();
  };
  if (want("patch") || want("get") || want("watch")) {
    Server s = startServer(o, o.patch_nodes);
    if (want("patch")) {
      runLoad(o, s, true, results);
    }
    if (want("get")) {
      runLoad(o, s, false, results);
    }
    if (want("watch")) {
      runWatch(o, s, results);
    }
    stopServer(s);
  }
  if (want("memory")) {
    runMemory(o, results);
  }

  std::printf("\n%-22s %14s  %-9s %s\n", "scenario", "result", "unit", "details");
  std::printf("%-22s %14s  %-9s %s\n", "--------", "------", "----", "-------");
  for (const auto& r : results) {
    std::printf("%-22s %14.1f  %-9s %s\n", r.name.c_str(), r.value, r.unit.c_str(), r.note.c_str());
  }
  std::string json = "{\"results\":[";
  for (size_t i = 0; i < results.size(); ++i) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"scenario\":\"%s\",\"value\":%.1f,\"unit\":\"%s\",\"details\":\"%s\"}",
                  i ? "," : "", results[i].name.c_str(), results[i].value, results[i].unit.c_str(),
                  results[i].note.c_str());
    json += buf;
  }
  json += "]}\n";
  std::cout << json;
  if (!o.json_out.empty()) {
    std::ofstream(o.json_out) << json;
  }
  return 0;
}
