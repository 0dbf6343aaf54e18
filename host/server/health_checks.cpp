// HealthChecks: registration and the Kubernetes-style aggregated answers.
#include "host/server/health_checks.hpp"

#include <algorithm>
#include <set>

#include "host/log/log.hpp"

namespace ccm::server {

std::string_view endpointName(HealthEndpoint endpoint) {
  switch (endpoint) {
    case HealthEndpoint::Healthz:
      return "healthz";
    case HealthEndpoint::Livez:
      return "livez";
    case HealthEndpoint::Readyz:
      return "readyz";
  }
  return "healthz";
}

bool Probes::includes(HealthEndpoint endpoint) const {
  switch (endpoint) {
    case HealthEndpoint::Healthz:
      return healthz;
    case HealthEndpoint::Livez:
      return livez;
    case HealthEndpoint::Readyz:
      return readyz;
  }
  return false;
}

HealthChecks::HealthChecks() {
  entries_.push_back(
      std::make_shared<const Entry>(Entry{"ping", [] { return okStatus(); }, Probes::all()}));
}

Status HealthChecks::add(std::string name, HealthCheck check, Probes probes) {
  if (name.empty() || name.find_first_of("/, \t\r\n") != std::string::npos) {
    return Status(Code::InvalidArgument, "health check name \"" + name + "\" is not valid");
  }
  if (!check) {
    return Status(Code::InvalidArgument, "health check \"" + name + "\" has no function");
  }
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e->name == name) {
      return Status(Code::AlreadyExists, "health check \"" + name + "\" is already registered");
    }
  }
  entries_.push_back(
      std::make_shared<const Entry>(Entry{std::move(name), std::move(check), probes}));
  return okStatus();
}

bool HealthChecks::remove(std::string_view name) {
  if (name == "ping") {
    return false;
  }
  std::lock_guard lock(mu_);
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return e->name == name; });
  if (it == entries_.end()) {
    return false;
  }
  entries_.erase(it);
  return true;
}

std::vector<std::shared_ptr<const HealthChecks::Entry>> HealthChecks::snapshot(
    HealthEndpoint endpoint) const {
  std::vector<std::shared_ptr<const Entry>> out;
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e->probes.includes(endpoint)) {
      out.push_back(e);
    }
  }
  return out;
}

std::vector<std::string> HealthChecks::names(HealthEndpoint endpoint) const {
  std::vector<std::string> out;
  for (const auto& e : snapshot(endpoint)) {
    out.push_back(e->name);
  }
  return out;
}

void HealthChecks::setObserver(HealthObserver observer) {
  std::lock_guard lock(mu_);
  observer_ = observer ? std::make_shared<const HealthObserver>(std::move(observer)) : nullptr;
}

void HealthChecks::observe(std::string_view name, HealthEndpoint endpoint, bool passed) const {
  std::shared_ptr<const HealthObserver> observer;
  {
    std::lock_guard lock(mu_);
    observer = observer_;
  }
  if (observer) {
    (*observer)(name, endpoint, passed);
  }
}

HealthAnswer HealthChecks::evaluate(HealthEndpoint endpoint, bool verbose,
                                    const std::vector<std::string>& exclude) const {
  std::set<std::string, std::less<>> excluded(exclude.begin(), exclude.end());
  excluded.erase("");
  std::string lines;
  std::string failures;  // for the log
  bool failed = false;
  for (const auto& e : snapshot(endpoint)) {
    if (auto it = excluded.find(e->name); it != excluded.end()) {
      excluded.erase(it);
      lines += "[+]" + e->name + " excluded: ok\n";
      continue;
    }
    Status st = e->check();  // outside the lock: checks may take their own locks
    observe(e->name, endpoint, st.ok());
    if (st.ok()) {
      lines += "[+]" + e->name + " ok\n";
    } else {
      failed = true;
      lines += "[-]" + e->name + " failed: reason withheld\n";
      failures += (failures.empty() ? "" : "; ") + e->name + ": " + st.toString();
    }
  }
  if (!excluded.empty()) {
    std::string missing;
    for (const auto& name : excluded) {
      missing += (missing.empty() ? "\"" : ", \"") + name + "\"";
    }
    lines += "warn: some health checks cannot be excluded: no matches for " + missing + "\n";
  }
  const std::string_view what = endpointName(endpoint);
  if (failed) {
    log::info("Health check failed", {{"endpoint", what}, {"failures", failures}});
    return {500, lines + std::string(what) + " check failed\n"};
  }
  if (verbose) {
    return {200, lines + std::string(what) + " check passed\n"};
  }
  return {200, "ok"};
}

HealthAnswer HealthChecks::evaluateOne(HealthEndpoint endpoint, std::string_view name) const {
  for (const auto& e : snapshot(endpoint)) {
    if (e->name == name) {
      Status st = e->check();
      observe(e->name, endpoint, st.ok());
      if (st.ok()) {
        return {200, "ok"};
      }
      return {500, "internal server error: " + st.toString() + "\n"};
    }
  }
  return {404, "404 page not found\n"};
}

}  // namespace ccm::server
