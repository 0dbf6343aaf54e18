// Starting and stopping the provider child process (fork + exec of the host binary).
//
// The child: dies with SIGKILL when the thread that started it ends (PR_SET_PDEATHSIG: so
// start it from a thread that lives as long as the host), is in its own process group (a
// Ctrl-C in a terminal reaches the host, which stops it in order), has signals unblocked and
// at their defaults, and holds only its end of the socketpair, as CCM_PROVIDER_CHILD_FD=3.
//
// THREAD: any; spawn forks, so everything the child needs is prepared before the fork.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "host/runtime/status.hpp"

namespace ccm::plugin::isolation {

struct ChildProcess {
  pid_t pid = -1;
  int fd = -1;  // the host's end of the socketpair (close-on-exec)
};

// Starts executable with argv (argv[0] included) and the current environment.
StatusOr<ChildProcess> spawnChild(const std::string& executable,
                                  const std::vector<std::string>& argv);

// "exit code 1", "signal SIGSEGV" — a waitpid status in words.
std::string describeExit(int wait_status);

// The path of the running executable (/proc/self/exe).
StatusOr<std::string> selfExecutable();

}  // namespace ccm::plugin::isolation
