// ccm-provider-check: drives a provider plugin through the ABI's contracts without a cloud or
// a cluster, through the host's own loader, adapter and output validation. One line per
// contract on stdout, "PASS contract ..." or "FAIL contract ...: why"; exit 0 when every
// contract passed, 1 when one failed, 2 on a usage error.
//
// Each group of contracts runs in a child process of its own (fork, before this process has
// any other thread), so a plugin that crashes, aborts or overflows its stack still gives a
// FAIL line naming the call it died in, and the remaining groups still run.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "host/plugin/crash_report.hpp"
#include "tools/provider-check/contracts.hpp"

namespace {

using ccm::check::CheckOptions;
using ccm::check::Group;

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;

constexpr std::string_view kUsage =
    "usage: ccm-provider-check --plugin=PATH.so --cloud-config=FILE [--name=NAME] "
    "[--timeout=DURATION]\n"
    "  --plugin        the provider plugin to check\n"
    "  --cloud-config  the configuration handed to its create (the bytes of --cloud-config)\n"
    "  --name          the provider name the host would load it as (default: the file name\n"
    "                  without .so)\n"
    "  --timeout       the deadline of every call and of start-up, e.g. 10s, 500ms (default 10s)\n"
    "Prints one line per contract (PASS contract ... / FAIL contract ...: why); exits 0 when\n"
    "all pass, 1 when any fails, 2 on a usage error.\n";

struct Args {
  std::string plugin;
  std::string cloud_config;
  std::string name;
  std::chrono::milliseconds timeout{10000};
};

std::optional<std::chrono::milliseconds> parseDuration(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits > 9) {
    return std::nullopt;
  }
  long long n = std::stoll(std::string(text.substr(0, digits)));
  std::string_view unit = text.substr(digits);
  if (unit == "ms") {
    return std::chrono::milliseconds(n);
  }
  if (unit == "s" || unit.empty()) {
    return std::chrono::milliseconds(n * 1000);
  }
  if (unit == "m") {
    return std::chrono::milliseconds(n * 60000);
  }
  return std::nullopt;
}

// Empty on success, else the usage error.
std::string parseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&a](std::string_view flag) -> std::optional<std::string> {
      if (a.starts_with(flag) && a.size() > flag.size() && a[flag.size()] == '=') {
        return std::string(a.substr(flag.size() + 1));
      }
      return std::nullopt;
    };
    if (auto v = value("--plugin")) {
      args.plugin = *v;
    } else if (auto v2 = value("--cloud-config")) {
      args.cloud_config = *v2;
    } else if (auto v3 = value("--name")) {
      args.name = *v3;
    } else if (auto v4 = value("--timeout")) {
      auto d = parseDuration(*v4);
      if (!d || d->count() <= 0) {
        return fmt::format("--timeout={}: not a positive duration (e.g. 10s, 500ms, 2m)", *v4);
      }
      args.timeout = *d;
    } else {
      return fmt::format("unknown argument \"{}\"", a);
    }
  }
  if (args.plugin.empty()) {
    return "--plugin=PATH.so is required";
  }
  if (args.cloud_config.empty()) {
    return "--cloud-config=FILE is required";
  }
  return {};
}

std::string signalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGKILL:
      return "SIGKILL";
    default:
      return fmt::format("signal {}", sig);
  }
}

struct GroupResult {
  bool failed = false;
  bool load_failed = false;
};

