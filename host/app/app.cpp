// The start-up sequence of cloud-controller-manager.
#include "host/app/app.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "ccm/provider_abi.h"
#include "host/log/log.hpp"
#include "host/options/options.hpp"
#include "host/plugin/abi_provider.hpp"
#include "host/plugin/plugin_loader.hpp"
#include "host/runtime/metrics.hpp"

#ifndef CCM_VERSION
#define CCM_VERSION "0.0.0"
#endif
#ifndef CCM_PLUGIN_DIR
#define CCM_PLUGIN_DIR "/usr/local/lib/ccm/providers"
#endif

namespace ccm::app {
namespace {

constexpr const char* kProgram = "cloud-controller-manager";

void printErr(const std::string& s) { std::fputs(s.c_str(), stderr); }

std::string versionLine() {
  return fmt::format("{} v{} (ccm; plugin ABI {}.{})\n", kProgram, CCM_VERSION, CCM_ABI_MAJOR,
                     CCM_ABI_MINOR);
}

std::string usageText(const options::FlagSet& flags) {
  return fmt::format(
      "The Cloud controller manager is a daemon that embeds the cloud specific control loops "
      "shipped with Kubernetes.\n\nccm loads the cloud provider from a plugin: "
      "--cloud-provider=<name> loads <cloud-provider-plugin-dir>/<name>.so.\n\nUsage:\n  {} "
      "[flags]\n{}",
      kProgram, flags.usage());
}

// Reads --cloud-config; empty path means no configuration.
StatusOr<std::string> readCloudConfig(const std::string& path) {
  if (path.empty()) {
    return std::string();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::InvalidArgument,
                  fmt::format("cannot read --cloud-config={}: {}", path, std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

plugin::ProviderOptions providerOptions(const options::Options& o, metrics::Registry& registry) {
  plugin::ProviderOptions p;
  if (o.cloud_provider_call_timeout.count() > 0) {
    p.instances_timeout = p.batch_timeout = p.load_balancer_timeout = p.routes_timeout =
        o.cloud_provider_call_timeout;
  }
  p.registry = &registry;
  return p;
}

}  // namespace

int run(int argc, const char* const* argv) {
  options::Options opts;
  auto flags = options::makeFlagSet(opts, CCM_PLUGIN_DIR);
  Status parsed = flags->parse(argc, argv);
  if (!parsed.ok()) {
    printErr(fmt::format("Error: {}\nRun '{} --help' for usage.\n", parsed.message(), kProgram));
    return 2;
  }
  if (opts.help) {
    std::fputs(usageText(*flags).c_str(), stdout);
    return 0;
  }
  if (opts.version) {
    std::fputs(versionLine().c_str(), stdout);
    return 0;
  }
  log::configure({opts.logging_format == "json" ? log::Format::Json : log::Format::Text,
                  opts.verbosity, 2});
  Status valid = options::validate(opts);
  if (!valid.ok()) {
    printErr(fmt::format("Error: {}\nRun '{} --help' for usage.\n", valid.message(), kProgram));
    return 2;
  }

  log::info("Starting cloud-controller-manager",
            {{"version", CCM_VERSION}, {"pluginABI", fmt::format("{}.{}", CCM_ABI_MAJOR,
                                                                  CCM_ABI_MINOR)}});
  if (log::enabled(1)) {
    for (const auto& f : flags->flags()) {
      log::infoV(1, "FLAG", {{"name", "--" + f.name}, {"changed", f.changed}});
    }
  }
  for (const auto* f : flags->setButUnimplemented()) {
    log::warning("Flag accepted for compatibility but not implemented by ccm; it has no effect",
                 {{"flag", "--" + f->name}});
  }

  metrics::Registry registry;
  auto config = readCloudConfig(opts.cloud_config);
  if (!config.ok()) {
    log::error("Cannot start", {{"err", config.status().message()}});
    return 1;
  }
  plugin::LoadOptions load;
  load.plugin_dir = opts.cloud_provider_plugin_dir;
  load.name = opts.cloud_provider;
  load.registry = &registry;
  auto loaded = plugin::PluginLoader::load(load);
  if (!loaded.ok()) {
    log::error("Cannot load the cloud provider", {{"err", loaded.status().message()}});
    return 1;
  }
  auto provider = plugin::AbiProvider::create(*loaded, *config, opts.cloud_config,
                                              providerOptions(opts, registry));
  if (!provider.ok()) {
    log::error("Cannot create the cloud provider", {{"err", provider.status().message()}});
    return 1;
  }
  const plugin::ProviderInfo& info = (*provider)->info();
  log::info("Loaded cloud provider",
            {{"provider", info.name},
             {"version", info.version},
             {"abi", fmt::format("{}.{}", info.abi_major, info.abi_minor)},
             {"path", info.path},
             {"capabilities", info.capabilityList()}});

  if (opts.check_config) {
    std::fputs(fmt::format("provider {} {} (ABI {}.{}) from {}\ncapabilities: {}\nconfiguration "
                           "valid\n",
                           info.name, info.version, info.abi_major, info.abi_minor, info.path,
                           info.capabilityList())
                   .c_str(),
               stdout);
    return 0;
  }

  log::error("This build has no controllers wired yet (the Kubernetes client lands in a later "
             "change); use --check-config to validate a provider and its configuration");
  return 1;
}

}  // namespace ccm::app
