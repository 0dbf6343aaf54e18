// Loading kubeconfig files, --master and the in-cluster configuration, with the errors a
// user sees for bad input.
#include "host/kube/config/kube_config.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/kube/config/credentials.hpp"
#include "host/kube/config/exec_plugin.hpp"
#include "host/runtime/base64.hpp"

namespace ccm::kube {
namespace {

std::string testdata(const std::string& name) {
  std::ifstream in(std::string(CCM_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A real self-signed certificate with its key, and an unrelated key.
const std::string kCert = testdata("pki/client.crt");
const std::string kKey = testdata("pki/client.key");
const std::string kOtherKey = testdata("pki/other.key");

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ccm-kubeconfig-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
  std::string path;
};

std::string kubeconfig(const std::string& user_block, const std::string& cluster_extra = "",
                       const std::string& current = "main") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: " + current +
         "\n"
         "clusters:\n"
         "- name: c1\n  cluster:\n    server: https://10.0.0.1:6443/\n" +
         cluster_extra +
         "contexts:\n"
         "- name: main\n  context:\n    cluster: c1\n    user: u1\n    namespace: team\n"
         "- name: other\n  context:\n    cluster: c1\n    user: u2\n"
         "users:\n"
         "- name: u1\n  user:\n" +
         user_block + "- name: u2\n  user:\n    token: other-token\n";
}

Status load(const TempDir& dir, const std::string& text, RestConfig* out,
            const std::string& context = "") {
  ClientOptions o;
  o.kubeconfig = dir.write("config/kubeconfig.yaml", text);
  o.context = context;
  return loadRestConfig(o, out);
}

}  // namespace

TEST_CASE("kubeconfig: current context, certificates from files relative to the kubeconfig") {
  TempDir dir;
  dir.write("config/pki/ca.crt", kCert);
  dir.write("config/pki/client.crt", kCert);
  dir.write("config/pki/client.key", kKey);
  RestConfig c;
  Status st = load(dir,
                   kubeconfig("    client-certificate: pki/client.crt\n"
                              "    client-key: pki/client.key\n",
                              "    certificate-authority: pki/ca.crt\n"
                              "    tls-server-name: api.internal\n"
                              "    proxy-url: http://proxy:3128\n"),
                   &c);
  REQUIRE(st.ok());
  CHECK(c.server == "https://10.0.0.1:6443");
  CHECK(c.ca_pem == kCert);
  CHECK(c.client_cert_pem == kCert);
  CHECK(c.client_key_pem == kKey);
  CHECK(c.tls_server_name == "api.internal");
  CHECK(c.proxy_url == "http://proxy:3128");
  CHECK(c.namespace_ == "team");
  CHECK(c.source.find("context main") != std::string::npos);
}

TEST_CASE("kubeconfig: inline data, token, tokenFile, context selection, --master override") {
  TempDir dir;
  std::string b64cert = base64Encode(kCert);
  std::string b64key = base64Encode(kKey);
  RestConfig c;
  REQUIRE(load(dir,
               kubeconfig("    client-certificate-data: " + b64cert +
                              "\n    client-key-data: " + b64key + "\n",
                          "    certificate-authority-data: " + base64Encode(kCert) + "\n"),
               &c)
              .ok());
  CHECK(c.client_cert_pem == kCert);
  CHECK(c.ca_pem == kCert);

  RestConfig other;
  REQUIRE(load(dir, kubeconfig("    token: t\n"), &other, "other").ok());
  CHECK(other.token == "other-token");
  CHECK(other.namespace_ == "default");

  dir.write("config/token", "file-token\n");
  RestConfig tf;
  REQUIRE(load(dir, kubeconfig("    tokenFile: token\n"), &tf).ok());
  CHECK(tf.token_file == dir.path + "/config/token");

  ClientOptions o;
  o.kubeconfig = dir.write("config/k2.yaml", kubeconfig("    token: abc\n"));
  o.master = "https://override:443/";
  RestConfig m;
  REQUIRE(loadRestConfig(o, &m).ok());
  CHECK(m.server == "https://override:443");
  CHECK(m.token == "abc");
}

TEST_CASE("kubeconfig: insecure-skip-tls-verify is honoured, and refused with a CA") {
  TempDir dir;
  RestConfig c;
  REQUIRE(load(dir, kubeconfig("    token: t\n", "    insecure-skip-tls-verify: true\n"), &c).ok());
  CHECK(c.insecure_skip_tls_verify);
  RestConfig bad;
  Status st = load(dir,
                   kubeconfig("    token: t\n",
                              "    insecure-skip-tls-verify: true\n"
                              "    certificate-authority-data: " +
                                  base64Encode(kCert) + "\n"),
                   &bad);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("insecure-skip-tls-verify") != std::string::npos);
}

TEST_CASE("kubeconfig: exec plugin settings") {
  TempDir dir;
  RestConfig c;
  REQUIRE(load(dir,
               kubeconfig("    exec:\n"
                          "      apiVersion: client.authentication.k8s.io/v1\n"
                          "      command: ./bin/get-token\n"
                          "      args: [\"--cluster\", \"c1\"]\n"
                          "      env:\n      - name: A\n        value: b\n"
                          "      interactiveMode: Never\n"
                          "      provideClusterInfo: true\n"),
               &c)
              .ok());
  REQUIRE(c.exec);
  CHECK(c.exec->command == dir.path + "/config/bin/get-token");
  CHECK(c.exec->args == std::vector<std::string>{"--cluster", "c1"});
  CHECK(c.exec->env.size() == 1);
  CHECK(c.exec->provide_cluster_info);
  RestConfig missing_mode;
  Status st = load(dir,
                   kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
                              "      command: get-token\n"),
                   &missing_mode);
  CHECK(st.message().find("interactiveMode") != std::string::npos);
}