// Runs one group in a child and relays its lines; a child that dies before STOP, or stays
// silent for longer than any call may take, becomes a FAIL line naming its last call.
GroupResult runChild(Group group, const CheckOptions& options) {
  GroupResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    std::cout << fmt::format("FAIL contract {}: cannot create a pipe: {}\n",
                             ccm::check::groupName(group), std::strerror(errno));
    result.failed = true;
    return result;
  }
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::cout << fmt::format("FAIL contract {}: cannot fork: {}\n",
                             ccm::check::groupName(group), std::strerror(errno));
    ::close(fds[0]);
    ::close(fds[1]);
    result.failed = true;
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Whatever the plugin prints goes to stderr: stdout carries only the contract lines.
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ccm::plugin::installCrashHandlers();
    ccm::check::Channel channel(fds[1]);
    ccm::check::runGroup(group, options, channel);
    channel.stop();
    // A call the host gave up on may still be running inside the plugin: leave at once.
    std::_Exit(0);
  }
  ::close(fds[1]);
  std::string pending;
  std::string last_call = "(no call yet)";
  bool stopped = false;
  bool silent = false;
  // No line for this long: the child is stuck outside anything the host bounds.
  int quiet_ms = static_cast<int>(std::min<long long>(
      3 * options.timeout.count() + 60000, std::numeric_limits<int>::max()));
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    int ready = ::poll(&p, 1, quiet_ms);
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0) {
      silent = true;
      ::kill(pid, SIGKILL);
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t nl = 0;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("CALL ")) {
        last_call = line.substr(5);
      } else if (line == "STOP") {
        stopped = true;
      } else {
        if (line.starts_with("FAIL ")) {
          result.failed = true;
          if (group == Group::Load || line.find(" (load): ") != std::string::npos ||
              line.find(" (create): ") != std::string::npos) {
            result.load_failed = true;
          }
        }
        std::cout << line << '\n';
      }
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    std::cout.flush();
    return result;
  }
  std::string how;
  if (silent) {
    how = fmt::format("stopped answering for {}s (killed)", quiet_ms / 1000);
  } else if (WIFSIGNALED(status)) {
    how = fmt::format("crashed ({})", signalName(WTERMSIG(status)));
  } else {
    how = fmt::format("crashed (the check process exited with status {}; a sanitizer report "
                      "or the crash line is on stderr)",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  std::cout << fmt::format("FAIL contract {}: the plugin {} in {}\n",
                           ccm::check::groupName(group), how, last_call);
  std::cout.flush();
  result.failed = true;
  if (group == Group::Load) {
    result.load_failed = true;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::string usage_error = parseArgs(argc, argv, args);
  if (!usage_error.empty()) {
    std::cerr << "ccm-provider-check: " << usage_error << "\n" << kUsage;
    return kExitUsage;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path plugin = fs::absolute(args.plugin, ec);
  if (ec || !fs::is_regular_file(plugin, ec)) {
    std::cerr << fmt::format("ccm-provider-check: --plugin={}: no such file\n", args.plugin)
              << kUsage;
    return kExitUsage;
  }
  if (plugin.extension() != ".so") {
    std::cerr << fmt::format("ccm-provider-check: --plugin={}: the file name must end in .so\n",
                             args.plugin);
    return kExitUsage;
  }
  std::ifstream in(args.cloud_config, std::ios::binary);
  if (!in) {
    std::cerr << fmt::format("ccm-provider-check: --cloud-config={}: cannot read the file\n",
                             args.cloud_config);
    return kExitUsage;
  }
  std::stringstream config;
  config << in.rdbuf();

  CheckOptions options;
  options.plugin_dir = plugin.parent_path().string();
  options.name = plugin.stem().string();
  options.config = config.str();
  options.config_source = args.cloud_config;
  options.timeout = args.timeout;
  if (!args.name.empty() && args.name != options.name) {
    // The host loads <dir>/<name>.so: offer the file under that name from a private
    // directory (the link's target is what the loader checks and opens).
    char tmpl[] = "/tmp/ccm-provider-check-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::cerr << fmt::format("ccm-provider-check: cannot create a directory for --name: {}\n",
                               std::strerror(errno));
      return kExitUsage;
    }
    fs::create_symlink(plugin, fs::path(tmpl) / (args.name + ".so"), ec);
    if (ec) {
      std::cerr << fmt::format("ccm-provider-check: cannot link {} as {}.so: {}\n",
                               plugin.string(), args.name, ec.message());
      return kExitUsage;
    }
    options.plugin_dir = tmpl;
    options.name = args.name;
  }

  bool failed = false;
  for (Group group : ccm::check::allGroups()) {
    GroupResult r = runChild(group, options);
    failed = failed || r.failed;
    if (r.load_failed) {
      break;  // nothing else can run without a loaded, created provider
    }
  }
  if (options.plugin_dir != plugin.parent_path().string()) {
    fs::remove_all(options.plugin_dir, ec);
  }
  std::cout << (failed ? "FAIL" : "PASS") << ' ' << args.plugin << '\n';
  return failed ? kExitFail : kExitPass;
}
