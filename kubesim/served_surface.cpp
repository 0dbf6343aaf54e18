// ServedSurface: the version table and the pruning of fields a version does not serve.
#include "kubesim/served_surface.hpp"

#include <charconv>

namespace ccm::kubesim {
namespace {

// Parses one run of decimal digits; false when empty, not all digits or too large.
bool parseNumber(std::string_view text, int* out) {
  if (text.empty() || text.size() > 6) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

ServedSurface::ServedSurface(int minor_version)
    : minor_(minor_version),
      ip_mode_(minor_version < 29    ? IpMode::UnknownField
               : minor_version == 29 ? IpMode::DroppedSilently
                                     : IpMode::Served),
      watch_list_(minor_version < 27                           ? WatchList::UnknownParameter
                  : minor_version == 32 || minor_version >= 34 ? WatchList::Served
                                                               : WatchList::GateDisabled),
      service_field_selectors_(minor_version >= 29),
      self_subject_review_v1_(minor_version >= 28) {}

ccm::StatusOr<ServedSurface> ServedSurface::forVersion(std::string_view version) {
  std::string_view v = version;
  if (!v.empty() && v.front() == 'v') {
    v.remove_prefix(1);
  }
  size_t first = v.find('.');
  size_t second = first == std::string_view::npos ? first : v.find('.', first + 1);
  int major = 0;
  int minor_version = 0;
  int patch = 0;
  bool parsed = second != std::string_view::npos && parseNumber(v.substr(0, first), &major) &&
                parseNumber(v.substr(first + 1, second - first - 1), &minor_version) &&
                parseNumber(v.substr(second + 1), &patch);
  if (!parsed || major != 1 || minor_version < kOldestMinor || minor_version > kNewestMinor) {
    return ccm::Status(ccm::Code::InvalidArgument,
                       "--server-version " + std::string(version) +
                           " is not served: kubesim emulates v1." + std::to_string(kOldestMinor) +
                           ".0 to v1." + std::to_string(kNewestMinor) +
                           ".x (written vMAJOR.MINOR.PATCH, e.g. v1.26.0)");
  }
  return ServedSurface(minor_version);
}

ServedSurface ServedSurface::newest() {
  return ServedSurface(kNewestMinor);
}

bool ServedSurface::serves(const ResourceType& type) const {
  if (type.group == "authentication.k8s.io" && type.resource == "selfsubjectreviews") {
    return self_subject_review_v1_;
  }
  return true;
}

bool ServedSurface::servesGroupVersion(std::string_view group, std::string_view version) const {
  for (const auto& t : ResourceRegistry::builtin().all()) {
    if (t.group == group && t.version == version && serves(t)) {
      return true;
    }
  }
  return false;
}

bool ServedSurface::knowsField(std::string_view struct_name, std::string_view field) const {
  return !(struct_name == "LoadBalancerIngress" && field == "ipMode" &&
           ip_mode_ == IpMode::UnknownField);
}

void ServedSurface::pruneUnservedFields(std::string_view group, std::string_view kind,
                                        JsonValue& object,
                                        std::vector<std::string>* unknown_fields) const {
  if (ip_mode_ == IpMode::Served || !group.empty() || kind != "Service") {
    return;
  }
  JsonValue* ingress = memberPath(object, {"status", "loadBalancer", "ingress"});
  if (ingress == nullptr || !ingress->IsArray()) {
    return;
  }
  for (rapidjson::SizeType i = 0; i < ingress->Size(); ++i) {
    JsonValue& entry = (*ingress)[i];
    if (entry.IsObject() && entry.RemoveMember("ipMode") && ip_mode_ == IpMode::UnknownField &&
        unknown_fields != nullptr) {
      unknown_fields->push_back("status.loadBalancer.ingress[" + std::to_string(i) + "].ipMode");
    }
  }
}

}  // namespace ccm::kubesim