TEST_CASE("kubeconfig errors name the file and the field") {
  TempDir dir;
  RestConfig c;
  ClientOptions o;
  o.kubeconfig = dir.path + "/nope.yaml";
  Status missing = loadRestConfig(o, &c);
  CHECK(missing.code() == Code::InvalidArgument);
  CHECK(missing.message().find(dir.path + "/nope.yaml") != std::string::npos);
  CHECK(missing.message().find("No such file") != std::string::npos);

  Status unknown_ctx = load(dir, kubeconfig("    token: t\n"), &c, "prod");
  CHECK(unknown_ctx.message().find("context \"prod\" not found") != std::string::npos);
  CHECK(unknown_ctx.message().find("kubeconfig.yaml") != std::string::npos);

  Status bad_key = load(dir,
                        kubeconfig("    client-certificate-data: " + base64Encode(kCert) +
                                   "\n    client-key: missing.key\n"),
                        &c);
  CHECK(bad_key.message().find("users[0] \"u1\": client-key: cannot read") != std::string::npos);
  CHECK(bad_key.message().find("missing.key") != std::string::npos);

  Status yaml = load(dir, "clusters: [\n  - {name: x\n", &c);
  CHECK(yaml.message().find("malformed YAML at line") != std::string::npos);

  Status bad_b64 =
      load(dir, kubeconfig("    token: t\n", "    certificate-authority-data: '%%%'\n"), &c);
  CHECK(bad_b64.message().find("certificate-authority-data: not valid base64") !=
        std::string::npos);

  Status no_key =
      load(dir, kubeconfig("    client-certificate-data: " + base64Encode(kCert) + "\n"), &c);
  CHECK(no_key.message().find("must be given together") != std::string::npos);

  Status not_pem = load(dir,
                        kubeconfig("    client-certificate-data: " + base64Encode(kCert) +
                                   "\n    client-key-data: " + base64Encode("garbage") + "\n"),
                        &c);
  CHECK(not_pem.message().find("client-key: not a PEM private key") != std::string::npos);

  Status truncated = load(
      dir,
      kubeconfig("    client-certificate-data: " + base64Encode(kCert) +
                 "\n    client-key-data: " + base64Encode(kKey.substr(0, kKey.size() / 2)) + "\n"),
      &c);
  CHECK(truncated.message().find("client-key: not a PEM private key") != std::string::npos);

  Status mismatch = load(dir,
                         kubeconfig("    client-certificate-data: " + base64Encode(kCert) +
                                    "\n    client-key-data: " + base64Encode(kOtherKey) + "\n"),
                         &c);
  CHECK(mismatch.message().find("client-key: does not match client-certificate") !=
        std::string::npos);

  Status bad_ca =
      load(dir,
           kubeconfig("    token: t\n",
                      "    certificate-authority-data: " + base64Encode("not a cert") + "\n"),
           &c);
  CHECK(bad_ca.message().find("certificate-authority: not a PEM certificate bundle") !=
        std::string::npos);

  Status no_server = load(dir,
                          "current-context: a\ncontexts:\n- name: a\n  context:\n    cluster: c\n"
                          "clusters:\n- name: c\n  cluster:\n    certificate-authority-data: x\n",
                          &c);
  CHECK(no_server.message().find("server: is required") != std::string::npos);
}

