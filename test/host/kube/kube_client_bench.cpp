// kube-client-bench: measures what the scale targets depend on, and prints it:
//  - heap bytes per cached node (5,000 realistic nodes of ~5.5 KB JSON each) and per cached
//    Service (5,000 LoadBalancer Services with two ports, from testdata/service.json);
//  - CPU per node decoded from a streamed list and from watch events;
//  - CPU per request of the client (PATCH over a kept-alive connection), and requests/s
//    with several threads against the in-process fake server.
// Usage: kube-client-bench [testdata-dir]
//        kube-client-bench --kubeconfig FILE [--informers [services]]
//        kube-client-bench --loopback-floor [round-trips [in-flight]]
//        kube-client-bench --wait-model
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include "host/kube/cache/informer.hpp"
#include "host/kube/objects/envelope_decoder.hpp"
#include "host/kube/objects/node_decoder.hpp"
#include "host/kube/objects/node_event_scan.hpp"
#include "host/kube/objects/service_decoder.hpp"
#include "host/kube/transport/kube_client.hpp"
#include "host/kube/write/patch_builder.hpp"
#include "test/support/fake_api_server.hpp"

namespace {

double cpuSeconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double wallSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> makeNodes(const std::string& base, int count) {
  std::vector<std::string> out;
  for (int i = 0; i < count; ++i) {
    std::string json = base;
    std::string suffix = std::to_string(100000 + i).substr(1);
    for (const char* unique : {"ip-10-0-12-34", "i-0123456789abcdef0", "5b3a8c2e-8f1d-4c7a-9e2b",
                               "ec2a1b2c3d4e5f60718293a4b5c6d7e8", "ec2a1b2c-3d4e-5f60",
                               "0f1e2d3c-4b5a-6978", "10.0.12.34", "10.244.12.0"}) {
      std::string u = unique;
      std::string v = u.substr(0, u.size() - 5) + suffix;
      size_t pos = 0;
      while ((pos = json.find(u, pos)) != std::string::npos) {
        json.replace(pos, u.size(), v);
        pos += v.size();
      }
    }
    out.push_back(std::move(json));
  }
  return out;
}

// Heartbeat events (a kubelet's status post: a new resourceVersion, managedFields time and
// heartbeat times, nothing a controller reads), made as the informer makes them: scanned and
// copied from the cached node without a parse (scanNodeEvent, finishScanned); and, in turn
// with that, parsed in situ with strings deferred and finished against the cached version;
// and parsed in full (every kept string copied or interned, a new Node frozen).
void benchHeartbeats(const std::vector<std::string>& nodes, int pairs) {
  using namespace ccm::kube;
  auto beat = [](std::string json, int round) {
    std::string stamp = fmt::format("2026-07-24T11:{:02}:00Z", round);
    for (const char* key : {R"("lastHeartbeatTime":")", R"("time":")"}) {
      size_t pos = 0;
      std::string k = key;
      while ((pos = json.find(k, pos)) != std::string::npos) {
        json.replace(pos + k.size(), stamp.size(), stamp);
        pos += k.size() + stamp.size();
      }
    }
    std::string rv_key = R"("resourceVersion":")";
    size_t at = json.find(rv_key) + rv_key.size();
    json.replace(at, json.find('"', at) - at, std::to_string(200000 + round));
    return R"({"type":"MODIFIED","object":)" + json + "}";
  };
  NodeDecoder d;
  WatchEventHandler<NodeDecoder> handler(d);
  rapidjson::Reader reader;
  std::string scratch;
  NodeEventScan scan;
  std::vector<std::shared_ptr<const Node>> cache;
  for (const auto& json : nodes) {
    std::string event = beat(json, 0);
    scanNodeEvent(event, scan);
    handler.reset();
    detail::parseInMemory<rapidjson::kParseStopWhenDoneFlag>(reader, event, scratch, handler,
                                                             &d.skipSignal());
    d.fingerprint(scan.fingerprint);
    cache.push_back(d.finish());
  }
  const char* kModes[] = {"in full", "against the cache", "scanned, without a parse"};
  for (int run = 0; run < 3 * pairs; ++run) {
    int mode = run % 3;
    std::vector<std::string> events;
    events.reserve(nodes.size());
    for (const auto& json : nodes) {
      events.push_back(beat(json, 1 + static_cast<int>(events.size() % 50)));
    }
    if (mode == 2) {
      // The scan on its own (what every Node watch event costs before anything is made).
      double s0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
      size_t scanned = 0;
      for (const std::string& e : events) {
        scanned += scanNodeEvent(e, scan) ? 1 : 0;
      }
      double s1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
      std::printf("heartbeat events: %zu scanned only, %.2f us/event (%zu followed)\n",
                  events.size(), (s1 - s0) * 1e6 / static_cast<double>(events.size()), scanned);
    }
    size_t copies = d.heartbeatCopies();
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    for (size_t i = 0; i < events.size(); ++i) {
      if (mode == 2 && scanNodeEvent(events[i], scan)) {
        if (auto made = d.finishScanned(*cache[i], scan)) {
          cache[i] = std::move(made);
          continue;
        }
      }
      handler.reset();
      if (mode != 0) {
        d.deferStrings();
      }
      if (detail::parseInMemory<rapidjson::kParseStopWhenDoneFlag>(reader, events[i], scratch,
                                                                   handler, &d.skipSignal())) {
        d.fingerprint(mode == 2 ? scan.fingerprint : cache[i]->eventFingerprint());
        cache[i] = d.finish(mode != 0 ? cache[i].get() : nullptr);
      }
    }
    double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    std::printf("heartbeat events: %zu %s, %.1f us/event (%zu made from the cached node)\n",
                events.size(), kModes[mode], (c1 - c0) * 1e6 / static_cast<double>(events.size()),
                d.heartbeatCopies() - copies);
  }
}

}  // namespace

