// The service controller's local cache.
#include "host/controllers/service/service_cache.hpp"

namespace ccm::controllers::service {

std::optional<CachedService> ServiceCache::get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void ServiceCache::set(const std::string& key, CachedService entry) {
  std::lock_guard lock(mu_);
  entries_[key] = std::move(entry);
}

bool ServiceCache::update(const std::string& key, const std::function<void(CachedService&)>& fn) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    return false;
  }
  fn(it->second);
  return true;
}

bool ServiceCache::remove(const std::string& key) {
  std::lock_guard lock(mu_);
  return entries_.erase(key) > 0;
}

bool ServiceCache::contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return entries_.count(key) > 0;
}

size_t ServiceCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::vector<std::string> ServiceCache::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [k, _] : entries_) {
    out.push_back(k);
  }
  return out;
}

std::vector<std::shared_ptr<const kube::Service>> ServiceCache::allServices() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<const kube::Service>> out;
  out.reserve(entries_.size());
  for (const auto& [_, e] : entries_) {
    if (e.service) {
      out.push_back(e.service);
    }
  }
  return out;
}

void ServiceCache::forEach(
    const std::function<void(const std::string&, const CachedService&)>& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [k, e] : entries_) {
    fn(k, e);
  }
}

}  // namespace ccm::controllers::service
