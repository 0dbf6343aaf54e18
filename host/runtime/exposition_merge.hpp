// Merging texts in the Prometheus exposition format (version 0.0.4) into one: a family that
// appears in several texts (the host's own and each provider child process's) is written once,
// with the HELP and TYPE of its first text and the samples of all, so a scraper never sees a
// metric name described twice.
#pragma once

#include <string>
#include <vector>

namespace ccm::metrics {

// Families in the order they first appear; within a family, samples in text order. Lines
// before any HELP/TYPE line stay in front, as they were.
std::string mergeExpositions(const std::vector<std::string>& texts);

}  // namespace ccm::metrics
