// PluginLoader implementation.
#include "host/plugin/plugin_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "ccm/negotiation.hpp"
#include "ccm/plugin_text.hpp"
#include "ccm/types.hpp"
#include "ccm/validation.hpp"
#include "host/log/log.hpp"
#include "host/plugin/crash_report.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/lifecycle_call.hpp"
#include "host/plugin/plugin_text.hpp"
#include "host/runtime/version.hpp"

namespace ccm::plugin {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHostName = "cloud-controller-manager";

// Libraries stay loaded for the life of the process.
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const LoadedPlugin>> by_path;  // guarded by mu
  std::vector<std::unique_ptr<boost::dll::shared_library>> libraries;   // guarded by mu
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: plugins are never unloaded
  return *r;
}

std::string modeString(mode_t m) { return fmt::format("{:04o}", m & 07777); }

bool validProviderName(std::string_view name) { return sdk::isValidProviderName(name); }

Status fail(Code code, const std::string& path, const std::string& what) {
  return Status(code, fmt::format("cannot load provider plugin {}: {}", path, what));
}


// What the entry point works on: owned by its call, which may outlive load() (a hung entry
// point is abandoned, not stopped).
struct EntryCall {
  ccm_host_info info{};
  ccm_call call{};
  const ccm_plugin* raw = nullptr;
  std::string name;  // the provider name, for the crash line
};

}  // namespace

