// The crash line: when a plugin call dies of SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, the
// host prints one line naming the provider, the capability and the call
//   provider "fake-cloud" crashed in ccm.instances/1 instance_metadata (SIGSEGV)
// before the process dies of the same signal.
//
// Each thread keeps a record of the plugin call it is in (PluginCallScope, set and cleared by
// the host's call paths). The handler runs on an alternate signal stack (so a stack overflow
// in the plugin is reported too), only reads that record and calls write(2), then hands the
// signal on: to the handler that was installed before (AddressSanitizer's, whose report then
// follows the line), or, when there was none, to the default action, re-raised.
//
// THREAD: installCrashHandlers on the main thread at start-up; PluginCallScope on any thread.
#pragma once

#include <string_view>

namespace ccm::plugin {

enum class CrashLineFormat { Text, Json };

// Installs the handlers (once per process; later calls only change the format). A crash
// outside any plugin call prints a generic line, then behaves as it did before.
void installCrashHandlers(CrashLineFormat format = CrashLineFormat::Text);

// Marks the calling thread as inside one plugin call while it lives, and gives the thread an
// alternate signal stack if it has none. The strings are not copied: they must outlive the
// scope (a LoadedPlugin's name, a capability ID and a call name are static or live for the
// process). capability may be empty for lifecycle calls ("create", "destroy").
class PluginCallScope {
 public:
  PluginCallScope(std::string_view provider, std::string_view capability, std::string_view call);
  ~PluginCallScope();
  PluginCallScope(const PluginCallScope&) = delete;
  PluginCallScope& operator=(const PluginCallScope&) = delete;

 private:
  struct Saved {
    const char* provider;
    size_t provider_size;
    const char* capability;
    size_t capability_size;
    const char* call;
    size_t call_size;
  };
  Saved previous_;
};

}  // namespace ccm::plugin
