#include "host/plugin/isolation/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "host/plugin/isolation/child.hpp"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace ccm::plugin::isolation {

namespace {

constexpr int kChildFd = 3;

Status errnoStatus(std::string_view what) {
  return Status(Code::Internal, fmt::format("{}: {}", what, std::strerror(errno)));
}

// After fork, in the child: only async-signal-safe calls.
[[noreturn]] void execChild(pid_t parent, int fd, const char* exe, char* const* argv,
                            char* const* envp) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) {
    ::_exit(127);
  }
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGHUP}) {
    ::signal(sig, SIG_DFL);
  }
  if (fd == kChildFd) {
    int flags = ::fcntl(fd, F_GETFD);
    ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  } else if (::dup2(fd, kChildFd) < 0) {
    ::_exit(127);
  }
  ::execve(exe, argv, envp);
  ::_exit(127);
}

}  // namespace

StatusOr<ChildProcess> spawnChild(const std::string& executable,
                                  const std::vector<std::string>& argv) {
  std::array<int, 2> fds{};
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.data()) != 0) {
    return errnoStatus("socketpair");
  }
  // Everything the child needs, built before the fork.
  std::vector<std::string> env_strings;
  std::string prefix = std::string(kChildFdVariable) + "=";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) {
      env_strings.emplace_back(*e);
    }
  }
  env_strings.push_back(prefix + std::to_string(kChildFd));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  argvp.reserve(args.size() + 1);
  for (auto& s : args) {
    argvp.push_back(s.data());
  }
  argvp.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    Status s = errnoStatus("fork");
    ::close(fds[0]);
    ::close(fds[1]);
    return s;
  }
  if (pid == 0) {
    execChild(parent, fds[1], executable.c_str(), argvp.data(), envp.data());
  }
  ::close(fds[1]);
  return ChildProcess{pid, fds[0]};
}

std::string describeExit(int wait_status) {
  if (WIFEXITED(wait_status)) {
    return fmt::format("exit code {}", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    const char* name = sigabbrev_np(WTERMSIG(wait_status));
    return name != nullptr ? fmt::format("signal SIG{}", name)
                           : fmt::format("signal {}", WTERMSIG(wait_status));
  }
  return fmt::format("status {}", wait_status);
}

StatusOr<std::string> selfExecutable() {
  std::array<char, 4096> buf{};
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) {
    return errnoStatus("readlink /proc/self/exe");
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace ccm::plugin::isolation
