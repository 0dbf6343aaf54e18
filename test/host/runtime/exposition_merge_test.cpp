// mergeExpositions and the registry's external sources: a family in several texts is
// described once, with every text's samples.
#include <doctest/doctest.h>

#include <string>

#include "host/runtime/exposition_merge.hpp"
#include "host/runtime/metrics.hpp"

using namespace ccm;

TEST_CASE("merged expositions describe each family once and keep every sample") {
  std::string host =
      "# HELP a_total A.\n# TYPE a_total counter\na_total{provider=\"x\"} 1\n"
      "# HELP b B.\n# TYPE b gauge\nb 2\n";
  std::string child =
      "# HELP a_total A (child).\n# TYPE a_total counter\na_total{provider=\"y\"} 5\n"
      "# HELP c_seconds C.\n# TYPE c_seconds histogram\nc_seconds_bucket{le=\"+Inf\"} 1\n"
      "c_seconds_sum 0.5\nc_seconds_count 1\n";
  std::string merged = metrics::mergeExpositions({host, child, ""});
  CHECK(merged ==
        "# HELP a_total A.\n# TYPE a_total counter\na_total{provider=\"x\"} 1\n"
        "a_total{provider=\"y\"} 5\n"
        "# HELP b B.\n# TYPE b gauge\nb 2\n"
        "# HELP c_seconds C.\n# TYPE c_seconds histogram\nc_seconds_bucket{le=\"+Inf\"} 1\n"
        "c_seconds_sum 0.5\nc_seconds_count 1\n");
  // Samples before any description stay in front; a text without a final newline is whole.
  CHECK(metrics::mergeExpositions({"loose 1\n# TYPE d gauge\nd 1", "# TYPE d gauge\nd 2"}) ==
        "loose 1\n# TYPE d gauge\nd 1\nd 2\n");
}

TEST_CASE("a registry merges several external sources and forgets a removed one") {
  metrics::Registry reg;
  reg.gauge("up", "Up.", {"provider"})->labels({"host"}).set(1);
  uint64_t a = reg.addExternalSource([] { return "# TYPE up gauge\nup{provider=\"a\"} 1\n"; });
  uint64_t b = reg.addExternalSource([] { return "# TYPE up gauge\nup{provider=\"b\"} 0\n"; });
  CHECK(a != b);
  std::string text = reg.exposition();
  CHECK(text == "# HELP up Up.\n# TYPE up gauge\nup{provider=\"host\"} 1\nup{provider=\"a\"} 1\n"
                "up{provider=\"b\"} 0\n");
  reg.removeExternalSource(a);
  CHECK(reg.exposition() ==
        "# HELP up Up.\n# TYPE up gauge\nup{provider=\"host\"} 1\nup{provider=\"b\"} 0\n");
  reg.removeExternalSource(b);
  CHECK(reg.exposition() == "# HELP up Up.\n# TYPE up gauge\nup{provider=\"host\"} 1\n");
}
