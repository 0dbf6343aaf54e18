// Loading kubeconfig files and the in-cluster configuration.
#include "host/kube/config/kube_config.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/utsname.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/log/log.hpp"
#include "host/runtime/base64.hpp"

namespace ccm::kube {
namespace {

namespace fs = std::filesystem;

bool readFile(const std::string& path, std::string* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string resolvePath(const std::string& dir, const std::string& p) {
  if (p.empty() || p.front() == '/') {
    return p;
  }
  return (fs::path(dir) / p).lexically_normal().string();
}

// Where a value lives in the kubeconfig, for messages.
struct Where {
  std::string file;
  std::string section;  // e.g. users[0] "admin"
  Status error(std::string_view field, std::string_view what) const {
    if (section.empty()) {
      return Status(Code::InvalidArgument, fmt::format("kubeconfig {}: {}: {}", file, field, what));
    }
    return Status(Code::InvalidArgument,
                  fmt::format("kubeconfig {}: {}: {}: {}", file, section, field, what));
  }
};

Status scalar(const YAML::Node& map, const char* key, const Where& where, std::string* out) {
  YAML::Node v = map[key];
  if (!v || v.IsNull()) {
    return okStatus();
  }
  if (!v.IsScalar()) {
    return where.error(key, "must be a string");
  }
  *out = v.Scalar();
  return okStatus();
}

Status boolean(const YAML::Node& map, const char* key, const Where& where, bool* out) {
  YAML::Node v = map[key];
  if (!v || v.IsNull()) {
    return okStatus();
  }
  try {
    *out = v.as<bool>();
  } catch (const YAML::Exception&) {
    return where.error(key, "must be true or false");
  }
  return okStatus();
}

// Reads "<name>-data" (base64) or "<name>" (a path relative to the kubeconfig).
Status pemField(const YAML::Node& map, const std::string& name, const Where& where,
                const std::string& dir, std::string* out) {
  std::string data, path;
  CCM_RETURN_IF_ERROR(scalar(map, (name + "-data").c_str(), where, &data));
  CCM_RETURN_IF_ERROR(scalar(map, name.c_str(), where, &path));
  if (!data.empty()) {
    auto decoded = base64Decode(data);
    if (!decoded) {
      return where.error(name + "-data", "not valid base64");
    }
    *out = std::move(*decoded);
    return okStatus();
  }
  if (!path.empty()) {
    std::string full = resolvePath(dir, path);
    std::string err;
    if (!readFile(full, out, &err)) {
      return where.error(name, fmt::format("cannot read {}: {}", full, err));
    }
    if (out->empty()) {
      return where.error(name, fmt::format("{} is empty", full));
    }
  }
  return okStatus();
}

// Finds the entry named `name` in a list of {name, <inner>}; returns its index or -1.
int findNamed(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) {
    return -1;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& e = list[i];
    if (e.IsMap() && e["name"] && e["name"].IsScalar() && e["name"].Scalar() == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::string trimSlash(std::string s) {
  while (!s.empty() && s.back() == '/') {
    s.pop_back();
  }
  return s;
}

Status checkServer(const std::string& server, const Where& where, const char* field) {
  if (server.rfind("https://", 0) != 0 && server.rfind("http://", 0) != 0) {
    return where.error(field, fmt::format("\"{}\" is not an http(s) URL", server));
  }
  return okStatus();
}

Status parseExec(const YAML::Node& exec, const Where& where, const std::string& dir,
                 ExecConfig* out) {
  Where w{where.file, where.section + " exec"};
  if (!exec.IsMap()) {
    return where.error("exec", "must be a mapping");
  }
  CCM_RETURN_IF_ERROR(scalar(exec, "command", w, &out->command));
  if (out->command.empty()) {
    return w.error("command", "is required");
  }
  if (out->command.find('/') != std::string::npos) {
    out->command = resolvePath(dir, out->command);
  }
  CCM_RETURN_IF_ERROR(scalar(exec, "apiVersion", w, &out->api_version));
  if (out->api_version != "client.authentication.k8s.io/v1" &&
      out->api_version != "client.authentication.k8s.io/v1beta1") {
    return w.error("apiVersion", fmt::format("\"{}\" is not supported (use "
                                             "client.authentication.k8s.io/v1 or v1beta1)",
                                             out->api_version));
  }
  CCM_RETURN_IF_ERROR(scalar(exec, "interactiveMode", w, &out->interactive_mode));
  if (out->api_version == "client.authentication.k8s.io/v1" && out->interactive_mode.empty()) {
    return w.error("interactiveMode", "is required for client.authentication.k8s.io/v1");
  }
  if (out->interactive_mode == "Always") {
    return w.error("interactiveMode",
                   "Always needs a terminal, which a controller manager never has");
  }
  if (!out->interactive_mode.empty() && out->interactive_mode != "Never" &&
      out->interactive_mode != "IfAvailable") {
    return w.error("interactiveMode", fmt::format("unknown value \"{}\"", out->interactive_mode));
  }
  CCM_RETURN_IF_ERROR(boolean(exec, "provideClusterInfo", w, &out->provide_cluster_info));
  CCM_RETURN_IF_ERROR(scalar(exec, "installHint", w, &out->install_hint));
  YAML::Node args = exec["args"];
  if (args && !args.IsNull()) {
    if (!args.IsSequence()) {
      return w.error("args", "must be a list");
    }
    for (const auto& a : args) {
      out->args.push_back(a.Scalar());
    }
  }
  YAML::Node env = exec["env"];
  if (env && !env.IsNull()) {
    if (!env.IsSequence()) {
      return w.error("env", "must be a list");
    }
    for (size_t i = 0; i < env.size(); ++i) {
      std::string name, value;
      Where ew{w.file, fmt::format("{} env[{}]", w.section, i)};
      CCM_RETURN_IF_ERROR(scalar(env[i], "name", ew, &name));
      CCM_RETURN_IF_ERROR(scalar(env[i], "value", ew, &value));
      if (name.empty()) {
        return ew.error("name", "is required");
      }
      out->env.emplace_back(name, value);
    }
  }
  return okStatus();
}

std::string opensslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "no PEM data found";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// Parses the TLS material now, so a broken file fails at start-up with its field named.
Status checkTlsMaterial(const RestConfig& c, const Where& cluster, const Where& user) {
  if (!c.ca_pem.empty()) {
    BIO* bio = BIO_new_mem_buf(c.ca_pem.data(), static_cast<int>(c.ca_pem.size()));
    X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (x == nullptr) {
      return cluster.error("certificate-authority",
                           fmt::format("not a PEM certificate bundle ({})", opensslError()));
    }
    X509_free(x);
  }
  if (c.client_cert_pem.empty()) {
    return okStatus();
  }
  BIO* cbio = BIO_new_mem_buf(c.client_cert_pem.data(), static_cast<int>(c.client_cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cbio, nullptr, nullptr, nullptr);
  BIO_free(cbio);
  if (cert == nullptr) {
    return user.error("client-certificate",
                      fmt::format("not a PEM certificate ({})", opensslError()));
  }
  BIO* kbio = BIO_new_mem_buf(c.client_key_pem.data(), static_cast<int>(c.client_key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(kbio, nullptr, nullptr, nullptr);
  BIO_free(kbio);
  if (key == nullptr) {
    X509_free(cert);
    return user.error("client-key", fmt::format("not a PEM private key ({})", opensslError()));
  }
  bool match = X509_check_private_key(cert, key) == 1;
  ERR_clear_error();
  EVP_PKEY_free(key);
  X509_free(cert);
  if (!match) {
    return user.error("client-key", "does not match client-certificate");
  }
  return okStatus();
}

}  // namespace

double effectiveQps(double qps) {
  return qps == 0 ? 5.0 : qps;
}

int effectiveBurst(double qps, int burst) {
  return qps == 0 && burst == 0 ? 10 : burst;
}

std::string defaultUserAgent(std::string_view binary, std::string_view version,
                             std::string_view commit) {
  std::string v(version);
  if (auto dash = v.find_first_of("-+"); dash != std::string::npos) {
    v.resize(dash);
  }
  if (!v.empty() && v.front() != 'v') {
    v.insert(v.begin(), 'v');
  }
  std::string c(commit.substr(0, 7));
  struct utsname u {};
  std::string os = "linux";
  std::string arch = "unknown";
  if (uname(&u) == 0) {
    arch = u.machine;
    if (arch == "x86_64") {
      arch = "amd64";
    }
    if (arch == "aarch64") {
      arch = "arm64";
    }
  }
  return fmt::format("{}/{} ({}/{}) kubernetes/{}", binary.empty() ? "unknown" : binary,
                     v.empty() ? "unknown" : v, os, arch, c.empty() ? "unknown" : c);
}

Status parseKubeconfig(const std::string& text, const std::string& path,
                       const std::string& context_override, RestConfig* out) {
  Where top{path, ""};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status(Code::InvalidArgument,
                  fmt::format("kubeconfig {}: malformed YAML at line {}, column {}: {}", path,
                              e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) {
    return Status(Code::InvalidArgument,
                  fmt::format("kubeconfig {}: not a kubeconfig (expected a mapping with "
                              "clusters, users and contexts)",
                              path));
  }
  std::string dir = fs::path(path).parent_path().string();
  try {
    std::string context_name = context_override;
    if (context_name.empty()) {
      CCM_RETURN_IF_ERROR(scalar(root, "current-context", top, &context_name));
      if (context_name.empty()) {
        return top.error("current-context", "not set (and no context was requested)");
      }
    }
    YAML::Node contexts = root["contexts"];
    int ci = findNamed(contexts, context_name);
    if (ci < 0) {
      return top.error(context_override.empty() ? "current-context" : "contexts",
                       fmt::format("context \"{}\" not found", context_name));
    }
    Where cw{path, fmt::format("contexts[{}] \"{}\"", ci, context_name)};
    YAML::Node ctx = contexts[ci]["context"];
    if (!ctx || !ctx.IsMap()) {
      return cw.error("context", "missing");
    }
    std::string cluster_name, user_name, ns;
    CCM_RETURN_IF_ERROR(scalar(ctx, "cluster", cw, &cluster_name));
    CCM_RETURN_IF_ERROR(scalar(ctx, "user", cw, &user_name));
    CCM_RETURN_IF_ERROR(scalar(ctx, "namespace", cw, &ns));
    if (!ns.empty()) {
      out->namespace_ = ns;
    }
    if (cluster_name.empty()) {
      return cw.error("cluster", "is required");
    }

    YAML::Node clusters = root["clusters"];
    int ki = findNamed(clusters, cluster_name);
    if (ki < 0) {
      return cw.error("cluster", fmt::format("cluster \"{}\" not found", cluster_name));
    }
    Where kw{path, fmt::format("clusters[{}] \"{}\"", ki, cluster_name)};
    YAML::Node cluster = clusters[ki]["cluster"];
    if (!cluster || !cluster.IsMap()) {
      return kw.error("cluster", "missing");
    }
    CCM_RETURN_IF_ERROR(scalar(cluster, "server", kw, &out->server));
    if (out->server.empty()) {
      return kw.error("server", "is required");
    }
    CCM_RETURN_IF_ERROR(checkServer(out->server, kw, "server"));
    out->server = trimSlash(out->server);
    CCM_RETURN_IF_ERROR(pemField(cluster, "certificate-authority", kw, dir, &out->ca_pem));
    CCM_RETURN_IF_ERROR(
        scalar(cluster, "certificate-authority-data", kw, &out->cluster_ca_data_b64));
    CCM_RETURN_IF_ERROR(
        boolean(cluster, "insecure-skip-tls-verify", kw, &out->insecure_skip_tls_verify));
    if (out->insecure_skip_tls_verify && !out->ca_pem.empty()) {
      return kw.error("insecure-skip-tls-verify",
                      "specifying a root certificates file with the insecure flag is not allowed");
    }
    CCM_RETURN_IF_ERROR(scalar(cluster, "tls-server-name", kw, &out->tls_server_name));
    CCM_RETURN_IF_ERROR(scalar(cluster, "proxy-url", kw, &out->proxy_url));

    if (user_name.empty()) {
      CCM_RETURN_IF_ERROR(checkTlsMaterial(*out, kw, kw));
    } else {
      YAML::Node users = root["users"];
      int ui = findNamed(users, user_name);
      if (ui < 0) {
        return cw.error("user", fmt::format("user \"{}\" not found", user_name));
      }
      Where uw{path, fmt::format("users[{}] \"{}\"", ui, user_name)};
      YAML::Node user = users[ui]["user"];
      if (user && !user.IsNull()) {
        if (!user.IsMap()) {
          return uw.error("user", "must be a mapping");
        }
        CCM_RETURN_IF_ERROR(pemField(user, "client-certificate", uw, dir, &out->client_cert_pem));
        CCM_RETURN_IF_ERROR(pemField(user, "client-key", uw, dir, &out->client_key_pem));
        if (out->client_cert_pem.empty() != out->client_key_pem.empty()) {
          return uw.error(out->client_cert_pem.empty() ? "client-certificate" : "client-key",
                          "client-certificate and client-key must be given together");
        }
        CCM_RETURN_IF_ERROR(checkTlsMaterial(*out, kw, uw));
        CCM_RETURN_IF_ERROR(scalar(user, "token", uw, &out->token));
        std::string token_file;
        CCM_RETURN_IF_ERROR(scalar(user, "tokenFile", uw, &token_file));
        if (!token_file.empty()) {
          out->token_file = resolvePath(dir, token_file);
          std::string content, err;
          if (out->token.empty() && !readFile(out->token_file, &content, &err)) {
            return uw.error("tokenFile", fmt::format("cannot read {}: {}", out->token_file, err));
          }
        }
        CCM_RETURN_IF_ERROR(scalar(user, "username", uw, &out->username));
        CCM_RETURN_IF_ERROR(scalar(user, "password", uw, &out->password));
        if (!out->username.empty() && (!out->token.empty() || !out->token_file.empty())) {
          return uw.error("username", "basic auth and a bearer token cannot be used together");
        }
        CCM_RETURN_IF_ERROR(scalar(user, "as", uw, &out->impersonate_user));
        YAML::Node groups = user["as-groups"];
        if (groups && groups.IsSequence()) {
          for (const auto& g : groups) {
            out->impersonate_groups.push_back(g.Scalar());
          }
        }
        YAML::Node exec = user["exec"];
        if (exec && !exec.IsNull()) {
          ExecConfig ec;
          CCM_RETURN_IF_ERROR(parseExec(exec, uw, dir, &ec));
          out->exec = std::move(ec);
        }
        if (user["auth-provider"] && !user["auth-provider"].IsNull()) {
          return uw.error("auth-provider",
                          "legacy auth providers are not supported; use an exec plugin");
        }
      }
    }
    out->source = fmt::format("kubeconfig {} (context {})", path, context_name);
  } catch (const YAML::Exception& e) {
    return Status(Code::InvalidArgument,
                  fmt::format("kubeconfig {}: malformed at line {}, column {}: {}", path,
                              e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return okStatus();
}

Status loadRestConfig(const ClientOptions& options, RestConfig* out) {
  *out = RestConfig{};
  if (!options.kubeconfig.empty()) {
    std::string text, err;
    if (!readFile(options.kubeconfig, &text, &err)) {
      return Status(Code::InvalidArgument,
                    fmt::format("kubeconfig {}: cannot read: {}", options.kubeconfig, err));
    }
    CCM_RETURN_IF_ERROR(parseKubeconfig(text, options.kubeconfig, options.context, out));
    if (!options.master.empty()) {
      CCM_RETURN_IF_ERROR(checkServer(options.master, Where{"(--master)", ""}, "server"));
      out->server = trimSlash(options.master);
      out->source += ", server from --master";
    }
  } else if (!options.master.empty()) {
    CCM_RETURN_IF_ERROR(checkServer(options.master, Where{"(--master)", ""}, "server"));
    out->server = trimSlash(options.master);
    out->source = "--master " + out->server;
  } else {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
      return Status(Code::InvalidArgument,
                    "neither --kubeconfig nor --master was given, and this is not running in a "
                    "cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)");
    }
    std::string h = host;
    if (h.find(':') != std::string::npos) {
      h = "[" + h + "]";
    }
    out->server = fmt::format("https://{}:{}", h, port);
    const std::string& dir = options.service_account_dir;
    out->token_file = dir + "/token";
    std::string content, err;
    if (!readFile(out->token_file, &content, &err)) {
      return Status(Code::InvalidArgument,
                    fmt::format("in-cluster configuration: token file {}: cannot read: {}",
                                out->token_file, err));
    }
    if (!readFile(dir + "/ca.crt", &out->ca_pem, &err)) {
      return Status(
          Code::InvalidArgument,
          fmt::format("in-cluster configuration: CA file {}/ca.crt: cannot read: {}", dir, err));
    }
    Status ca = checkTlsMaterial(*out, Where{dir + "/ca.crt", ""}, Where{"", ""});
    if (!ca.ok()) {
      return Status(Code::InvalidArgument, "in-cluster configuration: " + ca.message());
    }
    std::string ns;
    if (readFile(dir + "/namespace", &ns, &err)) {
      while (!ns.empty() && (ns.back() == '\n' || ns.back() == ' ')) {
        ns.pop_back();
      }
      if (!ns.empty()) {
        out->namespace_ = ns;
      }
    }
    out->source = "in-cluster configuration";
  }
  if (out->insecure_skip_tls_verify) {
    ccm::log::warning("TLS verification of the API server is disabled (insecure-skip-tls-verify)",
                      {{"source", out->source}});
  }
  if (!out->token.empty()) {
    ccm::log::registerSecret(out->token);
  }
  if (!out->password.empty()) {
    ccm::log::registerSecret(out->password);
  }
  if (!out->client_key_pem.empty()) {
    ccm::log::registerSecret(out->client_key_pem);
  }
  return okStatus();
}

}  // namespace ccm::kube
