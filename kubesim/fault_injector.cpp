// FaultInjector: rule matching and injected responses.
#include "kubesim/fault_injector.hpp"

#include <algorithm>
#include <cctype>

#include "kubesim/api_error.hpp"

namespace ccm::kubesim {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<std::chrono::milliseconds> parseDuration(std::string_view s) {
  if (s.empty()) {
    return std::nullopt;
  }
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) {
    ++i;
  }
  if (i == 0) {
    return std::nullopt;
  }
  double v = std::stod(std::string(s.substr(0, i)));
  std::string_view unit = s.substr(i);
  if (unit.empty() || unit == "ms") {
    return std::chrono::milliseconds(static_cast<int64_t>(v));
  }
  if (unit == "s") {
    return std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
  }
  if (unit == "m") {
    return std::chrono::milliseconds(static_cast<int64_t>(v * 60000));
  }
  return std::nullopt;
}

bool applyField(FaultRule& r, std::string_view key, std::string_view value, std::string* error) {
  try {
    if (key == "verb") {
      r.verb = lower(value);
    } else if (key == "path") {
      r.path = std::string(value);
    } else if (key == "action") {
      if (value == "error") {
        r.action = FaultRule::Action::Error;
      } else if (value == "latency") {
        r.action = FaultRule::Action::Latency;
      } else if (value == "drop" || value == "close") {
        r.action = FaultRule::Action::Drop;
      } else if (value == "goaway") {
        r.action = FaultRule::Action::GoAway;
      } else if (value == "reset") {
        r.action = FaultRule::Action::Reset;
      } else {
        *error = "unknown action " + std::string(value) + " (error, latency, drop, goaway, reset)";
        return false;
      }
    } else if (key == "status" || key == "code") {
      r.status = std::stoi(std::string(value));
      r.action = FaultRule::Action::Error;
    } else if (key == "retryAfter" || key == "retryAfterSeconds") {
      r.retry_after_seconds = std::stoi(std::string(value));
    } else if (key == "style") {
      r.apf_style = value == "apf";
    } else if (key == "message") {
      r.message = std::string(value);
    } else if (key == "latency" || key == "latencyMs") {
      auto d = parseDuration(value);
      if (!d) {
        *error = "bad latency " + std::string(value);
        return false;
      }
      r.latency = *d;
      if (r.action == FaultRule::Action::Error && r.status == 500) {
        r.action = FaultRule::Action::Latency;
      }
    } else if (key == "afterEvents") {
      r.after_events = std::stoll(std::string(value));
    } else if (key == "count") {
      r.count = std::stoll(std::string(value));
    } else if (key == "probability") {
      r.probability = std::stod(std::string(value));
    } else {
      *error = "unknown fault field " + std::string(key);
      return false;
    }
  } catch (const std::exception&) {
    *error = "bad value for " + std::string(key) + ": " + std::string(value);
    return false;
  }
  return true;
}

}  // namespace

std::string FaultRule::toJson() const {
  std::string action_name = action == Action::Error     ? "error"
                            : action == Action::Latency ? "latency"
                            : action == Action::GoAway  ? "goaway"
                            : action == Action::Reset   ? "reset"
                                                        : "drop";
  return R"({"id":)" + std::to_string(id) + R"(,"verb":)" + jsonString(verb) + R"(,"path":)" +
         jsonString(path) + R"(,"action":)" + jsonString(action_name) + R"(,"status":)" +
         std::to_string(status) + R"(,"retryAfterSeconds":)" + std::to_string(retry_after_seconds) +
         R"(,"style":)" + jsonString(apf_style ? "apf" : "status") + R"(,"message":)" +
         jsonString(message) + R"(,"latencyMs":)" + std::to_string(latency.count()) +
         R"(,"afterEvents":)" + std::to_string(after_events) + R"(,"count":)" +
         std::to_string(count) + R"(,"probability":)" +
         std::to_string(probability) + R"(,"fired":)" + std::to_string(fired) + "}";
}

std::optional<FaultRule> FaultRule::fromJson(const JsonValue& v, std::string* error) {
  if (!v.IsObject()) {
    *error = "a fault rule must be a JSON object";
    return std::nullopt;
  }
  FaultRule r;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    std::string key(it->name.GetString(), it->name.GetStringLength());
    std::string value;
    if (it->value.IsString()) {
      value = it->value.GetString();
    } else if (it->value.IsNumber() || it->value.IsBool()) {
      value = ccm::kubesim::toJson(it->value);
    } else {
      *error = "bad value for " + key;
      return std::nullopt;
    }
    if (key == "latencyMs") {
      value += "ms";
    }
    if (!applyField(r, key, value, error)) {
      return std::nullopt;
    }
  }
  return r;
}

std::optional<FaultRule> FaultRule::fromText(std::string_view text, std::string* error) {
  FaultRule r;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (part.empty()) {
      continue;
    }
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      *error = "expected key=value in " + std::string(part);
      return std::nullopt;
    }
    if (!applyField(r, part.substr(0, eq), part.substr(eq + 1), error)) {
      return std::nullopt;
    }
  }
  return r;
}

bool FaultInjector::globMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0;
  size_t t = 0;
  size_t star = std::string_view::npos;
  size_t mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

int FaultInjector::add(FaultRule rule) {
  std::lock_guard lock(mu_);
  rule.id = next_id_++;
  rule.fired = 0;
  rules_.push_back(std::move(rule));
  return rules_.back().id;
}

bool FaultInjector::remove(int id) {
  std::lock_guard lock(mu_);
  auto it = std::remove_if(rules_.begin(), rules_.end(), [&](const auto& r) { return r.id == id; });
  bool found = it != rules_.end();
  rules_.erase(it, rules_.end());
  return found;
}

