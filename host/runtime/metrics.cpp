// Metrics registry implementation and the Prometheus text exposition.
#include "host/runtime/metrics.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "host/runtime/exposition_merge.hpp"

namespace ccm::metrics {
namespace {

std::string escapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string escapeHelp(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string formatValue(double v) {
  if (std::isinf(v)) {
    return v > 0 ? "+Inf" : "-Inf";
  }
  if (std::isnan(v)) {
    return "NaN";
  }
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);
}

std::string labelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     std::string_view extra_name = {}, std::string_view extra_value = {}) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", names[i], escapeLabel(i < values.size() ? values[i] : ""));
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  if (!out.empty()) {
    out += "}";
  }
  return out;
}

}  // namespace

uint64_t AtomicDouble::toBits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

double AtomicDouble::fromBits(uint64_t b) {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

void AtomicDouble::add(double v) {
  uint64_t old = bits_.load(std::memory_order_relaxed);
  while (!bits_.compare_exchange_weak(old, toBits(fromBits(old) + v), std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds->size()]) {
  for (size_t i = 0; i < bounds_->size(); ++i) {
    buckets_[i].store(0);
  }
}

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds_->size(); ++i) {
    if (v <= (*bounds_)[i]) {
      buckets_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.add(v);
}

uint64_t Histogram::bucketCount(size_t i) const {
  uint64_t total = 0;
  for (size_t j = 0; j <= i && j < bounds_->size(); ++j) {
    total += buckets_[j].load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<double> exponentialBuckets(double start, double factor, size_t count) {
  std::vector<double> out;
  double v = start;
  for (size_t i = 0; i < count; ++i) {
    out.push_back(v);
    v *= factor;
  }
  return out;
}

std::string Registry::helpText(std::string_view help, Stability stability) {
  switch (stability) {
    case Stability::Alpha: return fmt::format("[ALPHA] {}", help);
    case Stability::Beta: return fmt::format("[BETA] {}", help);
    case Stability::Stable: return fmt::format("[STABLE] {}", help);
    case Stability::None: break;
  }
  return std::string(help);
}

Family<Counter>* Registry::counter(std::string_view name, std::string_view help,
                                   std::vector<std::string> label_names, Stability stability) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.kind != Kind::Counter || it->second.counter->labelNames() != label_names) {
      return nullptr;
    }
    return it->second.counter.get();
  }
  Entry e{Kind::Counter, std::make_unique<Family<Counter>>(std::string(name),
                                                           helpText(help, stability),
                                                           std::move(label_names)),
          nullptr, nullptr};
  auto* out = e.counter.get();
  families_.emplace(std::string(name), std::move(e));
  return out;
}

Family<Gauge>* Registry::gauge(std::string_view name, std::string_view help,
                               std::vector<std::string> label_names, Stability stability) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.kind != Kind::Gauge || it->second.gauge->labelNames() != label_names) {
      return nullptr;
    }
    return it->second.gauge.get();
  }
  Entry e{Kind::Gauge, nullptr,
          std::make_unique<Family<Gauge>>(std::string(name), helpText(help, stability),
                                          std::move(label_names)),
          nullptr};
  auto* out = e.gauge.get();
  families_.emplace(std::string(name), std::move(e));
  return out;
}

Family<Histogram>* Registry::histogram(std::string_view name, std::string_view help,
                                       std::vector<double> bounds,
                                       std::vector<std::string> label_names,
                                       Stability stability) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    if (it->second.kind != Kind::Histogram ||
        it->second.histogram->labelNames() != label_names) {
      return nullptr;
    }
    return it->second.histogram.get();
  }
  Entry e{Kind::Histogram, nullptr, nullptr,
          std::make_unique<Family<Histogram>>(std::string(name), helpText(help, stability),
                                              std::move(label_names), std::move(bounds))};
  auto* out = e.histogram.get();
  families_.emplace(std::string(name), std::move(e));
  return out;
}

