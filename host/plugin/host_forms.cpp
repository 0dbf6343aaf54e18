// HostForms: a provider's converted forms of one host set, built once and shared.
#include "host/plugin/provider.hpp"

namespace ccm::plugin {

std::shared_ptr<const void> HostForms::get(
    const void* key, const std::function<std::shared_ptr<const void>()>& build) const {
  // Built under the lock: a second caller waits for the first one's form rather than
  // building the same thing beside it (the point is to build it once).
  std::lock_guard lock(mu_);
  for (const auto& [k, form] : forms_) {
    if (k == key) {
      return form;
    }
  }
  auto form = build();
  forms_.emplace_back(key, form);
  return form;
}

void HostForms::clear() const {
  std::vector<std::pair<const void*, std::shared_ptr<const void>>> dropped;
  {
    std::lock_guard lock(mu_);
    dropped.swap(forms_);
  }
  // Freed here, outside the lock (a form of 100,000 hosts takes a while to free).
}

}  // namespace ccm::plugin
