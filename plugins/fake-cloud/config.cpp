// Parsing of the fake-cloud configuration (YAML or JSON) with errors that name the key and
// line. Unknown keys are errors: a typo in a test's cloud file must not pass silently.
#include "plugins/fake-cloud/config.hpp"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <set>

namespace ccm::fakecloud {
namespace {

// Control characters (a key may hold any) written as \xNN: an error message stays one
// readable line, and a NUL does not cut it short.
std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

[[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& what) {
  std::string where;
  if (node.IsDefined() && node.Mark().line >= 0) {
    where = " (line " + std::to_string(node.Mark().line + 1) + ")";
  }
  throw ConfigError(printable(path + ": " + what + where));
}

std::string scalar(const YAML::Node& node, const std::string& path) {
  if (!node.IsDefined()) {
    fail(node, path, "is required");
  }
  if (!node.IsScalar()) {
    fail(node, path, "must be a string");
  }
  return node.Scalar();
}

bool boolean(const YAML::Node& node, const std::string& path) {
  std::string v = scalar(node, path);
  if (v == "true" || v == "True" || v == "yes") {
    return true;
  }
  if (v == "false" || v == "False" || v == "no") {
    return false;
  }
  fail(node, path, "must be true or false, not \"" + v + "\"");
}

double number(const YAML::Node& node, const std::string& path) {
  std::string v = scalar(node, path);
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size()) {
      return d;
    }
  } catch (const std::exception&) {
  }
  fail(node, path, "must be a number, not \"" + v + "\"");
}

uint32_t unsignedInt(const YAML::Node& node, const std::string& path) {
  double d = number(node, path);
  if (d < 0 || d > 1e9 || d != static_cast<double>(static_cast<uint32_t>(d))) {
    fail(node, path, "must be a non-negative integer");
  }
  return static_cast<uint32_t>(d);
}

constexpr double kMaxDurationMs = 24.0 * 3600 * 1000;

// "20ms", "1.5s", "2m", "300us", or a bare number of milliseconds; at most a day.
std::chrono::milliseconds duration(const YAML::Node& node, const std::string& path) {
  std::string v = scalar(node, path);
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) {
    ++i;
  }
  std::string num = v.substr(0, i);
  std::string unit = v.substr(i);
  double n = 0;
  try {
    n = num.empty() ? -1 : std::stod(num);
  } catch (const std::exception&) {
    n = -1;
  }
  double ms = -1;
  if (n >= 0) {
    if (unit.empty() || unit == "ms") {
      ms = n;
    } else if (unit == "s") {
      ms = n * 1000;
    } else if (unit == "m") {
      ms = n * 60000;
    } else if (unit == "us") {
      ms = n / 1000;
    }
  }
  if (ms < 0) {
    fail(node, path, "must be a duration like 20ms, 1.5s or 2m, not \"" + v + "\"");
  }
  // A day is far beyond any simulated latency or hang; the bound also keeps the conversion
  // defined (a fuzzer's 2e98s overflowed it).
  if (ms > kMaxDurationMs) {
    fail(node, path, "must be a duration of at most 1440m (a day), not \"" + v + "\"");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

ccm_status statusCode(const YAML::Node& node, const std::string& path) {
  static const std::map<std::string, ccm_status, std::less<>> kCodes = {
      {"CANCELLED", CCM_STATUS_CANCELLED},
      {"INVALID_ARGUMENT", CCM_STATUS_INVALID_ARGUMENT},
      {"DEADLINE_EXCEEDED", CCM_STATUS_DEADLINE_EXCEEDED},
      {"NOT_FOUND", CCM_STATUS_NOT_FOUND},
      {"ALREADY_EXISTS", CCM_STATUS_ALREADY_EXISTS},
      {"PERMISSION_DENIED", CCM_STATUS_PERMISSION_DENIED},
      {"RESOURCE_EXHAUSTED", CCM_STATUS_RESOURCE_EXHAUSTED},
      {"FAILED_PRECONDITION", CCM_STATUS_FAILED_PRECONDITION},
      {"ABORTED", CCM_STATUS_ABORTED},
      {"UNIMPLEMENTED", CCM_STATUS_UNIMPLEMENTED},
      {"INTERNAL", CCM_STATUS_INTERNAL},
      {"UNAVAILABLE", CCM_STATUS_UNAVAILABLE},
      {"UNAUTHENTICATED", CCM_STATUS_UNAUTHENTICATED},
      {"IMPLEMENTED_ELSEWHERE", CCM_STATUS_IMPLEMENTED_ELSEWHERE},
  };
  std::string v = scalar(node, path);
  auto it = kCodes.find(v);
  if (it != kCodes.end()) {
    return it->second;
  }
  // A raw number is allowed too: tests use it to send codes outside the closed set.
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && p == v.data() + v.size()) {
    return n;
  }
  std::string names;
  for (const auto& [k, _] : kCodes) {
    names += (names.empty() ? "" : ", ") + k;
  }
  fail(node, path, "unknown status code \"" + v + "\" (one of " + names + ", or a number)");
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void checkKeys(const YAML::Node& node, const std::string& path,
               const std::set<std::string, std::less<>>& allowed) {
  if (!node.IsMap()) {
    fail(node, path.empty() ? "config" : path, "must be a mapping");
  }
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    if (allowed.count(key) == 0) {
      std::string list;
      for (const auto& a : allowed) {
        if (!list.empty()) {
          list += ", ";
        }
        list += a;
      }
      fail(kv.first, join(path, key), "unknown key (known keys: " + list + ")");
    }
  }
}

Labels labelsOf(const YAML::Node& node, const std::string& path) {
  Labels out;
  if (!node.IsMap()) {
    fail(node, path, "must be a mapping of label keys to values");
  }
  for (const auto& kv : node) {
    out.emplace_back(kv.first.Scalar(), scalar(kv.second, path + "." + kv.first.Scalar()));
  }
  return out;
}

std::vector<NodeAddress> addressesOf(const YAML::Node& node, const std::string& path) {
  static const std::set<std::string, std::less<>> kTypes = {"Hostname", "InternalIP", "ExternalIP",
                                                            "InternalDNS", "ExternalDNS"};
  std::vector<NodeAddress> out;
  if (!node.IsSequence()) {
    fail(node, path, "must be a list of {type, address}");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    std::string p = path + "[" + std::to_string(i) + "]";
    checkKeys(node[i], p, {"type", "address"});
    std::string type = scalar(node[i]["type"], p + ".type");
    if (kTypes.count(type) == 0) {
      fail(node[i]["type"], p + ".type",
           "\"" + type +
               "\" is not one of Hostname, InternalIP, ExternalIP, InternalDNS, "
               "ExternalDNS");
    }
    out.push_back({type, scalar(node[i]["address"], p + ".address")});
  }
  return out;
}

std::vector<std::string> stringsOf(const YAML::Node& node, const std::string& path) {
  std::vector<std::string> out;
  if (!node.IsSequence()) {
    fail(node, path, "must be a list of strings");
  }
  for (size_t i = 0; i < node.size(); ++i) {
    out.push_back(scalar(node[i], path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

InstanceState stateOf(const YAML::Node& node, const std::string& path) {
  std::string v = scalar(node, path);
  if (v == "running") {
    return InstanceState::Running;
  }
  if (v == "shutdown") {
    return InstanceState::Shutdown;
  }
  if (v == "absent") {
    return InstanceState::Absent;
  }
  if (v == "unknown") {
    return InstanceState::Unknown;
  }
  fail(node, path, "\"" + v + "\" is not one of running, shutdown, absent, unknown");
}

void checkOperation(const YAML::Node& node, const std::string& path, const std::string& op) {
  if (op == "*") {
    return;
  }
  for (auto known : knownOperations()) {
    if (known == op) {
      return;
    }
  }
  std::string list;
  for (auto known : knownOperations()) {
    list += (list.empty() ? "" : ", ") + std::string(known);
  }
  fail(node, path, "unknown operation \"" + op + "\" (one of *, " + list + ")");
}

const std::set<std::string, std::less<>> kWorldKeys = {"region",
                                                       "providerIdPrefix",
                                                       "instances",
                                                       "autoInstances",
                                                       "unlistedInstances",
                                                       "latency",
                                                       "latencyIgnoresDeadline",
                                                       "faults",
                                                       "throttle",
                                                       "lbAnnotations",
                                                       "lbRemovedAnnotations"};

void applyWorldKey(World& w, const std::string& key, const YAML::Node& v, const std::string& path) {
  std::string p = join(path, key);
  if (key == "region") {
    w.region = scalar(v, p);
  } else if (key == "providerIdPrefix") {
    w.provider_id_prefix = scalar(v, p);
    if (!w.provider_id_prefix.starts_with(kProviderIdScheme)) {
      fail(v, p,
           "\"" + w.provider_id_prefix + "\" does not start with " + kProviderIdScheme +
               " (the providerID prefix fake-cloud declares to the host)");
    }
  } else if (key == "lbAnnotations") {
    w.lb_annotations = labelsOf(v, p);
  } else if (key == "lbRemovedAnnotations") {
    w.lb_removed_annotations = stringsOf(v, p);
  } else if (key == "unlistedInstances") {
    std::string s = scalar(v, p);
    if (s != "notFound" && s != "unknown") {
      fail(v, p, "must be notFound or unknown, not \"" + s + "\"");
    }
    w.unknown_when_unlisted = s == "unknown";
  } else if (key == "latencyIgnoresDeadline") {
    w.latency_ignores_deadline = boolean(v, p);
  } else if (key == "instances") {
    if (!v.IsSequence()) {
      fail(v, p, "must be a list of instances");
    }
    w.instances.clear();
    std::set<std::string> names;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string ip = p + "[" + std::to_string(i) + "]";
      const YAML::Node& n = v[i];
      checkKeys(n, ip,
                {"name", "providerID", "type", "zone", "region", "addresses", "labels", "state"});
      InstanceSpec spec;
      if (!n["name"]) {
        fail(n, ip + ".name", "is required");
      }
      spec.name = scalar(n["name"], ip + ".name");
      if (!names.insert(spec.name).second) {
        fail(n["name"], ip + ".name", "duplicate instance \"" + spec.name + "\"");
      }
      if (n["providerID"]) {
        spec.provider_id = scalar(n["providerID"], ip + ".providerID");
        if (!spec.provider_id.starts_with(kProviderIdScheme)) {
          fail(n["providerID"], ip + ".providerID",
               "\"" + spec.provider_id + "\" does not start with " + kProviderIdScheme +
                   " (the providerID prefix fake-cloud declares to the host)");
        }
      }
      if (n["type"]) {
        spec.type = scalar(n["type"], ip + ".type");
      }
      if (n["zone"]) {
        spec.zone = scalar(n["zone"], ip + ".zone");
      }
      if (n["region"]) {
        spec.region = scalar(n["region"], ip + ".region");
      }
      if (n["addresses"]) {
        spec.addresses = addressesOf(n["addresses"], ip + ".addresses");
      }
      if (n["labels"]) {
        spec.labels = labelsOf(n["labels"], ip + ".labels");
      }
      if (n["state"]) {
        spec.state = stateOf(n["state"], ip + ".state");
      }
      w.instances.push_back(std::move(spec));
    }
  } else if (key == "autoInstances") {
    checkKeys(v, p,
              {"enabled", "zones", "type", "region", "internalCidr", "externalCidr",
               "hostnameAddress", "labels"});
    AutoInstances a;
    a.enabled = true;
    if (v["enabled"]) {
      a.enabled = boolean(v["enabled"], p + ".enabled");
    }
    if (v["zones"]) {
      a.zones = stringsOf(v["zones"], p + ".zones");
    }
    if (v["type"]) {
      a.type = scalar(v["type"], p + ".type");
    }
    if (v["region"]) {
      a.region = scalar(v["region"], p + ".region");
    }
    if (v["internalCidr"]) {
      a.internal_cidr = scalar(v["internalCidr"], p + ".internalCidr");
    }
    if (v["externalCidr"]) {
      a.external_cidr = scalar(v["externalCidr"], p + ".externalCidr");
    }
    if (v["hostnameAddress"]) {
      a.hostname_address = boolean(v["hostnameAddress"], p + ".hostnameAddress");
    }
    if (v["labels"]) {
      a.labels = labelsOf(v["labels"], p + ".labels");
    }
    w.auto_instances = std::move(a);
  } else if (key == "latency") {
    if (v.IsScalar()) {
      w.latency.clear();
      w.latency["*"] = duration(v, p);
      return;
    }
    if (!v.IsMap()) {
      fail(v, p, "must be a duration or a mapping of operation to duration");
    }
    w.latency.clear();
    for (const auto& kv : v) {
      std::string op = kv.first.Scalar();
      std::string op_path = join(p, op);
      checkOperation(kv.first, op_path, op);
      w.latency[op] = duration(kv.second, op_path);
    }
  } else if (key == "faults") {
    if (!v.IsSequence()) {
      fail(v, p, "must be a list of faults");
    }
    w.faults.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string fp = p + "[" + std::to_string(i) + "]";
      const YAML::Node& n = v[i];
      checkKeys(n, fp, {"op", "code", "message", "probability", "count", "nodes", "retryAfter"});
      Fault f;
      if (!n["op"]) {
        fail(n, fp + ".op", "is required");
      }
      f.op = scalar(n["op"], fp + ".op");
      checkOperation(n["op"], fp + ".op", f.op);
      if (n["code"]) {
        f.code = statusCode(n["code"], fp + ".code");
      }
      if (n["message"]) {
        f.message = scalar(n["message"], fp + ".message");
      }
      if (n["probability"]) {
        f.probability = number(n["probability"], fp + ".probability");
        if (f.probability < 0 || f.probability > 1) {
          fail(n["probability"], fp + ".probability", "must be between 0 and 1");
        }
      }
      if (n["count"]) {
        f.count = unsignedInt(n["count"], fp + ".count");
      }
      if (n["nodes"]) {
        f.nodes = stringsOf(n["nodes"], fp + ".nodes");
      }
      if (n["retryAfter"]) {
        f.retry_after = duration(n["retryAfter"], fp + ".retryAfter");
      }
      w.faults.push_back(std::move(f));
    }
  } else if (key == "throttle") {
    checkKeys(v, p, {"qps", "burst", "retryAfter"});
    Throttle t;
    if (v["qps"]) {
      t.qps = number(v["qps"], p + ".qps");
    }
    if (v["burst"]) {
      t.burst = number(v["burst"], p + ".burst");
    }
    if (v["retryAfter"]) {
      t.retry_after = duration(v["retryAfter"], p + ".retryAfter");
    }
    if (t.qps < 0 || t.burst < 1) {
      fail(v, p, "qps must be >= 0 and burst >= 1");
    }
    w.throttle = t;
  }
}

YAML::Node load(std::string_view text, std::string_view source) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(printable(std::string(source) + ": not valid YAML or JSON: line " +
                                std::to_string(e.mark.line + 1) + ": " + e.msg));
  }
}

}  // namespace

