// The C functions of ccm_host_services and the call/plugin registries behind them.
#include "host/plugin/host_services.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ccm/output_checks.hpp"
#include "ccm/service_checks.hpp"
#include "ccm/validation.hpp"
#include "host/log/log.hpp"
#include "host/plugin/plugin_text.hpp"

namespace ccm::plugin {
namespace {

constexpr size_t kMaxLogBytes = kMaxPluginLogBytes;
constexpr size_t kMaxErrorBytes = kMaxPluginErrorBytes;

// Text from a plugin, made safe to log: bounded with a visible marker, invalid UTF-8 and
// control characters escaped (plugin_text.hpp); an inconsistent pointer/length pair is
// described instead of read.
std::string sanitize(ccm_str s, size_t max_bytes) {
  if (s.data == nullptr && s.size != 0) {
    return fmt::format("[invalid text from the provider: data NULL with size {}]", s.size);
  }
  return safeText(sdk::view(s), max_bytes);
}


constexpr size_t kMaxLogFields = 32;
constexpr size_t kMaxLogFieldBytes = size_t{4} * 1024;


}  // namespace

PluginContext PluginContext::make(std::string name, metrics::Registry* registry,
                                  const Clock* clock) {
  PluginContext ctx;
  ctx.name = std::move(name);
  ctx.registry = registry;
  ctx.clock = clock;
  if (registry != nullptr) {
    ctx.violations =
        registry->counter("ccm_provider_contract_violations_total",
                          "Times the provider plugin broke the ABI contract, by provider and kind.",
                          {"provider", "kind"});
  }
  return ctx;
}

HostServices& HostServices::instance() {
  static HostServices* services = new HostServices();  // never destroyed: plugins outlive main
  return *services;
}

HostServices::HostServices() {
  table_.struct_size = sizeof(ccm_host_services);
  table_.log = &HostServices::log;
  table_.is_cancelled = &HostServices::isCancelled;
  table_.now_monotonic_ns = &HostServices::nowMonotonicNs;
  table_.now_unix_ns = &HostServices::nowUnixNs;
  table_.set_error = &HostServices::setError;
  table_.metric = &HostServices::metric;
  table_.register_secret = &HostServices::registerSecret;
  table_.emit_instance_metadata = &HostServices::emitInstanceMetadata;
  table_.emit_item_error = &HostServices::emitItemError;
  table_.emit_lb_status = &HostServices::emitLbStatus;
  table_.emit_route = &HostServices::emitRoute;
  table_.emit_string = &HostServices::emitString;
  table_.log_fields = &HostServices::logFields;
}

ccm_host_handle HostServices::addPlugin(PluginContext context) {
  ccm_host_handle h = next_handle_.fetch_add(1);
  std::unique_lock lock(plugins_mu_);
  plugins_[h] = std::move(context);
  return h;
}

void HostServices::updatePlugin(ccm_host_handle handle, PluginContext context) {
  std::unique_lock lock(plugins_mu_);
  plugins_[handle] = std::move(context);
}

void HostServices::detachRegistry(ccm_host_handle handle, const metrics::Registry* registry) {
  std::unique_lock lock(plugins_mu_);
  auto it = plugins_.find(handle);
  if (it != plugins_.end() && it->second.registry == registry) {
    it->second.registry = nullptr;
    it->second.violations = nullptr;
    it->second.clock = nullptr;
  }
}

std::optional<PluginContext> HostServices::declarations(ccm_host_handle handle) {
  std::shared_lock lock(plugins_mu_);
  auto it = plugins_.find(handle);
  if (it == plugins_.end()) {
    return std::nullopt;
  }
  PluginContext out;
  out.name = it->second.name;
  out.abi_minor = it->second.abi_minor;
  out.provider_id_prefix = it->second.provider_id_prefix;
  out.annotation_domain = it->second.annotation_domain;
  out.metric_namespace = it->second.metric_namespace;
  return out;
}

std::string HostServices::pluginName(ccm_host_handle handle) {
  std::shared_lock lock(plugins_mu_);
  auto it = plugins_.find(handle);
  return it == plugins_.end() ? "unknown" : it->second.name;
}

int64_t HostServices::pluginNowNs(ccm_host_handle handle, bool monotonic) {
  std::shared_lock lock(plugins_mu_);
  auto it = plugins_.find(handle);
  const Clock& clock =
      it != plugins_.end() && it->second.clock != nullptr ? *it->second.clock : Clock::real();
  return monotonic ? clock.nowMonotonicNs() : clock.nowUnixNs();
}

std::shared_ptr<CallState> HostServices::beginCall(ccm_host_handle handle, int64_t deadline_ns,
                                                   OutputKind output, size_t expected_items) {
  auto state = std::make_shared<CallState>();
  state->id = next_call_id_.fetch_add(1);
  state->handle = handle;
  state->deadline_ns = deadline_ns;
  state->output = output;
  state->expected_items = expected_items;
  if (output == OutputKind::Metadata) {
    state->metadata.resize(expected_items);
    state->item_errors.resize(expected_items);
  }
  std::lock_guard lock(mu_);
  calls_[state->id] = state;
  return state;
}

void HostServices::endCall(uint64_t call_id) {
  std::lock_guard lock(mu_);
  calls_.erase(call_id);
}

void HostServices::cancelAll(ccm_host_handle handle) {
  std::lock_guard lock(mu_);
  for (auto& [id, state] : calls_) {
    if (state->handle == handle) {
      state->cancelled = true;
    }
  }
}

std::shared_ptr<CallState> HostServices::findCall(uint64_t call_id) {
  std::lock_guard lock(mu_);
  auto it = calls_.find(call_id);
  return it == calls_.end() ? nullptr : it->second;
}

void HostServices::violation(ccm_host_handle handle, std::string_view kind,
                             std::string_view detail) {
  std::string name;
  {
    std::shared_lock lock(plugins_mu_);
    auto it = plugins_.find(handle);
    name = it == plugins_.end() ? "unknown" : it->second.name;
    if (it != plugins_.end() && it->second.violations != nullptr) {
      it->second.violations->labels({it->second.name, std::string(kind)}).inc();
    }
  }
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = logged_violations_.emplace(name + "/" + std::string(kind), true).second;
  }
  if (first) {
    log::error("Provider broke the plugin ABI contract (logged once per kind, counted in "
               "ccm_provider_contract_violations_total)",
               {{"provider", name}, {"violation", kind}, {"detail", detail}});
  }
}

