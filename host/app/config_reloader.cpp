// ConfigReloader: reads --cloud-config every period and reconfigures the provider on a change.
#include "host/app/config_reloader.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "host/log/log.hpp"
#include "host/runtime/thread_name.hpp"

namespace ccm::app {
namespace {

// The file's bytes, or the reason it cannot be read.
std::optional<std::string> readAll(const std::string& path, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    why = "read error";
    return std::nullopt;
  }
  return ss.str();
}

}  // namespace

ConfigReloader::ConfigReloader(plugin::Provider& provider, std::string path, std::string current,
                               metrics::Registry* registry)
    : provider_(provider), path_(std::move(path)), offered_(std::move(current)) {
  if (registry != nullptr) {
    total_ = registry->counter("ccm_provider_reconfigure_total",
                               "Changes of --cloud-config handed to the provider while running, "
                               "by provider and result (ok, refused, failed, unsupported).",
                               {"provider", "result"});
  }
}

ConfigReloader::~ConfigReloader() {
  stop();
}

void ConfigReloader::count(const char* result) {
  if (total_ != nullptr) {
    total_->labels({std::string(provider_.info().name), result}).inc();
  }
}

ConfigReloader::Outcome ConfigReloader::checkNow() {
  std::string why;
  std::optional<std::string> bytes = readAll(path_, why);
  if (!bytes) {
    if (!told_unreadable_) {
      log::warning("Cannot read --cloud-config to look for changes; will read it again",
                   {{"path", path_}, {"err", why}});
      told_unreadable_ = true;
    }
    return Outcome::Unreadable;
  }
  told_unreadable_ = false;
  if (*bytes == offered_) {
    return Outcome::Unchanged;
  }
  offered_ = std::move(*bytes);
  const std::string& provider = provider_.info().name;
  Status s = provider_.reconfigure(offered_);
  if (s.ok()) {
    count("ok");
    log::info("Provider reconfigured from the changed cloud config",
              {{"provider", provider}, {"path", path_}, {"bytes", offered_.size()}});
    return Outcome::Applied;
  }
  if (s.code() == Code::Unimplemented) {
    count("unsupported");
    if (!told_unsupported_) {
      log::warning(
          "The cloud config changed but the provider cannot apply it while running: "
          "the change takes effect at the next restart",
          {{"provider", provider}, {"path", path_}, {"reason", s.message()}});
      told_unsupported_ = true;
    }
    return Outcome::Unsupported;
  }
  bool refused = s.code() != Code::DeadlineExceeded && s.code() != Code::Internal &&
                 s.code() != Code::FailedPrecondition && s.code() != Code::Cancelled;
  count(refused ? "refused" : "failed");
  log::error(refused ? "Provider refused the changed cloud config; it keeps its old settings "
                       "until the file changes again"
                     : "Provider could not apply the changed cloud config; it keeps its old "
                       "settings until the file changes again",
             {{"provider", provider},
              {"path", path_},
              {"code", codeName(s.code())},
              {"err", s.message()}});
  return refused ? Outcome::Refused : Outcome::Failed;
}

void ConfigReloader::start(std::chrono::milliseconds period) {
  thread_ = std::thread([this, period] {
    runtime::nameThisThread("config-reload");
    std::unique_lock lock(mu_);
    while (!stopping_) {
      if (cv_.wait_for(lock, period, [this] { return stopping_; })) {
        break;
      }
      lock.unlock();
      checkNow();
      lock.lock();
    }
  });
}

void ConfigReloader::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

}  // namespace ccm::app
