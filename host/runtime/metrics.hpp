// A Prometheus metrics registry: counter, gauge and histogram families with labels, and the
// text exposition format (version 0.0.4) served on /metrics.
//
// Families are created once (usually at start-up) and never removed; a labelled child is
// created on first use and its address stays stable, so hot paths can keep a reference.
// THREAD: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ccm::metrics {

enum class Kind { Counter, Gauge, Histogram };

// Upstream's stability levels appear in HELP as "[ALPHA] ..." / "[BETA] ...".
enum class Stability { None, Alpha, Beta, Stable };

class AtomicDouble {
 public:
  void add(double v);
  void set(double v) { bits_.store(toBits(v), std::memory_order_relaxed); }
  double get() const { return fromBits(bits_.load(std::memory_order_relaxed)); }

 private:
  static uint64_t toBits(double v);
  static double fromBits(uint64_t b);
  std::atomic<uint64_t> bits_{0};
};

class Counter {
 public:
  void inc(double v = 1.0) { value_.add(v); }
  double value() const { return value_.get(); }

 private:
  AtomicDouble value_;
};

class Gauge {
 public:
  void set(double v) { value_.set(v); }
  void inc(double v = 1.0) { value_.add(v); }
  void dec(double v = 1.0) { value_.add(-v); }
  double value() const { return value_.get(); }

 private:
  AtomicDouble value_;
};

class Histogram {
 public:
  explicit Histogram(const std::vector<double>* bounds);
  void observe(double v);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.get(); }
  // Cumulative count of observations <= bounds[i].
  uint64_t bucketCount(size_t i) const;

 private:
  const std::vector<double>* bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // non-cumulative, one per bound
  std::atomic<uint64_t> count_{0};
  AtomicDouble sum_;
};

// Exponential buckets: start, start*factor, ... (count values).
std::vector<double> exponentialBuckets(double start, double factor, size_t count);

// A family: one metric name, its help, its label names and one child per label-value tuple.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds = {})
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)),
        bounds_(std::move(bounds)) {}

  // The child for these label values (created on first use). values.size() must equal the
  // number of label names; extra values are ignored and missing ones read as "".
  T& labels(const std::vector<std::string>& values);
  T& noLabels() { return labels({}); }

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& labelNames() const { return label_names_; }
  const std::vector<double>& bounds() const { return bounds_; }

  // Visits every child in label order.
  template <typename Fn>
  void forEach(Fn&& fn) const {
    std::lock_guard lock(mu_);
    for (const auto& [values, child] : children_) {
      fn(values, *child);
    }
  }

 private:
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;  // guarded by mu_
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Returns the family with this name, creating it on first use. Returns nullptr when the
  // name exists with another kind or other label names (the caller logs and drops).
  Family<Counter>* counter(std::string_view name, std::string_view help,
                           std::vector<std::string> label_names = {},
                           Stability stability = Stability::None);
  Family<Gauge>* gauge(std::string_view name, std::string_view help,
                       std::vector<std::string> label_names = {},
                       Stability stability = Stability::None);
  Family<Histogram>* histogram(std::string_view name, std::string_view help,
                               std::vector<double> bounds,
                               std::vector<std::string> label_names = {},
                               Stability stability = Stability::None);

  // Prometheus text exposition of every family, sorted by name.
  std::string exposition() const;

  // Text in the exposition format merged into every exposition() after this registry's own
  // families: metrics kept elsewhere (each provider child process's, with
  // --provider-isolation=process). A family already present (the host's own or an earlier
  // source's) is described once and gets the source's samples. Sources are called in the
  // order they were added, without the registry's lock. Returns the key that removes it.
  uint64_t addExternalSource(std::function<std::string()> source);
  // Removes a source; waits for a call in progress to end.
  void removeExternalSource(uint64_t key);

  // Test helper: the value of a counter or gauge child, or of a histogram's count; -1 when
  // absent.
  double valueForTest(std::string_view name, const std::vector<std::string>& values = {}) const;

 private:
  struct Entry {
    Kind kind;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
  };
  static std::string helpText(std::string_view help, Stability stability);
  std::string ownExposition() const;

  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> families_;  // guarded by mu_
  mutable std::mutex source_mu_;  // held while the sources run
  std::map<uint64_t, std::function<std::string()>> external_sources_;  // guarded by source_mu_
  uint64_t next_source_key_ = 1;                                       // guarded by source_mu_
};

template <typename T>
T& Family<T>::labels(const std::vector<std::string>& values) {
  std::vector<std::string> key(label_names_.size());
  for (size_t i = 0; i < key.size() && i < values.size(); ++i) {
    key[i] = values[i];
  }
  std::lock_guard lock(mu_);
  auto it = children_.find(key);
  if (it == children_.end()) {
    std::unique_ptr<T> child;
    if constexpr (std::is_same_v<T, Histogram>) {
      child = std::make_unique<T>(&bounds_);
    } else {
      child = std::make_unique<T>();
    }
    it = children_.emplace(std::move(key), std::move(child)).first;
  }
  return *it->second;
}

}  // namespace ccm::metrics