const std::vector<std::string_view>& knownOperations() {
  static const std::vector<std::string_view> kOps = {"exists",
                                                     "shutdown",
                                                     "metadata",
                                                     "batch",
                                                     "getLoadBalancer",
                                                     "loadBalancerName",
                                                     "ensureLoadBalancer",
                                                     "updateLoadBalancer",
                                                     "deleteLoadBalancer",
                                                     "listRoutes",
                                                     "createRoute",
                                                     "deleteRoute"};
  return kOps;
}

namespace {

World parseWorldUnguarded(std::string_view text, const World& base, std::string_view source) {
  World w = base;
  YAML::Node root = load(text, source);
  if (!root || root.IsNull()) {
    return w;
  }
  std::set<std::string, std::less<>> allowed = kWorldKeys;
  // A cloud file may be the provider config itself (cloudFile pointing at its own file):
  // the provider-only keys are accepted and ignored here.
  for (const char* k : {"cloudFile", "stateFile", "loadBalancer", "capabilities", "maxConcurrency",
                        "maxBatchSize"}) {
    allowed.insert(k);
  }
  checkKeys(root, "", allowed);
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    if (kWorldKeys.count(key) != 0) {
      applyWorldKey(w, key, kv.second, "");
    }
  }
  return w;
}

Config parseConfigUnguarded(std::string_view text) {
  Config c;
  YAML::Node root = load(text, "fake-cloud config");
  if (!root || root.IsNull()) {
    return c;
  }
  std::set<std::string, std::less<>> allowed = kWorldKeys;
  for (const char* k : {"cloudFile", "stateFile", "loadBalancer", "capabilities", "maxConcurrency",
                        "maxBatchSize"}) {
    allowed.insert(k);
  }
  checkKeys(root, "", allowed);
  for (const auto& kv : root) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (kWorldKeys.count(key) != 0) {
      applyWorldKey(c.world, key, v, "");
    } else if (key == "cloudFile") {
      c.cloud_file = scalar(v, key);
    } else if (key == "stateFile") {
      c.state_file = scalar(v, key);
    } else if (key == "maxConcurrency") {
      c.max_concurrency = unsignedInt(v, key);
    } else if (key == "maxBatchSize") {
      c.max_batch_size = unsignedInt(v, key);
    } else if (key == "loadBalancer") {
      checkKeys(v, key, {"ipPool", "hostnameSuffix"});
      if (v["ipPool"]) {
        c.lb_ip_pool = scalar(v["ipPool"], "loadBalancer.ipPool");
      }
      if (v["hostnameSuffix"]) {
        c.lb_hostname_suffix = scalar(v["hostnameSuffix"], "loadBalancer.hostnameSuffix");
      }
    } else if (key == "capabilities") {
      checkKeys(v, key, {"instances", "instancesBatch", "loadBalancer", "routes"});
      if (v["instances"]) {
        c.capabilities.instances = boolean(v["instances"], "capabilities.instances");
      }
      if (v["instancesBatch"]) {
        c.capabilities.batch = boolean(v["instancesBatch"], "capabilities.instancesBatch");
      }
      if (v["loadBalancer"]) {
        c.capabilities.load_balancer = boolean(v["loadBalancer"], "capabilities.loadBalancer");
      }
      if (v["routes"]) {
        c.capabilities.routes = boolean(v["routes"], "capabilities.routes");
      }
    }
  }
  return c;
}

}  // namespace

// The parsers' one promise: bad input is a ConfigError. yaml-cpp throws its own exceptions
// for some malformed trees (a missing key read from a const node is an "invalid node"; a
// fuzzer found `addresses: [{type: InternalIP}]`): those become ConfigErrors too.
World parseWorld(std::string_view text, const World& base, std::string_view source) {
  try {
    return parseWorldUnguarded(text, base, source);
  } catch (const YAML::Exception& e) {
    throw ConfigError(printable(std::string(source) + ": " + e.what()));
  }
}

Config parseConfig(std::string_view text) {
  try {
    return parseConfigUnguarded(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(printable(std::string("fake-cloud config: ") + e.what()));
  }
}

}  // namespace ccm::fakecloud