// With --kubeconfig FILE: client CPU per PATCH/GET against a real server over TLS.
int benchServer(const std::string& kubeconfig) {
  using namespace ccm::kube;
  ClientOptions o;
  o.kubeconfig = kubeconfig;
  o.qps = -1;  // unthrottled
  auto c = KubeClient::create(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().toString().c_str());
    return 1;
  }
  KubeClient& client = **c;
  auto list = client.get(ResourcePath{"v1", "nodes", "", "", ""});
  std::vector<std::string> names;
  size_t pos = 0;
  while ((pos = list->find("\"name\":\"", pos)) != std::string::npos) {
    pos += 8;
    std::string n = list->substr(pos, list->find('"', pos) - pos);
    if (n.rfind("node-", 0) == 0)
      names.push_back(n);
  }
  if (names.empty()) {
    std::fprintf(stderr, "no node-* nodes on the server\n");
    return 1;
  }
  const int n = 2000;
  double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  double w0 = wallSeconds();
  for (int i = 0; i < n; ++i) {
    auto r = client.patch(nodePath(names[i % names.size()]), PatchType::Strategic,
                          NodePatch().setLabel("bench", std::to_string(i)).build());
    if (!r.ok()) {
      std::fprintf(stderr, "patch: %s\n", r.status().toString().c_str());
      return 1;
    }
  }
  double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  double w1 = wallSeconds();
  std::printf("server %s: %d sequential PATCHes, client CPU %.1f us/request, %.0f requests/s\n",
              client.config().server.c_str(), n, (c1 - c0) * 1e6 / n, n / (w1 - w0));
  return 0;
}

long rssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  }
  return -1;
}

// With --kubeconfig FILE --informers [services]: creates that many LoadBalancer services, then
// syncs a node and a service informer and reports the process's RSS and heap.
int benchInformers(const std::string& kubeconfig, int services) {
  using namespace ccm::kube;
  ClientOptions o;
  o.kubeconfig = kubeconfig;
  o.qps = -1;  // unthrottled
  auto c = KubeClient::create(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().toString().c_str());
    return 1;
  }
  KubeClient& client = **c;
  for (int i = 0; i < services; ++i) {
    auto r = client.create(
        servicePath("default"),
        fmt::format(
            R"({{"apiVersion":"v1","kind":"Service","metadata":{{"name":"svc-{}","labels":{{"app":"svc-{}","tier":"web"}},"annotations":{{"service.beta.kubernetes.io/load-balancer-source-ranges":"10.0.0.0/8"}}}},"spec":{{"type":"LoadBalancer","selector":{{"app":"svc-{}"}},"ports":[{{"name":"http","port":80,"targetPort":8080}},{{"name":"https","port":443,"targetPort":8443}}]}}}})",
            i, i, i));
    if (!r.ok() && !r.status().isAlreadyExists()) {
      std::fprintf(stderr, "create service: %s\n", r.status().toString().c_str());
      return 1;
    }
  }
  long rss0 = rssKb();
  size_t heap0 = mallinfo2().uordblks;
  double c0 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  double w0 = wallSeconds();
  NodeInformer nodes(&client);
  ServiceInformer svcs(&client);
  nodes.start();
  svcs.start();
  std::stop_source never;
  waitForCacheSync(never.get_token(), {&nodes, &svcs});
  double c1 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  double w1 = wallSeconds();
  malloc_trim(0);
  std::printf(
      "informers: %zu nodes + %zu services synced in %.2f s (%.2f CPU s); RSS %ld -> %ld KiB, "
      "heap +%zu KiB\n",
      nodes.size(), svcs.size(), w1 - w0, c1 - c0, rss0, rssKb(),
      (mallinfo2().uordblks - heap0) / 1024);
  return 0;
}