TEST_CASE("in-cluster configuration from the service account and the environment") {
  TempDir dir;
  dir.write("sa/token", "sa-token\n");
  dir.write("sa/ca.crt", kCert);
  dir.write("sa/namespace", "kube-system\n");
  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  ClientOptions o;
  o.service_account_dir = dir.path + "/sa";
  RestConfig c;
  REQUIRE(loadRestConfig(o, &c).ok());
  CHECK(c.server == "https://[fd00::1]:443");
  CHECK(c.token_file == dir.path + "/sa/token");
  CHECK(c.ca_pem == kCert);
  CHECK(c.namespace_ == "kube-system");
  unsetenv("KUBERNETES_SERVICE_HOST");
  Status st = loadRestConfig(o, &c);
  CHECK_FALSE(st.ok());
  CHECK(st.message().find("KUBERNETES_SERVICE_HOST") != std::string::npos);
  unsetenv("KUBERNETES_SERVICE_PORT");
}

TEST_CASE("--master alone: that server, no credentials") {
  ClientOptions o;
  o.master = "http://127.0.0.1:8080";
  RestConfig c;
  REQUIRE(loadRestConfig(o, &c).ok());
  CHECK(c.server == "http://127.0.0.1:8080");
  CHECK(c.token.empty());
  o.master = "ftp://x";
  CHECK_FALSE(loadRestConfig(o, &c).ok());
}

TEST_CASE("ExecCredential parsing") {
  ExecCredential cred;
  REQUIRE(
      ExecPlugin::parse(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t","expirationTimestamp":"2030-01-01T00:00:00Z"}})",
          "client.authentication.k8s.io/v1", &cred)
          .ok());
  CHECK(cred.token == "t");
  CHECK(cred.expiry.has_value());
  CHECK_FALSE(
      ExecPlugin::parse(
          R"({"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}})",
          "client.authentication.k8s.io/v1", &cred)
          .ok());
  CHECK_FALSE(
      ExecPlugin::parse(
          R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientCertificateData":"x"}})",
          "client.authentication.k8s.io/v1", &cred)
          .ok());
  CHECK_FALSE(ExecPlugin::parse(
                  R"({"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"})",
                  "client.authentication.k8s.io/v1", &cred)
                  .ok());
}

TEST_CASE("User-Agent in Kubernetes' format") {
  std::string ua = defaultUserAgent("cloud-controller-manager", "0.1.0-rc.1+meta", "0123456789abc");
  CHECK(ua.rfind("cloud-controller-manager/v0.1.0 (linux/", 0) == 0);
  CHECK(ua.find(") kubernetes/0123456") != std::string::npos);
  CHECK(defaultUserAgent("", "", "").find("unknown/unknown (linux/") == 0);
}

}  // namespace ccm::kube

namespace ccm::kube {

TEST_CASE("exec credentials are cached until they expire; token files are re-read") {
  TempDir dir;
  std::string counter = dir.path + "/count";
  std::string script =
      dir.write("plugin.sh",
                "#!/bin/sh\n"
                "n=$(cat " +
                    counter +
                    " 2>/dev/null || echo 0); n=$((n+1)); "
                    "echo $n > " +
                    counter +
                    "\n"
                    "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
                    "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t'$n'\","
                    "\"expirationTimestamp\":\"2090-01-01T00:00:00Z\"}}'\n");
  chmod(script.c_str(), 0755);
  RestConfig config;
  ExecConfig exec;
  exec.command = script;
  exec.api_version = "client.authentication.k8s.io/v1beta1";
  config.exec = exec;
  FakeClock clock;
  Credentials creds(config, clock);
  Credentials::Current cur;
  REQUIRE(creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer t1");
  REQUIRE(creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer t1");            // cached
  clock.jumpWall(std::chrono::hours(24 * 365 * 70));  // past 2090
  REQUIRE(creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer t2");  // expired: the plugin ran again

  RestConfig file_config;
  file_config.token_file = dir.write("token", "first\n");
  Credentials file_creds(file_config, clock);
  REQUIRE(file_creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer first");
  dir.write("token", "second-longer\n");
  REQUIRE(file_creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer first");  // checked at most once a second
  clock.advance(std::chrono::seconds(2));
  REQUIRE(file_creds.get(&cur).ok());
  CHECK(cur.authorization == "Bearer second-longer");
  std::filesystem::remove(dir.path + "/token");
  clock.advance(std::chrono::seconds(120));
  REQUIRE(file_creds.get(&cur).ok());  // a vanished file keeps the last token
  CHECK(cur.authorization == "Bearer second-longer");
}

}  // namespace ccm::kube
