// WorldSource: the World the fake cloud currently describes — the config's own, or the one in
// cloudFile, which is re-read when its modification time changes (looked at no more than every
// 100 ms). An edit that does not parse is logged and ignored: the last good World stays.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/config.hpp"

namespace ccm::fakecloud {

class WorldSource {
 public:
  // Throws ConfigError when cloudFile cannot be read or does not parse.
  WorldSource(const Config& config, const sdk::Host& host);

  // The current World, after re-reading cloudFile when it is time to look and it changed.
  // THREAD: any.
  std::shared_ptr<const World> current();

  // The World as last read, without looking at the file. THREAD: any.
  std::shared_ptr<const World> lastRead();

  // Replaces the config's World (a reconfigure): the cloud file, if any, is read again on top
  // of it. Throws ConfigError, and changes nothing, when the cloud file cannot be read or
  // does not parse. THREAD: any.
  void rebase(const World& base);

 private:
  const std::string cloud_file_;  // empty: the World changes only by rebase()
  const sdk::Host& host_;

  std::mutex mu_;
  World base_;  // guarded by mu_: the config's World; the cloud file's keys override it
  std::shared_ptr<const World> world_;               // guarded by mu_
  std::chrono::steady_clock::time_point checked_{};  // guarded by mu_
  int64_t mtime_ns_ = -1;                            // guarded by mu_
};

}  // namespace ccm::fakecloud
