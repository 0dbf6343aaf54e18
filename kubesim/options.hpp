// Command-line options of the kubesim executable (--flag=value or --flag value; repeatable
// flags accumulate; durations like 500ms, 10s, 5m, 1h).
//
// THREAD: start-up only.
#pragma once

#include <string>

#include "host/log/log.hpp"
#include "host/runtime/status.hpp"
#include "kubesim/kubesim_server.hpp"

namespace ccm::kubesim {

struct CommandLine {
  KubesimOptions server;
  ccm::log::Config log;
  bool help = false;
};

StatusOr<CommandLine> parseCommandLine(int argc, char** argv);
std::string usage();

}  // namespace ccm::kubesim
