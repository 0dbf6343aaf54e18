// Barbican reads.
#include "plugins/openstack/barbican_client.hpp"

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {

sdk::Result<BarbicanRef> parseBarbicanRef(const std::string& ref) {
  std::string_view r = trim(ref);
  while (!r.empty() && r.back() == '/') {
    r.remove_suffix(1);
  }
  size_t last = r.rfind('/');
  if (last == std::string_view::npos || last == 0) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "want a Barbican reference ending in /containers/<id> or /secrets/<id>");
  }
  size_t before = r.rfind('/', last - 1);
  std::string kind(r.substr(before == std::string_view::npos ? 0 : before + 1,
                            last - (before == std::string_view::npos ? 0 : before + 1)));
  std::string id(r.substr(last + 1));
  if ((kind != "containers" && kind != "secrets") || id.empty()) {
    return sdk::Status(CCM_STATUS_INVALID_ARGUMENT,
                  "want a Barbican reference ending in /containers/<id> or /secrets/<id>");
  }
  return BarbicanRef{kind, id};
}

sdk::Status BarbicanClient::read(const sdk::Call& call, const BarbicanRef& ref) {
  std::string op = ref.kind == "containers" ? "container_get" : "secret_get";
  return os_.request(call, Service::KeyManager, "GET", ref.kind + "/" + urlEncode(ref.id), nullptr,
                     op)
      .status();
}

}  // namespace ccm::openstack