void FaultInjector::clear() {
  std::lock_guard lock(mu_);
  rules_.clear();
  latency_ = std::chrono::milliseconds(0);
  jitter_ = std::chrono::milliseconds(0);
}

std::vector<FaultRule> FaultInjector::rules() const {
  std::lock_guard lock(mu_);
  return rules_;
}

void FaultInjector::setLatency(std::chrono::milliseconds base, std::chrono::milliseconds jitter) {
  std::lock_guard lock(mu_);
  latency_ = base;
  jitter_ = jitter;
}

HttpResponse FaultInjector::errorFor(const FaultRule& rule, const RequestInfo& info) const {
  std::string msg = rule.message.empty() ? "injected fault" : rule.message;
  ApiError e;
  switch (rule.status) {
    case 409:
      e = ApiError::conflict(info.api_group, info.resource, info.name,
                             rule.message.empty()
                                 ? "the object has been modified; please apply your changes to "
                                   "the latest version and try again"
                                 : rule.message);
      break;
    case 429:
      if (rule.apf_style) {
        HttpResponse r;
        r.status = 429;
        r.content_type = "text/plain; charset=utf-8";
        r.body = "Too many requests, please try again later.\n";
        r.headers.emplace_back("Retry-After",
                               std::to_string(std::max(1, rule.retry_after_seconds)));
        r.headers.emplace_back("X-Kubernetes-PF-FlowSchema-UID",
                               "00000000-0000-0000-0000-000000000000");
        r.headers.emplace_back("X-Kubernetes-PF-PriorityLevel-UID",
                               "00000000-0000-0000-0000-000000000000");
        return r;
      }
      e = ApiError::tooManyRequests(msg, rule.retry_after_seconds);
      break;
    case 401:
      e = ApiError::unauthorized();
      break;
    case 403:
      e = ApiError::forbidden(info.api_group, info.resource, info.name, msg);
      break;
    case 404:
      e = info.resource.empty() ? ApiError::notFoundPath()
                                : ApiError::notFound(info.api_group, info.resource, info.name);
      break;
    case 410:
      e = ApiError::expired(rule.message.empty() ? "too old resource version" : msg);
      break;
    case 500:
      e = ApiError::internal(msg);
      break;
    case 503:
      e = ApiError::serviceUnavailable(
          rule.message.empty() ? "the server is currently unable to handle the request" : msg);
      break;
    case 504:
      e = ApiError::timeout(msg, rule.retry_after_seconds);
      break;
    default:
      e = ApiError(rule.status, "InternalError", msg);
      break;
  }
  if (rule.retry_after_seconds > 0 && rule.status != 429) {
    e.mutableDetails().retry_after_seconds = rule.retry_after_seconds;
    e.headers().emplace_back("Retry-After", std::to_string(rule.retry_after_seconds));
  }
  HttpResponse r;
  r.status = static_cast<unsigned>(e.code());
  r.body = e.toJson();
  r.headers = e.headers();
  return r;
}

FaultInjector::Decision FaultInjector::evaluate(std::string_view method, const RequestInfo& info) {
  Decision d;
  std::lock_guard lock(mu_);
  d.delay = latency_;
  if (jitter_.count() > 0) {
    d.delay += std::chrono::milliseconds(randomInt(0, jitter_.count()));
  }
  std::string m = lower(method);
  for (auto& rule : rules_) {
    if (rule.count == 0) {
      continue;
    }
    if (!rule.verb.empty() && rule.verb != "*" && rule.verb != info.verb && rule.verb != m) {
      continue;
    }
    if (!globMatch(rule.path, info.path)) {
      continue;
    }
    if (rule.probability < 1.0 && randomUnit() >= rule.probability) {
      continue;
    }
    if (rule.count > 0) {
      --rule.count;
    }
    ++rule.fired;
    switch (rule.action) {
      case FaultRule::Action::Latency:
        d.delay += rule.latency;
        continue;  // latency rules stack with others
      case FaultRule::Action::Drop:
        d.drop = true;
        d.delay += rule.latency;
        return d;
      case FaultRule::Action::GoAway:
        d.goaway = true;  // the request is served; its connection is told to go away
        d.delay += rule.latency;
        continue;
      case FaultRule::Action::Reset:
        d.reset = true;
        d.reset_after_events = info.verb == "watch" ? rule.after_events : -1;
        d.delay += rule.latency;
        return d;
      case FaultRule::Action::Error:
        d.delay += rule.latency;
        d.response = errorFor(rule, info);
        return d;
    }
  }
  return d;
}

}  // namespace ccm::kubesim

namespace ccm::kubesim {

ResetAfterEvents::ResetAfterEvents(std::shared_ptr<StreamSource> inner, int64_t events)
    : inner_(std::move(inner)), left_(events) {}

void ResetAfterEvents::start(const boost::asio::any_io_executor& strand) { inner_->start(strand); }

bool ResetAfterEvents::poll(std::string& out) {
  if (tripped_) {
    return false;
  }
  size_t pos = out.size();
  bool more = left_ > 0 ? inner_->poll(out) : true;
  // Watch events are one line each: keep the first left_ of them, then trip.
  while (left_ > 0) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) {
      break;
    }
    pos = nl + 1;
    --left_;
  }
  if (left_ == 0) {
    out.resize(pos);
    tripped_ = true;
    return false;
  }
  return more;
}

void ResetAfterEvents::arm(std::function<void()> wake) { inner_->arm(std::move(wake)); }

void ResetAfterEvents::stop() { inner_->stop(); }

}  // namespace ccm::kubesim