// Bare request/answer traffic over loopback TCP: a PATCH-sized request, a Node-sized answer,
// no TLS, HTTP or JSON. What the kernel alone charges a client for its writes.
constexpr size_t kLoopRequest = 533;  // a status PATCH as the node controller sends it
constexpr size_t kLoopAnswer = 5500;  // a realistic Node

// Answers every request on every connection in arrival order, after spinning `work_us` (the
// API server's own work per request, 0: answer at once), from one thread.
class LoopbackServer {
 public:
  explicit LoopbackServer(int work_us) : work_us_(work_us) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    addr_.sin_family = AF_INET;
    addr_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr_;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr_), len) != 0 ||
        ::listen(listener_, 128) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr_), &len) != 0 ||
        ::pipe(stop_) != 0) {
      std::perror("loopback listener");
      std::exit(1);
    }
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    ::write(stop_[1], "x", 1);
    thread_.join();
    ::close(listener_);
    ::close(stop_[0]);
    ::close(stop_[1]);
  }
  // A connected client socket (TCP_NODELAY, blocking).
  int connect() const {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0) {
      std::perror("loopback connect");
      std::exit(1);
    }
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &kOne, sizeof kOne);
    return s;
  }

 private:
  static constexpr int kOne = 1;
  void serve() {
    int ep = ::epoll_create1(0);
    for (int fd : {listener_, stop_[0]}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    std::vector<char> in(kLoopRequest);
    std::vector<char> answer(kLoopAnswer, 'a');
    for (;;) {
      epoll_event evs[64];
      int k = ::epoll_wait(ep, evs, 64, -1);
      for (int i = 0; i < k; ++i) {
        int fd = evs[i].data.fd;
        if (fd == stop_[0]) {
          ::close(ep);
          return;
        }
        if (fd == listener_) {
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = ::accept(listener_, nullptr, nullptr);
          ::setsockopt(ev.data.fd, IPPROTO_TCP, TCP_NODELAY, &kOne, sizeof kOne);
          ::epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
          continue;
        }
        size_t got = 0;
        while (got < kLoopRequest) {
          ssize_t n = ::recv(fd, in.data() + got, kLoopRequest - got, 0);
          if (n <= 0) {
            ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
            ::close(fd);
            break;
          }
          got += static_cast<size_t>(n);
        }
        if (got < kLoopRequest) {
          continue;
        }
        for (double t0 = wallSeconds(); wallSeconds() - t0 < work_us_ * 1e-6;) {
        }
        ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      }
    }
  }

  int work_us_;
  int listener_ = -1;
  int stop_[2] = {-1, -1};
  sockaddr_in addr_{};
  std::thread thread_;
};

