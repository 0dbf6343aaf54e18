// Unit tests: the simulated kubelets' heartbeat schedule (kubesim/heartbeat_schedule.*),
// driven with made-up time points the way KubeletSimulator drives it: a round every 50 ms
// takes the due beats and places each one again a period later.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "kubesim/heartbeat_schedule.hpp"

namespace ccm::kubesim {
namespace {

using Clock = HeartbeatSchedule::Clock;
using Beat = HeartbeatSchedule::Beat;
using std::chrono::milliseconds;

constexpr milliseconds kRound{50};

std::string nodeName(int i) {
  return "node-" + std::to_string(i);
}

// Runs rounds from `from` (exclusive) to `to` (inclusive), placing each taken beat again
// `period` after the round, and records every beat per node and kind.
struct Driver {
  HeartbeatSchedule& schedule;
  milliseconds lease_period;
  milliseconds status_period;
  std::map<std::string, std::vector<Clock::time_point>> leases;
  std::map<std::string, std::vector<Clock::time_point>> statuses;

  Clock::time_point run(Clock::time_point from, Clock::time_point to) {
    Clock::time_point now = from;
    while (now + kRound <= to) {
      now += kRound;
      std::set<std::pair<std::string, Beat>> this_round;
      Clock::time_point previous{};
      for (auto& due : schedule.takeDue(now)) {
        CHECK(due.at <= now);
        CHECK(due.at >= previous);  // earliest first
        previous = due.at;
        // At most one beat of a kind per node in a round.
        CHECK(this_round.emplace(due.node, due.beat).second);
        if (due.beat == Beat::Lease) {
          leases[due.node].push_back(now);
          schedule.place(due.node, Beat::Lease, now + lease_period);
        } else {
          statuses[due.node].push_back(now);
          schedule.place(due.node, Beat::Status, now + status_period);
        }
      }
    }
    return now;
  }
};

// Every gap between two beats of one node is the period, delayed by at most one round.
void checkPeriodic(const std::vector<Clock::time_point>& beats, milliseconds period) {
  for (size_t i = 1; i < beats.size(); ++i) {
    auto gap = beats[i] - beats[i - 1];
    CHECK(gap >= period);
    CHECK(gap <= period + kRound);
  }
}

// How many beats a period apart fit from `first` to `last`, both included.
size_t beatsBetween(Clock::time_point first, Clock::time_point last, milliseconds period) {
  return static_cast<size_t>((last - first) / period) + 1;
}

TEST_CASE("heartbeat schedule: each node beats once per period, none skipped or doubled") {
  HeartbeatSchedule schedule;
  std::mt19937 random(29);
  const milliseconds period{10000};
  const int nodes = 500;
  Clock::time_point t0{};
  for (int i = 0; i < nodes; ++i) {
    auto spread = milliseconds(std::uniform_int_distribution<int>(0, 9999)(random));
    schedule.place(nodeName(i), Beat::Lease, t0 + spread);
    schedule.place(nodeName(i), Beat::Status, t0 + spread);
  }
  CHECK(schedule.size() == 2 * nodes);
  Driver driver{schedule, period, period, {}, {}};
  driver.run(t0, t0 + milliseconds(100000));
  REQUIRE(driver.leases.size() == nodes);
  REQUIRE(driver.statuses.size() == nodes);
  for (int i = 0; i < nodes; ++i) {
    const auto& leases = driver.leases[nodeName(i)];
    // 100 s at one beat per 10-10.05 s, the first within the first 10 s: 10 beats each.
    CHECK(leases.size() == 10);
    CHECK(leases.front() - t0 < period + kRound);
    checkPeriodic(leases, period);
    CHECK(driver.statuses[nodeName(i)] == leases);
  }
  // Every node stays placed for its next beats.
  CHECK(schedule.size() == 2 * nodes);
}

TEST_CASE("heartbeat schedule: the status period and the lease period are independent") {
  HeartbeatSchedule schedule;
  Clock::time_point t0{};
  schedule.place("a", Beat::Lease, t0 + milliseconds(100));
  schedule.place("a", Beat::Status, t0 + milliseconds(200));
  Driver driver{schedule, milliseconds(10000), milliseconds(60000), {}, {}};
  driver.run(t0, t0 + milliseconds(130000));
  CHECK(driver.leases["a"].size() == 13);
  CHECK(driver.statuses["a"].size() == 3);
  checkPeriodic(driver.leases["a"], milliseconds(10000));
  checkPeriodic(driver.statuses["a"], milliseconds(60000));
}

TEST_CASE("heartbeat schedule: placing a beat again moves it, never doubles it") {
  HeartbeatSchedule schedule;
  Clock::time_point t0{};
  schedule.place("a", Beat::Lease, t0 + milliseconds(100));
  schedule.place("a", Beat::Lease, t0 + milliseconds(300));
  CHECK(schedule.size() == 1);
  CHECK(schedule.nextDue() == t0 + milliseconds(300));
  CHECK(schedule.takeDue(t0 + milliseconds(200)).empty());
  auto due = schedule.takeDue(t0 + milliseconds(300));
  REQUIRE(due.size() == 1);
  CHECK(due[0].node == "a");
  CHECK(due[0].beat == Beat::Lease);
  CHECK(due[0].at == t0 + milliseconds(300));
  // Taken beats are no longer placed.
  CHECK(schedule.size() == 0);
  CHECK(schedule.takeDue(t0 + milliseconds(100000)).empty());
  CHECK_FALSE(schedule.nextDue().has_value());
}

TEST_CASE("heartbeat schedule: ties come out in the order they were placed") {
  HeartbeatSchedule schedule;
  Clock::time_point t0{};
  for (int i = 0; i < 20; ++i) {
    schedule.place(nodeName(i), Beat::Lease, t0);
  }
  auto due = schedule.takeDue(t0);
  REQUIRE(due.size() == 20);
  for (int i = 0; i < 20; ++i) {
    CHECK(due[static_cast<size_t>(i)].node == nodeName(i));
  }
}

TEST_CASE("heartbeat schedule: nodes added and removed while running") {
  HeartbeatSchedule schedule;
  const milliseconds period{10000};
  Clock::time_point t0{};
  for (int i = 0; i < 100; ++i) {
    schedule.place(nodeName(i), Beat::Lease, t0 + milliseconds(i * 100));
    schedule.place(nodeName(i), Beat::Status, t0 + milliseconds(i * 100));
  }
  Driver driver{schedule, period, period, {}, {}};
  auto now = driver.run(t0, t0 + milliseconds(25000));
  // Remove the even nodes; add 50 new ones.
  for (int i = 0; i < 100; i += 2) {
    schedule.remove(nodeName(i));
  }
  for (int i = 100; i < 150; ++i) {
    schedule.place(nodeName(i), Beat::Lease, now + milliseconds((i - 100) * 200));
    schedule.place(nodeName(i), Beat::Status, now + milliseconds((i - 100) * 200));
  }
  CHECK(schedule.size() == 2 * 100);
  auto removed_at = now;
  driver.run(now, now + milliseconds(40000));
  for (int i = 0; i < 150; ++i) {
    const auto& leases = driver.leases[nodeName(i)];
    checkPeriodic(leases, period);
    // Placements are on round boundaries (a placement at the start is taken by the first
    // round, 50 ms later), so each beat comes exactly a period after the one before.
    if (i < 100 && i % 2 == 0) {
      // Removed: every beat until the removal, none after it.
      auto first = t0 + std::max(milliseconds(i * 100), kRound);
      CHECK(leases.size() == beatsBetween(first, removed_at, period));
      CHECK(leases.back() <= removed_at);
    } else if (i < 100) {
      // Kept: beats on, with no gap at the removal of the others.
      auto first = t0 + std::max(milliseconds(i * 100), kRound);
      CHECK(leases.size() == beatsBetween(first, now + milliseconds(40000), period));
    } else {
      // Added: first beat at its placement, then every period.
      auto first = removed_at + std::max(milliseconds((i - 100) * 200), kRound);
      REQUIRE_FALSE(leases.empty());
      CHECK(leases.front() == first);
      CHECK(leases.size() == beatsBetween(first, now + milliseconds(40000), period));
    }
  }
  // Removing and placing again starts afresh, once.
  schedule.remove(nodeName(0));
  schedule.place(nodeName(0), Beat::Lease, t0);
  schedule.place(nodeName(0), Beat::Lease, t0);
  auto due = schedule.takeDue(t0);
  REQUIRE(due.size() == 1);
  CHECK(due[0].node == nodeName(0));
}

TEST_CASE("heartbeat schedule: dropping one beat keeps the other") {
  HeartbeatSchedule schedule;
  Clock::time_point t0{};
  schedule.place("a", Beat::Lease, t0);
  schedule.place("a", Beat::Status, t0 + milliseconds(10));
  schedule.drop("a", Beat::Lease);
  CHECK(schedule.size() == 1);
  CHECK(schedule.nextDue() == t0 + milliseconds(10));
  auto due = schedule.takeDue(t0 + milliseconds(10));
  REQUIRE(due.size() == 1);
  CHECK(due[0].beat == Beat::Status);
  schedule.drop("a", Beat::Status);  // not placed any more: nothing changes
  schedule.remove("missing");
  CHECK(schedule.size() == 0);
}

TEST_CASE("heartbeat schedule: stale entries do not pile up") {
  HeartbeatSchedule schedule;
  Clock::time_point t0{};
  schedule.place("steady", Beat::Lease, t0 + milliseconds(5));
  // A node whose heartbeats are toggled over and over leaves one stale entry per toggle.
  for (int i = 0; i < 10000; ++i) {
    schedule.place("toggled", Beat::Lease, t0 + milliseconds(i));
    if (i % 2 == 1) {
      schedule.remove("toggled");
    }
    CHECK(schedule.heapSize() <= 64);
  }
  CHECK(schedule.size() == 1);
  auto due = schedule.takeDue(t0 + milliseconds(1000000));
  REQUIRE(due.size() == 1);
  CHECK(due[0].node == "steady");
  schedule.clear();
  CHECK(schedule.heapSize() == 0);
}

}  // namespace
}  // namespace ccm::kubesim
