// HealthChecks: the named checks behind /healthz, /livez and /readyz, aggregated the way
// Kubernetes components answer them:
//
//   all pass          200 "ok"  (with ?verbose: one "[+]<name> ok" line per check, then
//                                "<endpoint> check passed")
//   one fails         500 "[+]<name> ok" / "[-]<name> failed: reason withheld" lines, then
//                                "<endpoint> check failed" (always verbose; the reasons are
//                                logged, not served)
//   ?exclude=<name>   skips that check ("[+]<name> excluded: ok"); repeatable or
//                     comma-separated; unknown names are reported in a "warn:" line
//   /<endpoint>/<name> one check: 200 "ok" or 500 "internal server error: <reason>"
//                     (not an always-allowed path, so only authorized callers see reasons)
//
// Each check says which endpoints it belongs to (Probes). A "ping" check that always passes
// belongs to all three and cannot be removed. Checks run in the order they were added, on
// the server thread that answers the request: they must be quick and must not block.
//
// Suggested membership (what ccm's wiring does):
//   ping                      healthz, livez, readyz
//   leaderElection            healthz, livez   (a stuck leader should be restarted)
//   <controller-name>         healthz, readyz  (upstream registers these under /healthz)
//   informers synced          readyz
//
// THREAD: every method may be called from any thread, also while the server runs.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::server {

enum class HealthEndpoint { Healthz, Livez, Readyz };

// "healthz", "livez", "readyz".
std::string_view endpointName(HealthEndpoint endpoint);

// Which endpoints a check belongs to.
struct Probes {
  bool healthz = true;
  bool livez = true;
  bool readyz = true;

  static Probes all() { return {true, true, true}; }
  static Probes liveness() { return {true, true, false}; }   // healthz + livez
  static Probes readiness() { return {true, false, true}; }  // healthz + readyz
  bool includes(HealthEndpoint endpoint) const;
};

using HealthCheck = std::function<Status()>;
// Told the outcome of every check run by evaluate() and evaluateOne() (the SLI metrics).
using HealthObserver =
    std::function<void(std::string_view check, HealthEndpoint endpoint, bool passed)>;

// An HTTP answer from a health endpoint.
struct HealthAnswer {
  int http_status = 200;
  std::string body;
};

class HealthChecks {
 public:
  HealthChecks();  // with "ping"

  // Adds a check. ALREADY_EXISTS when the name is taken, INVALID_ARGUMENT for an empty name,
  // a name with '/', ',' or whitespace, or an empty function.
  Status add(std::string name, HealthCheck check, Probes probes = Probes::all());
  // Removes a check (false when absent or "ping").
  bool remove(std::string_view name);
  // The names of the checks of an endpoint, in order.
  std::vector<std::string> names(HealthEndpoint endpoint) const;

  // The aggregated answer. `exclude`: names to skip.
  HealthAnswer evaluate(HealthEndpoint endpoint, bool verbose,
                        const std::vector<std::string>& exclude = {}) const;
  // One check's answer; 404 when the endpoint has no check of that name.
  HealthAnswer evaluateOne(HealthEndpoint endpoint, std::string_view name) const;

  // Replaces the observer (nullptr: none). It is called on the evaluating thread, outside
  // the lock, and must be quick.
  void setObserver(HealthObserver observer);

 private:
  struct Entry {
    std::string name;
    HealthCheck check;
    Probes probes;
  };
  std::vector<std::shared_ptr<const Entry>> snapshot(HealthEndpoint endpoint) const;
  void observe(std::string_view name, HealthEndpoint endpoint, bool passed) const;

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const Entry>> entries_;  // guarded by mu_; in order added
  std::shared_ptr<const HealthObserver> observer_;      // guarded by mu_
};

}  // namespace ccm::server
