// SimProcess: runs the OpenStack simulator (openstack_sim.py) as a child process on 127.0.0.1, port 0,
// and talks to its control API (/_sim/...) for tests: reset, seed, configure, inject faults,
// inspect state and the requests it served.
#pragma once

#include <rapidjson/document.h>
#include <sys/types.h>

#include <string>

namespace ccm::openstack::testing {

class SimProcess {
 public:
  // Starts the simulator (over TLS with a self-signed certificate when tls is true) and waits
  // until it listens. Throws std::runtime_error when it cannot.
  explicit SimProcess(bool tls = false);
  ~SimProcess();
  SimProcess(const SimProcess&) = delete;
  SimProcess& operator=(const SimProcess&) = delete;

  // One simulator for the whole test binary (plain HTTP), reset by each test that uses it.
  static SimProcess& shared();

  const std::string& url() const { return url_; }
  const std::string& caFile() const { return ca_file_; }

  // Control API. Both throw on transport errors or non-2xx answers.
  rapidjson::Document get(const std::string& path);
  rapidjson::Document post(const std::string& path, const std::string& json_body);

  void reset() { post("/_sim/reset", "{}"); }
  void config(const std::string& json) { post("/_sim/config", json); }
  void fault(const std::string& json) { post("/_sim/fault", json); }
  rapidjson::Document state() { return get("/_sim/state"); }
  rapidjson::Document requests() { return get("/_sim/requests"); }
  void clearRequests() { post("/_sim/requests/clear", "{}"); }
  // Adds a server (see openstack_sim.py add_server) and returns its ID.
  std::string addServer(const std::string& json);
  // Adds a server with one address, `ip`, on the network "private" (plus `extra`, more
  // members of the server object starting with a comma) and returns its ID.
  std::string addPrivateServer(const std::string& name, const std::string& ip,
                               const std::string& extra = "");

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::string url_;
  std::string ca_file_;
};

}  // namespace ccm::openstack::testing
