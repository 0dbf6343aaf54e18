// The crash handlers and the per-thread record of the current plugin call. Everything the
// handler does is async-signal-safe: it reads a thread-local record of plain pointers, builds
// the line in a stack buffer and calls write(2), sigaction(2) and raise(3).
#include "host/plugin/crash_report.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

namespace ccm::plugin {
namespace {

struct CallRecord {
  const char* provider = nullptr;  // null: not in a plugin call
  size_t provider_size = 0;
  const char* capability = nullptr;
  size_t capability_size = 0;
  const char* call = nullptr;
  size_t call_size = 0;
};

// initial-exec: reading it from a signal handler never allocates.
__attribute__((tls_model("initial-exec"))) thread_local CallRecord t_record;

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr const char* kSignalNames[] = {"SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT"};
constexpr size_t kSignalCount = sizeof(kSignals) / sizeof(kSignals[0]);

// Written once, before the handlers are installed; read by the handlers.
struct sigaction g_previous[kSignalCount];
std::atomic<bool> g_installed{false};
std::atomic<bool> g_json{false};
// Set by the first fatal signal: a sanitizer's report ends in abort(), which must not print a
// second crash line for the same crash.
std::atomic<bool> g_reported{false};

// A bounded line builder over a stack buffer (no allocation).
class Line {
 public:
  void add(const char* s, size_t n) {
    if (s == nullptr || n == 0) {
      return;
    }
    size_t take = std::min(n, sizeof(buf_) - 1 - used_);
    std::memcpy(buf_ + used_, s, take);
    used_ += take;
  }
  void add(const char* s) { add(s, std::strlen(s)); }
  void write() const {
    size_t done = 0;
    while (done < used_) {
      ssize_t w = ::write(STDERR_FILENO, buf_ + done, used_ - done);
      if (w <= 0) {
        return;
      }
      done += static_cast<size_t>(w);
    }
  }

 private:
  char buf_[1024];
  size_t used_ = 0;
};

void writeCrashLine(const char* signal_name) {
  const CallRecord& r = t_record;
  bool json = g_json.load(std::memory_order_relaxed);
  Line line;
  if (r.provider == nullptr) {
    line.add(json ? "{\"level\":\"fatal\",\"msg\":\"fatal signal " : "fatal signal ");
    line.add(signal_name);
    line.add(json ? " outside any provider call\",\"signal\":\"" : " outside any provider call\n");
    if (json) {
      line.add(signal_name);
      line.add("\"}\n");
    }
    line.write();
    return;
  }
  // The names are a provider name ([a-z0-9-]), a capability ID and a call name: nothing in
  // them needs escaping in JSON.
  line.add(json ? "{\"level\":\"fatal\",\"msg\":\"provider \\\"" : "provider \"");
  line.add(r.provider, r.provider_size);
  line.add(json ? "\\\" crashed in " : "\" crashed in ");
  if (r.capability_size > 0) {
    line.add(r.capability, r.capability_size);
    line.add(" ");
  }
  line.add(r.call, r.call_size);
  line.add(" (");
  line.add(signal_name);
  line.add(")");
  if (json) {
    line.add("\",\"provider\":\"");
    line.add(r.provider, r.provider_size);
    line.add("\",\"capability\":\"");
    line.add(r.capability, r.capability_size);
    line.add("\",\"call\":\"");
    line.add(r.call, r.call_size);
    line.add("\",\"signal\":\"");
    line.add(signal_name);
    line.add("\"}");
  }
  line.add("\n");
  line.write();
}

void onFatalSignal(int sig, siginfo_t* info, void* context) {
  size_t index = 0;
  while (index < kSignalCount && kSignals[index] != sig) {
    ++index;
  }
  if (index == kSignalCount) {
    return;
  }
  if (!g_reported.exchange(true)) {
    writeCrashLine(kSignalNames[index]);
  }
  const struct sigaction& before = g_previous[index];
  // Hand the signal to the handler that was there before (AddressSanitizer's report).
  if ((before.sa_flags & SA_SIGINFO) != 0 && before.sa_sigaction != nullptr) {
    ::sigaction(sig, &before, nullptr);
    before.sa_sigaction(sig, info, context);
  } else if ((before.sa_flags & SA_SIGINFO) == 0 && before.sa_handler != SIG_DFL &&
             before.sa_handler != SIG_IGN && before.sa_handler != nullptr) {
    ::sigaction(sig, &before, nullptr);
    before.sa_handler(sig);
  }
  // Die of the same signal: it is blocked while this handler runs, so it is delivered, with
  // the default action, as soon as the handler returns.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

// Each thread that calls into a plugin gets an alternate signal stack (unless it has one,
// e.g. from AddressSanitizer), released when the thread ends.
class AltStack {
 public:
  void ensure() {
    if (ready_) {
      return;
    }
    ready_ = true;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) {
      return;
    }
    size_ = std::max<size_t>(size_t{64} * 1024, static_cast<size_t>(SIGSTKSZ));
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return;
    }
    stack_t st{};
    st.ss_sp = p;
    st.ss_size = size_;
    st.ss_flags = 0;
    if (::sigaltstack(&st, nullptr) != 0) {
      ::munmap(p, size_);
      return;
    }
    stack_ = p;
  }
  AltStack() = default;
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;
  ~AltStack() {
    if (stack_ == nullptr) {
      return;
    }
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    ::munmap(stack_, size_);
  }

 private:
  bool ready_ = false;
  void* stack_ = nullptr;
  size_t size_ = 0;
};

thread_local AltStack t_alt_stack;

}  // namespace

void installCrashHandlers(CrashLineFormat format) {
  g_json = format == CrashLineFormat::Json;
  if (g_installed.exchange(true)) {
    return;
  }
  t_alt_stack.ensure();
  for (size_t i = 0; i < kSignalCount; ++i) {
    ::sigaction(kSignals[i], nullptr, &g_previous[i]);
  }
  for (size_t i = 0; i < kSignalCount; ++i) {
    struct sigaction sa {};
    sa.sa_sigaction = &onFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(kSignals[i], &sa, nullptr);
  }
}

PluginCallScope::PluginCallScope(std::string_view provider, std::string_view capability,
                                 std::string_view call)
    : previous_{t_record.provider,        t_record.provider_size, t_record.capability,
                t_record.capability_size, t_record.call,          t_record.call_size} {
  t_alt_stack.ensure();
  CallRecord next{provider.data(),   provider.size(), capability.data(),
                  capability.size(), call.data(),     call.size()};
  t_record = next;
  // The record is complete before a signal on this thread can read it.
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

PluginCallScope::~PluginCallScope() {
  t_record = CallRecord{previous_.provider,        previous_.provider_size, previous_.capability,
                        previous_.capability_size, previous_.call,          previous_.call_size};
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

}  // namespace ccm::plugin