std::shared_ptr<CallState> HostServices::callFor(ccm_host_handle host, uint64_t call_id,
                                                 OutputKind kind, std::string_view service) {
  auto& self = instance();
  auto state = self.findCall(call_id);
  if (!state || state->handle != host) {
    self.violation(host, "stale_call_id",
                   fmt::format("{} called for call {} which is not running (emitted after the "
                               "call returned, or from a stray thread)",
                               service, call_id));
    return nullptr;
  }
  if (std::string e = sdk::checkOutputKind(state->output, kind, service); !e.empty()) {
    self.violation(host, "unexpected_output", e);
    return nullptr;
  }
  return state;
}

void HostServices::log(ccm_host_handle host, ccm_log_level level, ccm_str message) {
  std::string provider = instance().pluginName(host);
  std::string text = sanitize(message, kMaxLogBytes);
  switch (level) {
    case CCM_LOG_ERROR:
      log::error(text, {{"provider", provider}});
      break;
    case CCM_LOG_WARNING:
      log::warning(text, {{"provider", provider}});
      break;
    case CCM_LOG_INFO:
      log::info(text, {{"provider", provider}});
      break;
    default:
      log::infoV(4, text, {{"provider", provider}});
      break;
  }
}

// Fields go to the logger as structured fields (klog key="value", JSON members) after the
// provider's name; keys that break the key rule are dropped, values are cleaned like the
// message, and the whole line is redacted by the logger.
void HostServices::logFields(ccm_host_handle host, ccm_log_level level, ccm_str message,
                             const ccm_kv* fields, size_t field_count) {
  std::string provider = instance().pluginName(host);
  std::string text = sanitize(message, kMaxLogBytes);
  size_t n = fields == nullptr ? 0 : std::min(field_count, kMaxLogFields);
  std::vector<std::string> keys;
  std::vector<std::string> values;
  keys.reserve(n);
  values.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string_view key = sdk::view(fields[i].key);
    if (!sdk::isValidLogKey(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) {
      continue;
    }
    keys.emplace_back(key);
    values.push_back(sanitize(fields[i].value, kMaxLogFieldBytes));
  }
  std::vector<log::Field> list;
  list.reserve(keys.size() + 1);
  list.emplace_back("provider", provider);
  for (size_t i = 0; i < keys.size(); ++i) {
    list.emplace_back(keys[i], values[i]);
  }
  const log::Where where = log::Where::here();
  switch (level) {
    case CCM_LOG_ERROR:
      log::write(log::Severity::Error, 0, text, list, where);
      break;
    case CCM_LOG_WARNING:
      log::write(log::Severity::Warning, 0, text, list, where);
      break;
    case CCM_LOG_INFO:
      log::write(log::Severity::Info, 0, text, list, where);
      break;
    default:
      if (log::enabled(4)) {
        log::write(log::Severity::Info, 4, text, list, where);
      }
      break;
  }
}

