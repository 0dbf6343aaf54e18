// WorldSource: the fake cloud's World, re-read from cloudFile when the file changes.
#include "plugins/fake-cloud/world_source.hpp"

#include "plugins/fake-cloud/files.hpp"

namespace ccm::fakecloud {
namespace {

constexpr std::chrono::milliseconds kCheckInterval(100);

}  // namespace

WorldSource::WorldSource(const Config& config, const sdk::Host& host)
    : cloud_file_(config.cloud_file),
      host_(host),
      base_(config.world),
      world_(std::make_shared<const World>(config.world)) {
  if (cloud_file_.empty()) {
    return;
  }
  auto text = readFile(cloud_file_);
  if (!text) {
    throw ConfigError("cloudFile: cannot read \"" + cloud_file_ + "\"");
  }
  world_ = std::make_shared<const World>(parseWorld(*text, base_, cloud_file_));
  if (auto stamp = stampOf(cloud_file_)) {
    mtime_ns_ = stamp->mtime_ns;
  }
}

std::shared_ptr<const World> WorldSource::current() {
  std::lock_guard lock(mu_);
  if (cloud_file_.empty()) {
    return world_;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - checked_ < kCheckInterval) {
    return world_;
  }
  checked_ = now;
  auto stamp = stampOf(cloud_file_);
  if (!stamp || stamp->mtime_ns == mtime_ns_) {
    return world_;
  }
  auto text = readFile(cloud_file_);
  if (!text) {
    return world_;
  }
  try {
    world_ = std::make_shared<const World>(parseWorld(*text, base_, cloud_file_));
    mtime_ns_ = stamp->mtime_ns;
    host_.logFields(CCM_LOG_INFO, "fake-cloud: reloaded the cloud file", {{"file", cloud_file_}});
  } catch (const ConfigError& e) {
    // Keep the last good World; the file is read again at the next look (a half-written file
    // is usually whole by then).
    host_.logFields(CCM_LOG_WARNING, "fake-cloud: ignoring invalid cloud file",
                    {{"file", cloud_file_}, {"error", e.what()}});
  }
  return world_;
}

void WorldSource::rebase(const World& base) {
  std::lock_guard lock(mu_);
  World next = base;
  int64_t mtime_ns = mtime_ns_;
  if (!cloud_file_.empty()) {
    auto stamp = stampOf(cloud_file_);
    auto text = readFile(cloud_file_);
    if (!text) {
      throw ConfigError("cloudFile: cannot read \"" + cloud_file_ + "\"");
    }
    next = parseWorld(*text, base, cloud_file_);
    mtime_ns = stamp ? stamp->mtime_ns : -1;
  }
  base_ = base;
  mtime_ns_ = mtime_ns;
  // An unchanged World keeps its identity: a new one would restart counted faults (and the
  // config file is often the cloud file too, already re-read on its own).
  if (next != *world_) {
    world_ = std::make_shared<const World>(std::move(next));
  }
}

std::shared_ptr<const World> WorldSource::lastRead() {
  std::lock_guard lock(mu_);
  return world_;
}

}  // namespace ccm::fakecloud
