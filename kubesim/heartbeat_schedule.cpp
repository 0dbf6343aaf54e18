// HeartbeatSchedule: a min-heap of due beats with lazy removal.
#include "kubesim/heartbeat_schedule.hpp"

#include <algorithm>

namespace ccm::kubesim {
namespace {

size_t index(HeartbeatSchedule::Beat beat) {
  return beat == HeartbeatSchedule::Beat::Lease ? 0 : 1;
}

}  // namespace

bool HeartbeatSchedule::later(const Entry& a, const Entry& b) {
  if (a.at != b.at) {
    return a.at > b.at;
  }
  return a.sequence > b.sequence;
}

bool HeartbeatSchedule::isLive(const Entry& e) const {
  auto it = slots_.find(e.node);
  if (it == slots_.end()) {
    return false;
  }
  size_t i = index(e.beat);
  return it->second.placed[i] && it->second.generation[i] == e.generation;
}

void HeartbeatSchedule::place(const std::string& node, Beat beat, Clock::time_point at) {
  Slot& slot = slots_[node];
  size_t i = index(beat);
  if (!slot.placed[i]) {
    slot.placed[i] = true;
    ++live_;
  }
  slot.generation[i] = next_generation_++;
  heap_.push_back(Entry{at, next_sequence_++, slot.generation[i], beat, node});
  std::push_heap(heap_.begin(), heap_.end(), later);
  compactIfNeeded();
}

void HeartbeatSchedule::drop(const std::string& node, Beat beat) {
  auto it = slots_.find(node);
  if (it == slots_.end()) {
    return;
  }
  size_t i = index(beat);
  if (it->second.placed[i]) {
    it->second.placed[i] = false;
    --live_;
  }
  if (!it->second.placed[0] && !it->second.placed[1]) {
    slots_.erase(it);
  }
  compactIfNeeded();
}

void HeartbeatSchedule::remove(const std::string& node) {
  auto it = slots_.find(node);
  if (it == slots_.end()) {
    return;
  }
  live_ -= static_cast<size_t>(it->second.placed[0]) + static_cast<size_t>(it->second.placed[1]);
  slots_.erase(it);
  compactIfNeeded();
}

void HeartbeatSchedule::clear() {
  slots_.clear();
  heap_.clear();
  live_ = 0;
}

void HeartbeatSchedule::popTop() {
  std::pop_heap(heap_.begin(), heap_.end(), later);
  heap_.pop_back();
}

void HeartbeatSchedule::dropStaleTop() {
  while (!heap_.empty() && !isLive(heap_.front())) {
    popTop();
  }
}

std::vector<HeartbeatSchedule::Due> HeartbeatSchedule::takeDue(Clock::time_point now) {
  std::vector<Due> due;
  for (dropStaleTop(); !heap_.empty() && heap_.front().at <= now; dropStaleTop()) {
    Entry& top = heap_.front();
    due.push_back(Due{std::move(top.node), top.beat, top.at});
    popTop();
    // The entry was live: its slot exists and loses this beat.
    auto it = slots_.find(due.back().node);
    it->second.placed[index(due.back().beat)] = false;
    --live_;
    if (!it->second.placed[0] && !it->second.placed[1]) {
      slots_.erase(it);
    }
  }
  return due;
}

std::optional<HeartbeatSchedule::Clock::time_point> HeartbeatSchedule::nextDue() {
  dropStaleTop();
  if (heap_.empty()) {
    return std::nullopt;
  }
  return heap_.front().at;
}

void HeartbeatSchedule::compactIfNeeded() {
  // Stale entries only cost memory and a skip when they surface; rebuild once they are more
  // than half of the heap (amortised O(1) per placement).
  if (heap_.size() < 64 || heap_.size() <= 2 * live_) {
    return;
  }
  std::erase_if(heap_, [this](const Entry& e) { return !isLive(e); });
  std::make_heap(heap_.begin(), heap_.end(), later);
}

}  // namespace ccm::kubesim
