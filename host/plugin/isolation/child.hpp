// The provider child process of --provider-isolation=process: the host binary re-executed by
// IsolatedProvider with the same flags and CCM_PROVIDER_CHILD_FD naming the inherited end of
// a socketpair. It loads the plugin with the host's own loader and adapter (PluginLoader,
// AbiProvider: the same negotiation, validation, deadlines and crash line as in-process),
// then serves the host's calls over the socket (wire.hpp, dispatch.hpp), each on its own
// worker thread, until the socket closes.
//
// THREAD: runChild on the main thread, before any other thread exists.
#pragma once

#include <optional>

#include "host/plugin/plugin_loader.hpp"
#include "host/plugin/provider_options.hpp"

namespace ccm::plugin::isolation {

inline constexpr const char* kChildFdVariable = "CCM_PROVIDER_CHILD_FD";

// The socket this process was given when it runs as a provider child (the variable is then
// removed from the environment, and the socket made close-on-exec, so the plugin's own
// children neither see it nor hold it open). nullopt when the variable is absent or does not
// name an open descriptor.
std::optional<int> childFdFromEnvironment();

// Waits for the Create frame, loads and creates the provider (a failure is sent back as
// StartFailed, then the process returns 1, or leaves at once when the step was abandoned),
// sends Ready and serves calls. Returns when the host closes the socket.
int runChild(int fd, const LoadOptions& load, const ProviderOptions& options);

}  // namespace ccm::plugin::isolation
