// HeartbeatSchedule: when each simulated kubelet's next Lease renewal and status post are due,
// kept in a min-heap ordered by due time, so finding the due beats costs O(due * log n)
// instead of a walk over every node. Each node has at most one live placement per beat kind:
// placing a beat again moves it (the older heap entry is left behind as stale and skipped
// when it surfaces), and removing a node drops both of its beats. Stale entries are
// compacted away once they outnumber the live ones.
//
// The caller supplies the time, so the schedule itself is deterministic (unit tests drive it
// with made-up time points).
//
// THREAD: not synchronised; KubeletSimulator guards it with its own mutex.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ccm::kubesim {

class HeartbeatSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Beat : uint8_t { Lease, Status };

  struct Due {
    std::string node;
    Beat beat;
    Clock::time_point at;  // when it was due
  };

  // Places `node`'s `beat` at `at`, replacing any earlier placement of that beat.
  void place(const std::string& node, Beat beat, Clock::time_point at);
  // Drops one beat of `node` (it is not due again until placed again).
  void drop(const std::string& node, Beat beat);
  // Drops both beats of `node`.
  void remove(const std::string& node);
  void clear();

  // Takes every beat due at or before `now` out of the schedule, earliest first (ties in the
  // order they were placed). The caller places the next ones.
  std::vector<Due> takeDue(Clock::time_point now);

  // The earliest live due time, if any beat is placed.
  std::optional<Clock::time_point> nextDue();

  // Live placements (at most two per node).
  size_t size() const { return live_; }
  // Heap entries, stale ones included (for tests of the compaction).
  size_t heapSize() const { return heap_.size(); }

 private:
  struct Slot {
    uint64_t generation[2] = {0, 0};  // per beat: the generation of its live heap entry
    bool placed[2] = {false, false};
  };
  struct Entry {
    Clock::time_point at;
    uint64_t sequence;    // placement order: ties keep it
    uint64_t generation;  // matches the slot's while this entry is the live one
    Beat beat;
    std::string node;
  };
  static bool later(const Entry& a, const Entry& b);

  bool isLive(const Entry& e) const;
  void popTop();
  void dropStaleTop();
  void compactIfNeeded();

  std::unordered_map<std::string, Slot> slots_;
  std::vector<Entry> heap_;  // a min-heap under later()
  uint64_t next_generation_ = 1;
  uint64_t next_sequence_ = 0;
  size_t live_ = 0;
};

}  // namespace ccm::kubesim
