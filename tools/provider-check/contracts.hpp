// The contracts ccm-provider-check drives a plugin through, in groups. Each group runs in a
// process of its own (main.cpp forks one per group) that loads the plugin through the host's
// own loader (PluginLoader: negotiation, the 1.1 declarations), creates the provider through
// the host's own adapter (AbiProvider: deadlines, concurrency slots, output validation) and
// reports on a Channel. A contract fails when the host would have refused or counted what the
// plugin did (ccm_provider_contract_violations_total grew: invalid output, an ignored
// deadline, an exception, an unknown status, output after the call returned ...), never
// because of what the cloud answered: NOT_FOUND, UNAVAILABLE and the other ABI statuses are
// valid answers and are reported as such.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "tools/provider-check/protocol.hpp"

namespace ccm::check {

struct CheckOptions {
  std::string plugin_dir;     // where <name>.so is
  std::string name;           // the provider name (the file name without .so)
  std::string config;         // the --cloud-config bytes
  std::string config_source;  // the file they came from, for messages
  // The deadline of every call, and of entry/create (the start-up deadline).
  std::chrono::milliseconds timeout{10000};
  std::string cluster_name = "provider-check";
};

enum class Group { Load, Instances, Batch, LoadBalancer, Routes, Concurrency, Cancel, Deadline,
                   Reconfigure };

// Every group, in the order they run (Load first: when it fails, nothing else can run).
std::vector<Group> allGroups();
std::string_view groupName(Group group);

// Runs one group in this process and reports on channel. Never returns early on a plugin's
// misbehaviour short of a crash; the process should _exit afterwards (a call the host gave up
// on may still be running inside the plugin).
void runGroup(Group group, const CheckOptions& options, const Channel& channel);

}  // namespace ccm::check
