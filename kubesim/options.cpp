// kubesim command-line parsing and --help text.
#include "kubesim/options.hpp"

#include <map>
#include <set>
#include <sstream>

#include "kubesim/served_surface.hpp"

namespace ccm::kubesim {
namespace {

std::optional<std::chrono::milliseconds> parseDuration(const std::string& s) {
  if (s.empty()) {
    return std::nullopt;
  }
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return std::nullopt;
  }
  double v;
  try {
    v = std::stod(s.substr(0, i));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = s.substr(i);
  double ms;
  if (unit == "ms") {
    ms = v;
  } else if (unit == "s" || unit.empty()) {
    ms = v * 1000;
  } else if (unit == "m") {
    ms = v * 60000;
  } else if (unit == "h") {
    ms = v * 3600000;
  } else {
    return std::nullopt;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (!part.empty()) {
      out.push_back(part);
    }
  }
  return out;
}

}  // namespace

std::string usage() {
  return R"(kubesim - a Kubernetes API server SIMULATOR for tests and demos.

kubesim is test and demo infrastructure of the ccm project, NOT a product API server: it keeps
everything in memory (optionally in a state file), has no admission, no scheduler and no
garbage collector beyond what a cloud controller manager needs, and it may misbehave on
purpose (fault injection). It speaks the real Kubernetes API over HTTPS so that kubectl, the
Python client and ccm's own client work against it unchanged.

Usage: kubesim [flags]

Serving:
  --bind-address=ADDR          address to listen on (default 127.0.0.1)
  --port=N                     port; 0 picks a free one (default 0)
  --threads=N                  io threads (default 2)
  --ready-file=PATH            write {"port","url","kubeconfig",...} here once serving
  --state-file=PATH            load state from PATH at start (if it exists), save it at exit
  --server-version=vX.Y.Z      Kubernetes version to emulate, v1.26.0 to v1.34.x: /version and
                               the served API (default v1.32.0)

Credentials (a CA, server and admin certificates are generated unless given):
  --cert-dir=DIR               keep/reuse certificates, admin token and SA signing secret
                               here (default: a new temporary directory)
  --tls-cert-file, --tls-key-file   serve this certificate instead
  --client-ca-file=PATH        also trust client certificates signed by this CA
  --token-auth-file=PATH       static tokens, CSV: token,user,uid,"group1,group2"
  --kubeconfig-out=PATH        write an admin kubeconfig (bearer token, system:masters)
  --cert-kubeconfig-out=PATH   write an admin kubeconfig (client certificate)
  --sa-token=NS/NAME=PATH      create service account NS/NAME if needed and write a token for
                               it to PATH (repeatable)
  --sa-token-ttl=DURATION      lifetime of --sa-token tokens (default 24h)
  --token-expiry-leeway=DURATION  how long past its expiry a service-account token is still
                               accepted (default 60s, the API server's clock-skew leeway;
                               tests of token rotation may shorten it, never lengthen it)

Authorization:
  --manifests=PATH             load ClusterRoles, ClusterRoleBindings, Roles, RoleBindings,
                               ServiceAccounts and Namespaces from YAML/JSON files (directories
                               are walked; other kinds are ignored). Repeatable. Alias --rbac.
  --record-authz               remember every authorization decision (user, verb, resource,
                               outcome, matching binding/role/rule) for GET /admin/authz

Simulated cluster:
  --nodes=N                    register N nodes like kubelets with --cloud-provider=external
  --node-prefix=PREFIX         node names are PREFIX00001, PREFIX00002, ... (default node-)
  --not-ready=N1,N2            these nodes register NotReady
  --heartbeat-period=DURATION  node Lease renewal period (default 10s)
  --node-status-period=DURATION  node status (conditions) post period (default 60s)
  --provided-node-ip           annotate nodes with alpha.kubernetes.io/provided-node-ip
  --kubelet-version=vX.Y.Z     reported kubelet version (default v1.32.0)
  --service-cluster-ip-range=CIDR[,CIDR]  Service cluster IPs come from this IPv4 or IPv6
                               range (default 10.96.0.0/12; single-stack, so RequireDualStack
                               Services are refused), or from one range of each family
                               (dual-stack: PreferDualStack and RequireDualStack Services get
                               both families)

Watches and history:
  --watch-history=N            watch events kept per resource type (default 5000); older
                               resourceVersions get 410 Expired
  --compaction-interval=DURATION  etcd-style compaction period (default 5m; 0 = never): each
                               run forgets the history up to the resourceVersion of the run
                               before, so older watches, exact lists and continues get 410
  --watch-cache-lag=DURATION   how far resourceVersion=0 reads (the watch cache) trail the
                               latest write (default 10ms; 0 = always fresh)
  --bookmark-interval=DURATION bookmark period for watches that allow them (default 60s)
  --min-request-timeout=DURATION  watches without timeoutSeconds last [T,2T) (default 1800s)
  --no-watch-list              reject sendInitialEvents with 422 instead of serving it
  --event-ttl=DURATION         delete Events not written for this long (default 1h)

Fault injection (also at run time through the admin API):
  --fault=SPEC                 e.g. verb=patch,path=/api/v1/nodes/*,status=503,count=3,
                               retryAfter=2,probability=0.5 ; action=drop ; latency=200ms
                               (repeatable)
  --latency=DURATION           latency added to every API request
  --latency-jitter=DURATION    random extra latency up to this

Logging:
  -v, --v=N                    log verbosity
  --logging-format=text|json
  -h, --help                   this text

Admin API (HTTPS, same port, admin credentials): see kubesim/README.md.
)";
}

StatusOr<CommandLine> parseCommandLine(int argc, char** argv) {
  CommandLine cl;
  auto& o = cl.server;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      cl.help = true;
      continue;
    }
    std::string key;
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      key = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        has_value = true;
      }
    } else if (arg == "-v" || arg.rfind("-v=", 0) == 0) {
      key = "v";
      if (arg.size() > 3) {
        value = arg.substr(3);
        has_value = true;
      }
    } else {
      return Status(Code::InvalidArgument, "unexpected argument " + arg);
    }
    static const std::set<std::string> kBool = {"provided-node-ip", "no-watch-list",
                                                "record-authz"};
    if (kBool.count(key)) {
      if (has_value && value != "true" && value != "false") {
        return Status(Code::InvalidArgument, "--" + key + " takes true or false");
      }
      bool b = !has_value || value == "true";
      if (key == "provided-node-ip") {
        o.provided_node_ip = b;
      }
      if (key == "no-watch-list") {
        o.watch_list = !b;
      }
      if (key == "record-authz") {
        o.record_authz = b;
      }
      continue;
    }
    static const std::set<std::string> kValued = {"bind-address",
                                                  "port",
                                                  "threads",
                                                  "ready-file",
                                                  "state-file",
                                                  "server-version",
                                                  "cert-dir",
                                                  "tls-cert-file",
                                                  "tls-key-file",
                                                  "client-ca-file",
                                                  "token-auth-file",
                                                  "kubeconfig-out",
                                                  "kubeconfig",
                                                  "cert-kubeconfig-out",
                                                  "sa-token",
                                                  "sa-token-ttl",
                                                  "token-expiry-leeway",
                                                  "manifests",
                                                  "rbac",
                                                  "nodes",
                                                  "node-prefix",
                                                  "not-ready",
                                                  "heartbeat-period",
                                                  "node-status-period",
                                                  "kubelet-version",
                                                  "service-cluster-ip-range",
                                                  "watch-history",
                                                  "compaction-interval",
                                                  "watch-cache-lag",
                                                  "bookmark-interval",
                                                  "min-request-timeout",
                                                  "event-ttl",
                                                  "fault",
                                                  "latency",
                                                  "latency-jitter",
                                                  "v",
                                                  "logging-format"};
    if (!kValued.count(key)) {
      return Status(Code::InvalidArgument, "unknown flag --" + key + " (see --help)");
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        return Status(Code::InvalidArgument, "--" + key + " needs a value");
      }
      value = argv[++i];
    }
    // "--key: <what> <value>"
    auto badValue = [&](std::string_view what) {
      std::string message = "--" + key;
      message.append(": ").append(what).append(" ").append(value);
      return Status(Code::InvalidArgument, std::move(message));
    };
    auto number = [&](int64_t lo, int64_t hi) -> StatusOr<int64_t> {
      try {
        size_t pos = 0;
        int64_t v = std::stoll(value, &pos);
        if (pos != value.size() || v < lo || v > hi) {
          throw std::out_of_range("range");
        }
        return v;
      } catch (const std::exception&) {
        return badValue("bad number");
      }
    };
    auto duration = [&]() -> StatusOr<std::chrono::milliseconds> {
      auto d = parseDuration(value);
      if (!d) {
        return badValue("bad duration");
      }
      return *d;
    };
#define KUBESIM_NUMBER(field, lo, hi)                  \
  do {                                                 \
    auto n = number(lo, hi);                           \
    if (!n.ok()) {                                     \
      return n.status();                               \
    }                                                  \
    (field) = static_cast<decltype(field)>(n.value()); \
  } while (false)
#define KUBESIM_DURATION(field)                                       \
  do {                                                                \
    auto d = duration();                                              \
    if (!d.ok()) {                                                    \
      return d.status();                                              \
    }                                                                 \
    (field) = std::chrono::duration_cast<decltype(field)>(d.value()); \
  } while (false)
    if (key == "bind-address") {
      o.bind_address = value;
    } else if (key == "port") {
      KUBESIM_NUMBER(o.port, 0, 65535);
    } else if (key == "threads") {
      KUBESIM_NUMBER(o.threads, 1, 64);
    } else if (key == "ready-file") {
      o.ready_file = value;
    } else if (key == "state-file") {
      o.state_file = value;
    } else if (key == "server-version") {
      if (auto surface = ServedSurface::forVersion(value); !surface.ok()) {
        return surface.status();
      }
      o.server_version = value;
    } else if (key == "cert-dir") {
      o.cert_dir = value;
    } else if (key == "tls-cert-file") {
      o.tls_cert_file = value;
    } else if (key == "tls-key-file") {
      o.tls_key_file = value;
    } else if (key == "client-ca-file") {
      o.client_ca_file = value;
    } else if (key == "token-auth-file") {
      o.token_auth_file = value;
    } else if (key == "kubeconfig-out" || key == "kubeconfig") {
      o.kubeconfig_out = value;
    } else if (key == "cert-kubeconfig-out") {
      o.cert_kubeconfig_out = value;
    } else if (key == "sa-token") {
      size_t eq = value.find('=');
      if (eq == std::string::npos) {
        return Status(Code::InvalidArgument, "--sa-token wants NS/NAME=PATH");
      }
      o.sa_tokens.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (key == "sa-token-ttl") {
      KUBESIM_DURATION(o.sa_token_ttl);
    } else if (key == "token-expiry-leeway") {
      KUBESIM_DURATION(o.token_expiry_leeway);
      if (o.token_expiry_leeway > ServiceAccountTokens::kLeeway) {
        return Status(Code::InvalidArgument,
                      "--token-expiry-leeway may not exceed the API server's 60s");
      }
    } else if (key == "manifests" || key == "rbac") {
      o.manifests.push_back(value);
    } else if (key == "nodes") {
      KUBESIM_NUMBER(o.nodes, 0, 100000);
    } else if (key == "node-prefix") {
      o.node_prefix = value;
    } else if (key == "not-ready") {
      for (auto& n : splitComma(value)) {
        o.not_ready.push_back(n);
      }
    } else if (key == "heartbeat-period") {
      KUBESIM_DURATION(o.heartbeat_period);
    } else if (key == "node-status-period") {
      KUBESIM_DURATION(o.node_status_period);
    } else if (key == "service-cluster-ip-range") {
      o.service_cluster_ip_range = value;
    } else if (key == "kubelet-version") {
      o.kubelet_version = value;
    } else if (key == "watch-history") {
      KUBESIM_NUMBER(o.watch_history, 1, 10000000);
    } else if (key == "compaction-interval") {
      KUBESIM_DURATION(o.compaction_interval);
    } else if (key == "watch-cache-lag") {
      KUBESIM_DURATION(o.watch_cache_lag);
    } else if (key == "bookmark-interval") {
      KUBESIM_DURATION(o.bookmark_interval);
    } else if (key == "min-request-timeout") {
      KUBESIM_DURATION(o.min_request_timeout);
    } else if (key == "event-ttl") {
      KUBESIM_DURATION(o.event_ttl);
    } else if (key == "fault") {
      std::string err;
      auto rule = FaultRule::fromText(value, &err);
      if (!rule) {
        return Status(Code::InvalidArgument, "--fault: " + err);
      }
      o.faults.push_back(*rule);
    } else if (key == "latency") {
      KUBESIM_DURATION(o.latency);
    } else if (key == "latency-jitter") {
      KUBESIM_DURATION(o.latency_jitter);
    } else if (key == "v") {
      KUBESIM_NUMBER(cl.log.verbosity, 0, 10);
    } else if (key == "logging-format") {
      if (value == "json") {
        cl.log.format = ccm::log::Format::Json;
      } else if (value == "text") {
        cl.log.format = ccm::log::Format::Text;
      } else {
        return Status(Code::InvalidArgument, "--logging-format is text or json");
      }
    } else {
      return Status(Code::InvalidArgument, "unknown flag --" + key + " (see --help)");
    }
#undef KUBESIM_NUMBER
#undef KUBESIM_DURATION
  }
  if (o.heartbeat_period.count() <= 0 || o.node_status_period.count() <= 0) {
    return Status(Code::InvalidArgument, "periods must be positive");
  }
  if (o.min_request_timeout.count() <= 0) {
    return Status(Code::InvalidArgument, "--min-request-timeout must be positive");
  }
  return cl;
}

}  // namespace ccm::kubesim