std::vector<std::string> PluginLoader::available(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".so") {
      out.push_back(entry.path().stem().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status PluginLoader::checkPermissions(const fs::path& path) {
  uid_t me = ::geteuid();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(Code::NotFound, fmt::format("{} does not exist", path.string()));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(Code::FailedPrecondition,
                  fmt::format("{} is not a regular file", path.string()));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status(Code::PermissionDenied,
                  fmt::format("refusing to load {}: it is writable by {} (mode {}); a plugin "
                              "anyone else can write is code execution for them — chmod go-w",
                              path.string(), (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                              modeString(st.st_mode)));
  }
  if (st.st_uid != 0 && st.st_uid != me) {
    return Status(Code::PermissionDenied,
                  fmt::format("refusing to load {}: it is owned by uid {}, neither root nor "
                              "the user running the host (uid {})",
                              path.string(), st.st_uid, me));
  }
  fs::path dir = path.parent_path();
  bool first = true;
  while (!dir.empty()) {
    if (::stat(dir.c_str(), &st) != 0) {
      break;
    }
    bool world = (st.st_mode & S_IWOTH) != 0;
    bool group = (st.st_mode & S_IWGRP) != 0;
    bool sticky = (st.st_mode & S_ISVTX) != 0;
    if (first && (world || group || (st.st_uid != 0 && st.st_uid != me))) {
      return Status(Code::PermissionDenied,
                    fmt::format("refusing to load plugins from {}: the directory is {} (mode "
                                "{}, owner uid {}); anyone who can write there can replace the "
                                "provider",
                                dir.string(),
                                world ? "writable by everyone"
                                      : group ? "writable by its group"
                                              : "owned by another user",
                                modeString(st.st_mode), st.st_uid));
    }
    if (!first && world && !sticky) {
      return Status(Code::PermissionDenied,
                    fmt::format("refusing to load {}: its ancestor directory {} is writable by "
                                "everyone (mode {}) without the sticky bit",
                                path.string(), dir.string(), modeString(st.st_mode)));
    }
    first = false;
    if (dir == dir.root_path()) {
      break;
    }
    dir = dir.parent_path();
  }
  return okStatus();
}

StatusOr<std::shared_ptr<const LoadedPlugin>> PluginLoader::load(const LoadOptions& options) {
  if (!validProviderName(options.name)) {
    return Status(Code::InvalidArgument,
                  fmt::format("--cloud-provider=\"{}\" is not a provider name (lowercase "
                              "letters, digits and '-')",
                              options.name));
  }
  std::error_code ec;
  if (!fs::is_directory(options.plugin_dir, ec)) {
    return Status(Code::NotFound, fmt::format("plugin directory {} does not exist (set "
                                              "--cloud-provider-plugin-dir)",
                                              options.plugin_dir));
  }
  fs::path file = fs::path(options.plugin_dir) / (options.name + ".so");
  if (!fs::exists(file, ec)) {
    auto names = available(options.plugin_dir);
    std::string list;
    for (const auto& n : names) {
      list += (list.empty() ? "" : ", ") + n;
    }
    return Status(Code::NotFound,
                  fmt::format("unknown cloud provider \"{}\": no {} (providers in {}: {})",
                              options.name, file.string(), options.plugin_dir,
                              list.empty() ? "none" : list));
  }
  fs::path canonical = fs::canonical(file, ec);
  if (ec) {
    return fail(Code::FailedPrecondition, file.string(), ec.message());
  }
  std::string path = canonical.string();
  if (options.check_permissions) {
    // Both where the file really is and the way it was reached: a symbolic link (to the
    // file or to the directory) kept where others can write could be pointed elsewhere.
    for (const fs::path& p : {canonical, file}) {
      Status perm = checkPermissions(p);
      if (!perm.ok()) {
        return perm;
      }
    }
  }

  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  if (auto it = reg.by_path.find(path); it != reg.by_path.end()) {
    return it->second;
  }

  auto lib = std::make_unique<boost::dll::shared_library>();
  std::error_code load_ec;
  lib->load(canonical, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now,
            load_ec);
  if (load_ec || !lib->is_loaded()) {
    const char* why = ::dlerror();
    return fail(Code::FailedPrecondition, path,
                fmt::format("not a loadable shared library ({})",
                            why != nullptr ? why : load_ec.message()));
  }
  if (!lib->has(CCM_PROVIDER_ENTRY_SYMBOL)) {
    std::string hint;
    for (int major = 2; major <= 9; ++major) {
      if (lib->has(fmt::format("ccm_provider_entry_v{}", major))) {
        hint = fmt::format(" (it exports ccm_provider_entry_v{}: it was built for plugin ABI "
                           "{}, this host speaks ABI {}.{})",
                           major, major, CCM_ABI_MAJOR, CCM_ABI_MINOR);
      }
    }
    return fail(Code::FailedPrecondition, path,
                fmt::format("it does not export {}; it is not a ccm provider for ABI {}{}",
                            CCM_PROVIDER_ENTRY_SYMBOL, CCM_ABI_MAJOR, hint));
  }
  auto entry = lib->get<ccm_status(const ccm_host_info*, const ccm_call*, const ccm_plugin**)>(
      CCM_PROVIDER_ENTRY_SYMBOL);

  HostServices& services = HostServices::instance();
  PluginContext ctx = PluginContext::make(options.name, options.registry, options.clock);
  ccm_host_handle handle = services.addPlugin(ctx);
  ccm_host_info info{};
  info.struct_size = sizeof(ccm_host_info);
  info.abi_major = CCM_ABI_MAJOR;
  info.abi_minor = CCM_ABI_MINOR;
  info.host_name = sdk::str(kHostName);
  info.host_version = sdk::str(CCM_VERSION);
  info.host = handle;
  info.services = services.table();

  const bool has_deadline = options.start_timeout.count() > 0;
  int64_t deadline_ns = lifecycleDeadlineNs(options.clock, options.start_timeout);
  auto call_state = services.beginCall(handle, deadline_ns, OutputKind::None, 0);
  auto entry_call = std::make_shared<EntryCall>();
  entry_call->info = info;
  entry_call->call = ccm_call{sizeof(ccm_call), call_state->id, deadline_ns};
  entry_call->name = options.name;
  LifecycleOutcome outcome = runLifecycleCall(
      [entry_call, entry] {
        PluginCallScope scope(entry_call->name, "", CCM_PROVIDER_ENTRY_SYMBOL);
        return entry(&entry_call->info, &entry_call->call, &entry_call->raw);
      },
      has_deadline ? std::chrono::steady_clock::now() + options.start_timeout
                   : std::chrono::steady_clock::time_point::max(),
      options.stop);
  if (outcome.end == LifecycleOutcome::End::TimedOut ||
      outcome.end == LifecycleOutcome::End::Interrupted) {
    call_state->cancelled = true;
    services.endCall(call_state->id);
    // Its thread is still inside the library: it must stay loaded.
    reg.libraries.push_back(std::move(lib));
    if (outcome.end == LifecycleOutcome::End::TimedOut) {
      return fail(Code::DeadlineExceeded, path,
                  fmt::format("{} did not return within the start-up deadline of {} "
                              "(--provider-start-timeout)",
                              CCM_PROVIDER_ENTRY_SYMBOL, describeTimeout(options.start_timeout)));
    }
    return fail(Code::Cancelled, path,
                fmt::format("interrupted by a signal while in {} (after {})",
                            CCM_PROVIDER_ENTRY_SYMBOL, describeTimeout(outcome.elapsed)));
  }
  if (outcome.end == LifecycleOutcome::End::Threw) {
    services.endCall(call_state->id);
    return fail(Code::FailedPrecondition, path,
                fmt::format("its entry point threw an exception: {}", outcome.exception));
  }
  ccm_status st = outcome.status;
  const ccm_plugin* raw = entry_call->raw;
  services.endCall(call_state->id);
  std::string message;
  {
    std::lock_guard l(call_state->mu);
    message = call_state->error_message;
  }
  if (st != CCM_STATUS_OK) {
    return fail(Code::FailedPrecondition, path,
                fmt::format("the plugin refused to load ({}): {}", codeName(codeFromInt(st)),
                            message.empty() ? "no reason given" : message));
  }
  // The table's shape, major/minor and required slots: the SDK's checks, shared with the
  // fake host.
  ccm_plugin table{};
  if (std::string problem = sdk::checkPluginTable(raw, CCM_ABI_MINOR, &table); !problem.empty()) {
    return fail(Code::FailedPrecondition, path, problem);
  }
  std::string declared(sdk::view(table.name));
  if (declared != options.name) {
    return fail(Code::FailedPrecondition, path,
                fmt::format("it calls itself \"{}\" but was loaded as \"{}\" (the file must be "
                            "named <provider-name>.so)",
                            safeText(declared, 64), options.name));
  }
  // The name matched the provider name (so it is one); the version as the fake host checks it.
  if (std::string problem = sdk::checkPluginIdentity(declared, sdk::view(table.version));
      !problem.empty()) {
    return fail(Code::FailedPrecondition, path, problem);
  }
  // The 1.1 declarations (a 1.0 plugin declares none), checked as the fake host does.
  sdk::PluginDeclarations declarations;
  if (std::string problem = sdk::checkDeclarations(table, &declarations); !problem.empty()) {
    return fail(Code::FailedPrecondition, path, problem);
  }
  const std::string& prefix = declarations.provider_id_prefix;
  const std::string& domain = declarations.annotation_domain;
  const std::string& metric_namespace = declarations.metric_namespace;
  ctx.name = declared;
  ctx.abi_minor = table.abi_minor;
  ctx.provider_id_prefix = prefix;
  ctx.annotation_domain = domain;
  ctx.metric_namespace = metric_namespace;
  services.updatePlugin(handle, ctx);

  auto loaded = std::make_shared<LoadedPlugin>();
  loaded->name = declared;
  loaded->path = path;
  loaded->table = table;
  loaded->handle = handle;
  loaded->provider_id_prefix = prefix;
  loaded->annotation_domain = domain;
  loaded->metric_namespace = metric_namespace;
  reg.libraries.push_back(std::move(lib));
  reg.by_path[path] = loaded;
  return std::shared_ptr<const LoadedPlugin>(loaded);
}

}  // namespace ccm::plugin