uint64_t Registry::addExternalSource(std::function<std::string()> source) {
  std::lock_guard lock(source_mu_);
  uint64_t key = next_source_key_++;
  external_sources_.emplace(key, std::move(source));
  return key;
}

void Registry::removeExternalSource(uint64_t key) {
  std::lock_guard lock(source_mu_);
  external_sources_.erase(key);
}

std::string Registry::exposition() const {
  std::vector<std::string> texts{ownExposition()};
  {
    std::lock_guard lock(source_mu_);
    for (const auto& [key, source] : external_sources_) {
      texts.push_back(source());
    }
  }
  if (texts.size() == 1) {
    return std::move(texts.front());
  }
  return mergeExpositions(texts);
}

std::string Registry::ownExposition() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& family : families_) {
    // A plain reference, not a structured binding: clang 14 (the fuzz build) cannot capture
    // bindings in the lambdas below.
    const std::string& name = family.first;
    const auto& entry = family.second;
    switch (entry.kind) {
      case Kind::Counter: {
        const auto& f = *entry.counter;
        out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, escapeHelp(f.help()), name);
        f.forEach([&](const std::vector<std::string>& values, const Counter& c) {
          out += fmt::format("{}{} {}\n", name, labelSet(f.labelNames(), values),
                             formatValue(c.value()));
        });
        break;
      }
      case Kind::Gauge: {
        const auto& f = *entry.gauge;
        out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, escapeHelp(f.help()), name);
        f.forEach([&](const std::vector<std::string>& values, const Gauge& g) {
          out += fmt::format("{}{} {}\n", name, labelSet(f.labelNames(), values),
                             formatValue(g.value()));
        });
        break;
      }
      case Kind::Histogram: {
        const auto& f = *entry.histogram;
        out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, escapeHelp(f.help()),
                           name);
        f.forEach([&](const std::vector<std::string>& values, const Histogram& h) {
          for (size_t i = 0; i < f.bounds().size(); ++i) {
            out += fmt::format("{}_bucket{} {}\n", name,
                               labelSet(f.labelNames(), values, "le", formatValue(f.bounds()[i])),
                               h.bucketCount(i));
          }
          out += fmt::format("{}_bucket{} {}\n", name,
                             labelSet(f.labelNames(), values, "le", "+Inf"), h.count());
          out += fmt::format("{}_sum{} {}\n", name, labelSet(f.labelNames(), values),
                             formatValue(h.sum()));
          out += fmt::format("{}_count{} {}\n", name, labelSet(f.labelNames(), values),
                             h.count());
        });
        break;
      }
    }
  }
  return out;
}

double Registry::valueForTest(std::string_view name, const std::vector<std::string>& values) const {
  Kind kind;
  const void* fam = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = families_.find(name);
    if (it == families_.end()) {
      return -1;
    }
    kind = it->second.kind;
    fam = kind == Kind::Counter ? static_cast<const void*>(it->second.counter.get())
          : kind == Kind::Gauge ? static_cast<const void*>(it->second.gauge.get())
                                : static_cast<const void*>(it->second.histogram.get());
  }
  double result = -1;
  auto match = [&](const std::vector<std::string>& v) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i >= v.size() || v[i] != values[i]) {
        return false;
      }
    }
    return true;
  };
  if (kind == Kind::Counter) {
    static_cast<const Family<Counter>*>(fam)->forEach(
        [&](const std::vector<std::string>& v, const Counter& c) {
          if (match(v)) {
            result = (result < 0 ? 0 : result) + c.value();
          }
        });
  } else if (kind == Kind::Gauge) {
    static_cast<const Family<Gauge>*>(fam)->forEach(
        [&](const std::vector<std::string>& v, const Gauge& g) {
          if (match(v)) {
            result = (result < 0 ? 0 : result) + g.value();
          }
        });
  } else {
    static_cast<const Family<Histogram>*>(fam)->forEach(
        [&](const std::vector<std::string>& v, const Histogram& h) {
          if (match(v)) {
            result = (result < 0 ? 0 : result) + static_cast<double>(h.count());
          }
        });
  }
  return result;
}

}  // namespace ccm::metrics