// Reads one or more whole answers from a blocking socket (they are counted in bytes).
bool readAnswers(int s, size_t count, std::vector<char>& buf) {
  for (size_t got = 0; got < kLoopAnswer * count;) {
    ssize_t n = ::recv(s, buf.data(), buf.size(), 0);
    if (n <= 0) {
      std::perror("loopback recv");
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

// With --loopback-floor [N [K]]: the client CPU of N bare round trips against a server that
// answers at once; K requests are written before their answers are read (default 1). The
// node burst's host CPU is compared with it (bench/scenarios.py).
int benchLoopbackFloor(int round_trips, int in_flight) {
  LoopbackServer server(0);
  int s = server.connect();
  std::vector<char> request(kLoopRequest, 'r');
  std::vector<char> buf(16 * 1024);
  double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  round_trips -= round_trips % in_flight;
  for (int i = 0; i < round_trips; i += in_flight) {
    for (int k = 0; k < in_flight; ++k) {
      if (::send(s, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
        std::perror("loopback send");
        return 1;
      }
    }
    if (!readAnswers(s, static_cast<size_t>(in_flight), buf)) {
      return 1;
    }
  }
  double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
  ::close(s);
  std::printf(
      "loopback floor: %d round trips (%zu B out, %zu B back, no TLS/HTTP/JSON, %d in "
      "flight), client CPU %.1f us per round trip\n",
      round_trips, kLoopRequest, kLoopAnswer, in_flight, (c1 - c0) * 1e6 / round_trips);
  return 0;
}

// With --wait-model: how a client's waiting costs it CPU against a server that takes longer
// than the client per request (70 us of work each, answered one at a time), with ten requests
// in flight on ten connections: ten blocking threads (the node workers today), one epoll
// thread reading each answer as it comes, and one that sleeps before collecting answers so
// that several arrive per wake-up.
int benchWaitModel() {
  constexpr int kConns = 10;
  constexpr int kRequests = 10000;
  constexpr int kWorkUs = 70;
  std::vector<char> request(kLoopRequest, 'r');
  auto report = [&](const char* how, double cpu, double wall, long wakeups) {
    std::printf(
        "wait model: %-44s client CPU %.1f us per request, %.2f wake-ups per request, "
        "%.0f requests/s\n",
        how, cpu * 1e6 / kRequests, static_cast<double>(wakeups) / kRequests, kRequests / wall);
  };
  auto wakeups = [] {
    rusage r{};
    ::getrusage(RUSAGE_THREAD, &r);
    return r.ru_nvcsw;
  };
  {
    LoopbackServer server(kWorkUs);
    std::atomic<double> cpu{0};
    std::atomic<long> woke{0};
    std::atomic<bool> failed{false};
    double w0 = wallSeconds();
    std::vector<std::thread> threads;
    for (int t = 0; t < kConns; ++t) {
      threads.emplace_back([&] {
        int s = server.connect();
        std::vector<char> buf(16 * 1024);
        double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
        long v0 = wakeups();
        for (int i = 0; i < kRequests / kConns; ++i) {
          if (::send(s, request.data(), request.size(), MSG_NOSIGNAL) < 0 ||
              !readAnswers(s, 1, buf)) {
            failed = true;
            break;
          }
        }
        cpu.fetch_add(cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - c0);
        woke.fetch_add(wakeups() - v0);
        ::close(s);
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    if (failed) {
      return 1;
    }
    report("10 blocking threads, one request each:", cpu.load(), wallSeconds() - w0, woke.load());
  }
  for (int gather_us : {0, 500}) {
    LoopbackServer server(kWorkUs);
    int ep = ::epoll_create1(0);
    std::vector<int> socks;
    std::vector<size_t> got(kConns, 0);
    std::vector<int> left(kConns, kRequests / kConns);
    for (int c = 0; c < kConns; ++c) {
      int s = server.connect();
      ::fcntl(s, F_SETFL, O_NONBLOCK);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<uint32_t>(c);
      ::epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
      socks.push_back(s);
    }
    std::vector<char> buf(64 * 1024);
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    double w0 = wallSeconds();
    long v0 = wakeups();
    for (int s : socks) {
      ::send(s, request.data(), request.size(), MSG_NOSIGNAL);
    }
    for (int active = kConns; active > 0;) {
      if (gather_us > 0) {
        timespec pause{0, gather_us * 1000L};
        ::nanosleep(&pause, nullptr);
      }
      epoll_event evs[kConns];
      int k = ::epoll_wait(ep, evs, kConns, -1);
      for (int e = 0; e < k; ++e) {
        uint32_t c = evs[e].data.u32;
        ssize_t n = 0;
        while ((n = ::recv(socks[c], buf.data(), buf.size(), 0)) > 0) {
          got[c] += static_cast<size_t>(n);
        }
        if (n == 0) {
          std::fprintf(stderr, "wait model: the server closed a connection\n");
          return 1;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          std::perror("wait model recv");
          return 1;
        }
        for (; got[c] >= kLoopAnswer; got[c] -= kLoopAnswer) {
          if (--left[c] > 0) {
            ::send(socks[c], request.data(), request.size(), MSG_NOSIGNAL);
          } else {
            --active;
          }
        }
      }
    }
    double cpu = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    report(gather_us == 0 ? "one epoll thread, reading at once:"
                          : "one epoll thread, sleeping 500 us per collection:",
           cpu, wallSeconds() - w0, wakeups() - v0);
    for (int s : socks) {
      ::close(s);
    }
    ::close(ep);
  }
  return 0;
}

int main(int argc, char** argv) {
  using namespace ccm::kube;
  if (argc > 1 && std::string(argv[1]) == "--wait-model") {
    return benchWaitModel();
  }
  if (argc > 1 && std::string(argv[1]) == "--loopback-floor") {
    int in_flight = argc > 3 ? std::clamp(std::atoi(argv[3]), 1, 64) : 1;
    return benchLoopbackFloor(argc > 2 ? std::max(in_flight, std::atoi(argv[2])) : 20000,
                              in_flight);
  }
  if (argc > 3 && std::string(argv[1]) == "--kubeconfig" && std::string(argv[3]) == "--informers") {
    return benchInformers(argv[2], argc > 4 ? std::atoi(argv[4]) : 0);
  }
  if (argc > 2 && std::string(argv[1]) == "--kubeconfig") {
    return benchServer(argv[2]);
  }
  // --heartbeats N: only the heartbeat events, N alternating pairs (for profiling).
  int heartbeat_pairs = 0;
  if (argc > 2 && std::string(argv[1]) == "--heartbeats") {
    heartbeat_pairs = std::max(1, std::atoi(argv[2]));
    argc = 1;
  }
  std::string dir = argc > 1 ? argv[1] : CCM_TESTDATA;
  std::ifstream in(dir + "/node.json");
  if (!in) {
    std::fprintf(stderr, "cannot read %s/node.json\n", dir.c_str());
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const int kNodes = 5000;
  std::vector<std::string> nodes = makeNodes(ss.str(), kNodes);
  if (heartbeat_pairs > 0) {
    benchHeartbeats(nodes, heartbeat_pairs);
    return 0;
  }
  size_t json_bytes = 0;
  for (const auto& n : nodes)
    json_bytes += n.size();

  // 1. Memory per cached node.
  {
    NodeDecoder d;
    std::unordered_map<std::string_view, std::shared_ptr<const Node>> cache;
    cache.reserve(8192);
    size_t before = mallinfo2().uordblks;
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    for (const auto& json : nodes) {
      d.reset();
      rapidjson::Reader reader;
      rapidjson::MemoryStream ms(json.data(), json.size());
      reader.Parse(ms, d);
      auto node = d.finish();
      cache.emplace(node->key(), node);
    }
    double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    size_t after = mallinfo2().uordblks;
    std::printf(
        "cache: %d nodes, %zu bytes JSON/node, %zu heap bytes/node, decode %.1f us/node "
        "(%.0f MB/s)\n",
        kNodes, json_bytes / kNodes, (after - before) / cache.size(), (c1 - c0) * 1e6 / kNodes,
        json_bytes / (c1 - c0) / 1e6);
  }

  // 1a. Memory per cached Service: the same LoadBalancer Service under 5,000 names, uids and
  // addresses, decoded and kept as the informer keeps them.
  {
    std::ifstream sin(dir + "/service.json");
    std::stringstream sss;
    sss << sin.rdbuf();
    const std::string base = sss.str();
    std::vector<std::string> services;
    for (int i = 0; i < kNodes; ++i) {
      std::string json = base;
      std::string suffix = std::to_string(100000 + i).substr(1);
      for (auto [from, to] :
           {std::pair<std::string, std::string>{"\"web\"", "\"web-" + suffix + "\""},
            {"555555555555", "5555555" + suffix},
            {"203.0.113.9", "203.0." + std::to_string(i / 250) + "." + std::to_string(i % 250)},
            {"10.96.12.7", "10.96." + std::to_string(i / 250) + "." + std::to_string(i % 250)}}) {
        size_t pos = 0;
        while ((pos = json.find(from, pos)) != std::string::npos) {
          json.replace(pos, from.size(), to);
          pos += to.size();
        }
      }
      services.push_back(std::move(json));
    }
    // With their JSON (a load-balancer capability present) and without.
    for (bool keep_json : {true, false}) {
      ServiceDecoder d;
      d.keepJson(keep_json);
      std::unordered_map<std::string_view, std::shared_ptr<const Service>> cache;
      cache.reserve(8192);
      size_t own = 0;
      size_t before = mallinfo2().uordblks;
      for (const auto& json : services) {
        d.reset();
        rapidjson::Reader reader;
        rapidjson::MemoryStream ms(json.data(), json.size());
        reader.Parse(ms, d);
        auto svc = d.finish();
        own += sizeof(Service) + svc->arenaBytes() + 2 * sizeof(void*);
        cache.emplace(svc->key(), svc);
      }
      size_t after = mallinfo2().uordblks;
      std::printf(
          "cache: %d LoadBalancer Services %s JSON, %zu bytes JSON/Service, %zu heap "
          "bytes/Service (%zu as ccm_informer_cached_bytes counts them)\n",
          kNodes, keep_json ? "with" : "without", base.size(), (after - before) / cache.size(),
          own / cache.size());
    }
  }

  // 1b. Watch events as the informer decodes one it has buffered whole: in situ, from memory.
  {
    std::vector<std::string> events;
    for (const auto& json : nodes) {
      events.push_back(R"({"type":"MODIFIED","object":)" + json + "}");
    }
    NodeDecoder d;
    WatchEventHandler<NodeDecoder> handler(d);
    rapidjson::Reader reader;
    std::string scratch;
    size_t decoded = 0;
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    for (int round = 0; round < 3; ++round) {
      for (const auto& ev : events) {
        handler.reset();
        if (detail::parseInMemory<rapidjson::kParseStopWhenDoneFlag>(reader, ev, scratch, handler,
                                                                     &d.skipSignal()) &&
            d.finish()) {
          ++decoded;
        }
      }
    }
    double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    std::printf("watch events: %zu decoded in situ from memory, %.1f us/event\n", decoded,
                (c1 - c0) * 1e6 / decoded);
  }

  // 1c. Heartbeat events.
  benchHeartbeats(nodes, 2);

  testing::FakeApiServer server;
  for (int i = 0; i < kNodes; ++i) {
    server.upsert("/api/v1/nodes", fmt::format("n{}", i), nodes[i]);
  }
  RestConfig config;
  config.server = server.url();
  ClientOptions options;
  options.qps = -1;  // unthrottled
  options.user_agent = "kube-client-bench";
  auto rest = RestClient::create(config, options);
  if (!rest.ok()) {
    std::fprintf(stderr, "%s\n", rest.status().toString().c_str());
    return 1;
  }
  KubeClient client(std::move(rest).value());

  // 2. A streamed list of every node (one response of ~27 MB) decoded as it arrives.
  {
    NodeDecoder d;
    size_t items = 0;
    ListHandler<NodeDecoder> handler(d, [&] {
      auto n = d.finish();
      ++items;
      return true;
    });
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    double w0 = wallSeconds();
    Request req;
    req.path = "/api/v1/nodes?resourceVersion=0";
    auto s = client.rest().stream(req, {});
    rapidjson::Reader reader;
    reader.Parse(**s, handler);
    double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    double w1 = wallSeconds();
    std::printf("list: %zu nodes streamed and decoded, client CPU %.1f us/node, wall %.2f s\n",
                items, (c1 - c0) * 1e6 / items, w1 - w0);
  }

  // 3. PATCH requests, one thread: client CPU per request.
  {
    const int n = 3000;
    double c0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    double w0 = wallSeconds();
    for (int i = 0; i < n; ++i) {
      std::string body = NodePatch()
                             .resourceVersion("1")
                             .setLabel("topology.kubernetes.io/zone", "eu-west-1a")
                             .providerId("aws:///eu-west-1a/i-0")
                             .taints({})
                             .build();
      auto r = client.patch(nodePath(fmt::format("n{}", i % kNodes)), PatchType::Strategic,
                            std::move(body));
      if (!r.ok()) {
        std::fprintf(stderr, "patch failed: %s\n", r.status().toString().c_str());
        return 1;
      }
    }
    double c1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    double w1 = wallSeconds();
    std::printf(
        "patch: %d sequential requests, client CPU %.1f us/request, %.0f requests/s "
        "(fake server in the same process)\n",
        n, (c1 - c0) * 1e6 / n, n / (w1 - w0));
  }

  // 4. Several threads sharing the client.
  {
    const int threads = 8;
    const int per_thread = 1000;
    std::atomic<int> failures{0};
    double p0 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    double w0 = wallSeconds();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          auto r =
              client.patch(nodeStatusPath(fmt::format("n{}", (t * per_thread + i) % kNodes)),
                           PatchType::Strategic,
                           nodeAddressesPatch({{"InternalIP", "10.0.0.1"}, {"Hostname", "h"}}));
          if (!r.ok())
            ++failures;
        }
      });
    }
    for (auto& t : ts)
      t.join();
    double p1 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    double w1 = wallSeconds();
    std::printf(
        "patch: %d threads x %d requests, %.0f requests/s, process CPU (client+fake "
        "server) %.1f us/request, %d failures\n",
        threads, per_thread, threads * per_thread / (w1 - w0),
        (p1 - p0) * 1e6 / (threads * per_thread), failures.load());
  }
  return 0;
}
