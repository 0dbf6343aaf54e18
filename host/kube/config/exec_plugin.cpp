// ExecPlugin: posix_spawn with a stdout pipe, KUBERNETES_EXEC_INFO, and ExecCredential parsing.
#include "host/kube/config/exec_plugin.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "host/kube/api/time_format.hpp"
#include "host/runtime/base64.hpp"

extern char** environ;

namespace ccm::kube {
namespace {

std::string_view str(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd() || !it->value.IsString()) {
    return {};
  }
  return {it->value.GetString(), it->value.GetStringLength()};
}

}  // namespace

ExecPlugin::ExecPlugin(ExecConfig config, const RestConfig& cluster)
    : config_(std::move(config)),
      server_(cluster.server),
      tls_server_name_(cluster.tls_server_name),
      insecure_(cluster.insecure_skip_tls_verify),
      ca_pem_(cluster.ca_pem),
      proxy_url_(cluster.proxy_url) {}

std::string ExecPlugin::execInfo() const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("apiVersion");
  w.String(config_.api_version);
  w.Key("kind");
  w.String("ExecCredential");
  w.Key("spec");
  w.StartObject();
  w.Key("interactive");
  w.Bool(false);
  if (config_.provide_cluster_info) {
    w.Key("cluster");
    w.StartObject();
    w.Key("server");
    w.String(server_);
    if (!tls_server_name_.empty()) {
      w.Key("tls-server-name");
      w.String(tls_server_name_);
    }
    if (insecure_) {
      w.Key("insecure-skip-tls-verify");
      w.Bool(true);
    }
    if (!ca_pem_.empty()) {
      w.Key("certificate-authority-data");
      w.String(base64Encode(ca_pem_));
    }
    if (!proxy_url_.empty()) {
      w.Key("proxy-url");
      w.String(proxy_url_);
    }
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return buf.GetString();
}

Status ExecPlugin::parse(std::string_view json, std::string_view api_version, ExecCredential* out) {
  rapidjson::Document doc;
  doc.Parse(json.data(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Status(Code::Unauthenticated,
                  "exec plugin: output is not an ExecCredential JSON object");
  }
  if (str(doc, "kind") != "ExecCredential") {
    return Status(Code::Unauthenticated, "exec plugin: output kind is not ExecCredential");
  }
  if (str(doc, "apiVersion") != api_version) {
    return Status(Code::Unauthenticated,
                  fmt::format("exec plugin: answered apiVersion \"{}\", configured \"{}\"",
                              str(doc, "apiVersion"), api_version));
  }
  auto st = doc.FindMember("status");
  if (st == doc.MemberEnd() || !st->value.IsObject()) {
    return Status(Code::Unauthenticated, "exec plugin: ExecCredential has no status");
  }
  const auto& s = st->value;
  *out = ExecCredential{};
  out->token = std::string(str(s, "token"));
  out->client_cert_pem = std::string(str(s, "clientCertificateData"));
  out->client_key_pem = std::string(str(s, "clientKeyData"));
  if (out->client_cert_pem.empty() != out->client_key_pem.empty()) {
    return Status(Code::Unauthenticated,
                  "exec plugin: clientCertificateData and clientKeyData must be given together");
  }
  if (out->token.empty() && out->client_cert_pem.empty()) {
    return Status(Code::Unauthenticated, "exec plugin: ExecCredential carries no credentials");
  }
  std::string_view exp = str(s, "expirationTimestamp");
  if (!exp.empty()) {
    auto t = parseRfc3339Time(exp);
    if (!t) {
      return Status(Code::Unauthenticated,
                    fmt::format("exec plugin: invalid expirationTimestamp \"{}\"", exp));
    }
    out->expiry = *t;
  }
  return okStatus();
}

Status ExecPlugin::run(ExecCredential* out, std::chrono::milliseconds timeout) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    return Status(Code::Internal, fmt::format("exec plugin: pipe: {}", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);

  std::vector<std::string> env_storage;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    bool overridden = kv.rfind("KUBERNETES_EXEC_INFO=", 0) == 0;
    for (const auto& [name, value] : config_.env) {
      if (kv.size() > name.size() && kv.substr(0, name.size()) == name && kv[name.size()] == '=') {
        overridden = true;
      }
    }
    if (!overridden) {
      env_storage.emplace_back(kv);
    }
  }
  for (const auto& [name, value] : config_.env) {
    env_storage.push_back(fmt::format("{}={}", name, value));
  }
  env_storage.push_back("KUBERNETES_EXEC_INFO=" + execInfo());
  std::vector<char*> envp;
  envp.reserve(env_storage.size());
  for (auto& e : env_storage) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> argv_storage{config_.command};
  argv_storage.insert(argv_storage.end(), config_.args.begin(), config_.args.end());
  std::vector<char*> argv;
  argv.reserve(argv_storage.size());
  for (auto& a : argv_storage) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawnp(&pid, config_.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    std::string hint = config_.install_hint.empty() ? "" : "\n" + config_.install_hint;
    return Status(Code::Unauthenticated, fmt::format("exec plugin: cannot run \"{}\": {}{}",
                                                     config_.command, std::strerror(rc), hint));
  }
  std::string output;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      timed_out = n == 0;
      break;
    }
    ssize_t got = read(pipefd[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    output.append(buf, static_cast<size_t>(got));
    if (output.size() > (1 << 20)) {
      break;
    }
  }
  close(pipefd[0]);
  if (timed_out) {
    kill(pid, SIGKILL);
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status(Code::Unauthenticated,
                  fmt::format("exec plugin \"{}\" did not finish within {} s", config_.command,
                              timeout.count() / 1000));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status(Code::Unauthenticated,
                  fmt::format("exec plugin \"{}\" failed (exit status {})", config_.command,
                              WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1));
  }
  return parse(output, config_.api_version, out);
}

}  // namespace ccm::kube
