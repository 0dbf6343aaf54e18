// The cloud-controller-manager process: start-up sequence, provider loading and (as the
// other areas land) the controllers, serving, leader election and orderly shutdown.
#pragma once

namespace ccm::app {

// Runs the process; returns the exit code. Exit codes: 0 success, 1 start-up or run-time
// failure, 2 bad command line.
int run(int argc, const char* const* argv);

}  // namespace ccm::app