bool HostServices::isCancelled(ccm_host_handle host, uint64_t call_id) {
  auto state = instance().findCall(call_id);
  if (!state || state->handle != host) {
    return true;
  }
  if (state->cancelled.load()) {
    return true;
  }
  if (state->deadline_ns != 0 && nowMonotonicNs(host) >= state->deadline_ns) {
    return true;
  }
  return false;
}

int64_t HostServices::nowMonotonicNs(ccm_host_handle host) {
  return instance().pluginNowNs(host, true);
}

int64_t HostServices::nowUnixNs(ccm_host_handle host) {
  return instance().pluginNowNs(host, false);
}

bool HostServices::setError(ccm_host_handle host, uint64_t call_id, ccm_str message,
                            int64_t retry_after_ms) {
  auto state = instance().callFor(host, call_id, OutputKind::None, "set_error");
  if (!state) {
    return false;
  }
  std::lock_guard lock(state->mu);
  state->has_error = true;
  state->error_message = log::redact(sanitize(message, kMaxErrorBytes));
  // Bound the retry-after: a provider cannot park an object for more than an hour.
  state->retry_after_ms = std::clamp<int64_t>(retry_after_ms, 0, int64_t{3600} * 1000);
  return true;
}

void HostServices::metric(ccm_host_handle host, ccm_metric_kind kind, ccm_str name, ccm_str help,
                          const ccm_kv* labels, size_t label_count, double value) {
  auto& self = instance();
  std::string metric_name(sdk::view(name));
  if (std::string e = sdk::checkMetricCall(metric_name, sanitize(name, 200), labels, label_count);
      !e.empty()) {
    self.violation(host, "bad_metric", e);
    return;
  }
  std::vector<std::string> names;
  std::vector<std::string> values;
  for (size_t i = 0; i < label_count; ++i) {
    names.emplace_back(sdk::view(labels[i].key));
    values.push_back(sanitize(labels[i].value, 256));
  }
  std::string help_text = sanitize(help, 1024);
  std::shared_lock lock(self.plugins_mu_);
  auto plugin = self.plugins_.find(host);
  if (plugin == self.plugins_.end() || plugin->second.registry == nullptr) {
    return;
  }
  // Since 1.1: "<metric_namespace>_..." is the plugin's own name, exposed as it is (the
  // namespace was checked at load not to be one the host uses).
  const std::string& ns = plugin->second.metric_namespace;
  bool own = sdk::isOwnMetric(metric_name, ns);
  std::string full = own ? metric_name : "ccm_provider_" + metric_name;
  if (!own) {
    // Under the host's prefix the host names the provider, so two providers (or two builds of
    // one plugin) never add up; the label name is the host's (the SDK's check, shared with
    // the fake host).
    if (std::string e = sdk::checkHostLabels(metric_name, ns, labels, label_count); !e.empty()) {
      lock.unlock();
      self.violation(host, "bad_metric", e);
      return;
    }
    names.insert(names.begin(), "provider");
    values.insert(values.begin(), plugin->second.name);
  }
  metrics::Registry& reg = *plugin->second.registry;
  bool ok = false;
  switch (kind) {
    case CCM_METRIC_COUNTER:
      if (auto* f = reg.counter(full, help_text, names)) {
        f->labels(values).inc(value < 0 ? 0 : value);
        ok = true;
      }
      break;
    case CCM_METRIC_GAUGE:
      if (auto* f = reg.gauge(full, help_text, names)) {
        f->labels(values).set(value);
        ok = true;
      }
      break;
    case CCM_METRIC_HISTOGRAM:
      if (auto* f = reg.histogram(full, help_text, metrics::exponentialBuckets(0.001, 2, 16),
                                  names)) {
        f->labels(values).observe(value);
        ok = true;
      }
      break;
    default:
      break;
  }
  lock.unlock();
  if (!ok) {
    self.violation(host, "bad_metric",
                   fmt::format("metric \"{}\" used with another kind or label set than at its "
                               "first use",
                               metric_name));
  }
}

void HostServices::registerSecret(ccm_host_handle, ccm_str value) {
  log::registerSecret(sdk::view(value));
}

