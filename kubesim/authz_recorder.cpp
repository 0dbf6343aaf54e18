// AuthzRecorder: decisions rendered once as JSON, de-duplicated by that rendering.
#include "kubesim/authz_recorder.hpp"

namespace ccm::kubesim {
namespace {

void field(std::string& out, std::string_view name, std::string_view value) {
  out += ",\"";
  out += name;
  out += "\":";
  appendJsonString(out, value);
}

}  // namespace

void AuthzRecorder::record(const AuthorizationAttributes& a, std::string_view source,
                           const RbacAuthorizer::Decision& d) {
  std::string json = "{\"user\":";
  appendJsonString(json, a.user.name);
  json += ",\"groups\":[";
  for (size_t i = 0; i < a.user.groups.size(); ++i) {
    if (i != 0) {
      json += ',';
    }
    appendJsonString(json, a.user.groups[i]);
  }
  json += ']';
  field(json, "source", source);
  field(json, "verb", a.verb);
  if (a.resource_request) {
    field(json, "apiGroup", a.api_group);
    field(json, "resource", a.resource);
    field(json, "subresource", a.subresource);
    field(json, "namespace", a.ns);
    field(json, "name", a.name);
  } else {
    field(json, "nonResourceURL", a.path);
  }
  json += d.allowed ? ",\"allowed\":true" : ",\"allowed\":false";
  field(json, "binding", d.binding);
  field(json, "role", d.role);
  json += ",\"ruleIndex\":" + std::to_string(d.rule_index);
  if (d.rules && d.rule_index >= 0 && static_cast<size_t>(d.rule_index) < d.rules->size()) {
    json += ",\"rule\":" + (*d.rules)[static_cast<size_t>(d.rule_index)].toJson();
  } else {
    json += ",\"rule\":null";
  }
  if (!d.reason.empty()) {
    field(json, "reason", d.reason);
  }

  std::lock_guard lock(mu_);
  auto it = index_.find(json);
  if (it != index_.end()) {
    ++entries_[it->second].count;
    return;
  }
  if (entries_.size() >= max_entries_) {
    ++dropped_;
    return;
  }
  index_.emplace(json, entries_.size());
  entries_.push_back({a.user.name, std::move(json), 1});
}

std::string AuthzRecorder::toJson(std::string_view user) const {
  std::lock_guard lock(mu_);
  std::string out = "{\"decisions\":[";
  bool first = true;
  for (const auto& e : entries_) {
    if (!user.empty() && e.user != user) {
      continue;
    }
    if (!first) {
      out += ',';
    }
    first = false;
    out += e.json_prefix;
    out += ",\"count\":" + std::to_string(e.count) + "}";
  }
  out += "],\"dropped\":" + std::to_string(dropped_) + "}";
  return out;
}

size_t AuthzRecorder::clear() {
  std::lock_guard lock(mu_);
  size_t n = entries_.size();
  index_.clear();
  entries_.clear();
  dropped_ = 0;
  return n;
}

}  // namespace ccm::kubesim
