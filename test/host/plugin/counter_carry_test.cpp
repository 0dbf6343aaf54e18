// CounterCarry: the host's view of a provider child's counters across restarts.
#include "host/plugin/isolation/counter_carry.hpp"

#include <doctest/doctest.h>

#include <string>

using ccm::plugin::isolation::CounterCarry;

namespace {

const char* const kFirst =
    "# HELP calls_total Calls.\n"
    "# TYPE calls_total counter\n"
    "calls_total{call=\"a\",code=\"ok\"} 5\n"
    "calls_total{call=\"b\",code=\"ok\"} 2\n"
    "# HELP in_flight Calls running.\n"
    "# TYPE in_flight gauge\n"
    "in_flight 4\n"
    "# HELP seconds Latency.\n"
    "# TYPE seconds histogram\n"
    "seconds_bucket{le=\"0.5\"} 3\n"
    "seconds_bucket{le=\"+Inf\"} 7\n"
    "seconds_sum 1.25\n"
    "seconds_count 7\n";

}  // namespace

TEST_CASE("the first child's text passes unchanged, and again while it lives") {
  CounterCarry carry;
  CHECK(carry.adjust(kFirst, 1) == kFirst);
  CHECK(carry.adjust(kFirst, 1) == kFirst);
}

TEST_CASE("a restarted child's counters and histograms start from the last child's values") {
  CounterCarry carry;
  (void)carry.adjust(kFirst, 1);
  const char* second =
      "# TYPE calls_total counter\n"
      "calls_total{call=\"a\",code=\"ok\"} 1\n"
      "calls_total{call=\"c\",code=\"ok\"} 9\n"
      "# TYPE in_flight gauge\n"
      "in_flight 1\n"
      "# TYPE seconds histogram\n"
      "seconds_bucket{le=\"0.5\"} 1\n"
      "seconds_bucket{le=\"+Inf\"} 1\n"
      "seconds_sum 0.5\n"
      "seconds_count 1\n";
  CHECK(carry.adjust(second, 2) ==
        "# TYPE calls_total counter\n"
        "calls_total{call=\"a\",code=\"ok\"} 6\n"
        "calls_total{call=\"c\",code=\"ok\"} 9\n"  // new: nothing to carry
        "# TYPE in_flight gauge\n"
        "in_flight 1\n"  // a gauge is the child's value
        "# TYPE seconds histogram\n"
        "seconds_bucket{le=\"0.5\"} 4\n"
        "seconds_bucket{le=\"+Inf\"} 8\n"
        "seconds_sum 1.75\n"
        "seconds_count 8\n");
  // A third child: both earlier children's last values are carried; "b", which only the
  // first child had, comes back on top of its old value.
  CHECK(carry.adjust("# TYPE calls_total counter\n"
                     "calls_total{call=\"a\",code=\"ok\"} 2\n"
                     "calls_total{call=\"b\",code=\"ok\"} 1\n",
                     3) ==
        "# TYPE calls_total counter\n"
        "calls_total{call=\"a\",code=\"ok\"} 8\n"
        "calls_total{call=\"b\",code=\"ok\"} 3\n");
}

TEST_CASE("a sample whose value is not a number passes as the child wrote it") {
  CounterCarry carry;
  (void)carry.adjust("# TYPE x_total counter\nx_total 3\n", 1);
  CHECK(carry.adjust("# TYPE x_total counter\nx_total three\n", 2) ==
        "# TYPE x_total counter\nx_total three\n");
}