bool HostServices::emitInstanceMetadata(ccm_host_handle host, uint64_t call_id, size_t index,
                                        const ccm_instance_metadata* metadata) {
  auto& self = instance();
  auto state = self.callFor(host, call_id, OutputKind::Metadata, "emit_instance_metadata");
  if (!state) {
    return false;
  }
  if (metadata == nullptr || index >= state->expected_items) {
    std::lock_guard lock(state->mu);
    if (state->violation.empty()) {
      state->violation = metadata == nullptr
                             ? "emit_instance_metadata was given a NULL pointer"
                             : fmt::format("emit_instance_metadata index {} is out of range "
                                           "(the call has {} nodes)",
                                           index, state->expected_items);
    }
    return false;
  }
  // The shape first (nothing is read through an inconsistent pointer/length pair), then the
  // content: the SDK's checks, shared with the fake host.
  sdk::InstanceMetadata m;
  auto declared = self.declarations(host);
  std::string problem = sdk::acceptMetadata(
      metadata, declared ? std::string_view(declared->provider_id_prefix) : "", &m);
  if (!problem.empty() && state->expected_items != 1) {
    // One node's result is void; the plugin broke the contract all the same (counted, so
    // ccm-provider-check fails it).
    self.violation(host, "invalid_output", "invalid instance metadata in a batch: " + problem);
  }
  std::lock_guard lock(state->mu);
  if (!problem.empty()) {
    if (state->expected_items == 1) {
      state->violation = "invalid instance metadata: " + problem;
    } else {
      state->item_errors[index] =
          Status(Code::Internal, "provider returned invalid instance metadata: " + problem);
    }
    return false;
  }
  state->metadata[index] = std::move(m);
  return true;
}

bool HostServices::emitItemError(ccm_host_handle host, uint64_t call_id, size_t index,
                                 ccm_status status, ccm_str message) {
  auto& self = instance();
  auto state = self.callFor(host, call_id, OutputKind::Metadata, "emit_item_error");
  if (!state) {
    return false;
  }
  std::lock_guard lock(state->mu);
  if (index >= state->expected_items) {
    return false;
  }
  Code code = codeFromInt(status);
  if (code == Code::Ok) {
    code = Code::Internal;
  }
  state->item_errors[index] = Status(code, log::redact(sanitize(message, kMaxErrorBytes)));
  return true;
}

bool HostServices::emitLbStatus(ccm_host_handle host, uint64_t call_id,
                                const ccm_lb_status* status) {
  auto state = instance().callFor(host, call_id, OutputKind::LbStatus, "emit_lb_status");
  if (!state) {
    return false;
  }
  if (status == nullptr) {
    std::lock_guard lock(state->mu);
    state->violation = "emit_lb_status was given a NULL pointer";
    return false;
  }
  // A 1.0 plugin's struct has no annotation fields (or, built against a newer header, fields
  // it does not mean): read them only from a plugin that chose minor 1 or later. The shape
  // first: nothing is read through an inconsistent pointer/length pair.
  auto declared = instance().declarations(host);
  bool v11 = declared && declared->abi_minor >= 1;
  sdk::LoadBalancerStatus s;
  std::string problem = sdk::acceptLbStatus(
      status, v11, declared ? std::string_view(declared->annotation_domain) : "", &s);
  std::lock_guard lock(state->mu);
  if (!problem.empty()) {
    state->violation = "invalid load balancer status: " + problem;
    return false;
  }
  state->lb_status = std::move(s);
  return true;
}

bool HostServices::emitRoute(ccm_host_handle host, uint64_t call_id, const ccm_route* route) {
  auto state = instance().callFor(host, call_id, OutputKind::Routes, "emit_route");
  if (!state) {
    return false;
  }
  if (route == nullptr) {
    std::lock_guard lock(state->mu);
    state->violation = "emit_route was given a NULL pointer";
    return false;
  }
  sdk::Route r;
  std::string problem = sdk::acceptRoute(route, &r);
  std::lock_guard lock(state->mu);
  if (!problem.empty()) {
    state->violation = "invalid route: " + problem;
    return false;
  }
  if (state->routes.size() >= 1000000) {
    state->violation = "more than a million routes";
    return false;
  }
  state->routes.push_back(std::move(r));
  return true;
}

bool HostServices::emitString(ccm_host_handle host, uint64_t call_id, ccm_str value) {
  auto state = instance().callFor(host, call_id, OutputKind::String, "emit_string");
  if (!state) {
    return false;
  }
  std::string accepted;
  std::string problem = sdk::acceptString(value, &accepted);
  std::lock_guard lock(state->mu);
  if (!problem.empty()) {
    state->violation = "invalid string: " + problem;
    return false;
  }
  state->string_value = std::move(accepted);
  return true;
}

}  // namespace ccm::plugin
