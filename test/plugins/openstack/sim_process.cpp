// Runs openstack_sim.py and drives its control API over libcurl.
#include "test/plugins/openstack/sim_process.hpp"

#include <curl/curl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace ccm::openstack::testing {
namespace {

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string simScript() {
  const char* env = std::getenv("CCM_OS_SIM");
  if (env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(CCM_OS_SIM_DEFAULT);
}

}  // namespace

SimProcess::SimProcess(bool tls) {
  char tmpl[] = "/tmp/ccm-os-sim-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  dir_ = tmpl;
  std::string port_file = dir_ + "/port.json";
  std::string script = simScript();
  std::vector<std::string> args = {"/usr/bin/python3", script,   "--port", "0",
                                   "--port-file",      port_file};
  if (tls) {
    args.push_back("--tls");
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + script);
  }
  // Wait (generously) for the simulator to write its port file.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(port_file)) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("the OpenStack simulator exited at start-up");
    }
    if (std::chrono::steady_clock::now() > until) {
      throw std::runtime_error("the OpenStack simulator did not start");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(port_file);
  std::stringstream ss;
  ss << in.rdbuf();
  rapidjson::Document doc;
  doc.Parse(ss.str().c_str());
  url_ = doc["url"].GetString();
  ca_file_ = doc["ca_file"].GetString();
}

SimProcess::~SimProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

SimProcess& SimProcess::shared() {
  static SimProcess sim(false);
  return sim;
}

namespace {

rapidjson::Document call(const std::string& method, const std::string& url, const std::string& body,
                         const std::string& ca_file) {
  CURL* curl = curl_easy_init();
  std::string out;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  if (!ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file.c_str());
  }
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    throw std::runtime_error("simulator control " + url + ": " + curl_easy_strerror(rc));
  }
  if (status < 200 || status > 299) {
    throw std::runtime_error("simulator control " + url + ": HTTP " + std::to_string(status) +
                             ": " + out);
  }
  rapidjson::Document doc;
  if (status == 204) {  // no content: an empty object
    doc.SetObject();
    return doc;
  }
  doc.Parse(out.c_str());
  if (doc.HasParseError()) {
    throw std::runtime_error("simulator control " + url + ": bad JSON");
  }
  return doc;
}

}  // namespace

rapidjson::Document SimProcess::get(const std::string& path) {
  return call("GET", url_ + path, "", ca_file_);
}

rapidjson::Document SimProcess::post(const std::string& path, const std::string& json_body) {
  return call("POST", url_ + path, json_body, ca_file_);
}

std::string SimProcess::addServer(const std::string& json) {
  auto doc = post("/_sim/add_server", json);
  return doc["server"]["id"].GetString();
}

std::string SimProcess::addPrivateServer(const std::string& name, const std::string& ip,
                                         const std::string& extra) {
  return addServer(R"({"name":")" + name + R"(","networks":[{"network":"private","ip":")" + ip +
                   R"("}])" + extra + "}");
}

}  // namespace ccm::openstack::testing
