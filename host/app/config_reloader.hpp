// ConfigReloader: watches the --cloud-config file while the host runs and hands changed bytes
// to the provider (Provider::reconfigure, the ABI 1.1 reconfigure slot), so that a rotated
// credential in a Secret takes effect without a restart.
//
// It compares the file's bytes (not its inode or modification time) every period: a mounted
// Secret or ConfigMap changes by the kubelet swapping a `..data` symlink, which inode- or
// mtime-based watches on the file itself miss, and bytes are all the provider sees anyway.
// Outcomes:
//   - OK: logged and counted; the new bytes are the ones compared from now on.
//   - refused (or failed, e.g. past its deadline): the provider keeps its old settings; the
//     error is logged, and the same bytes are not offered again: the next attempt is made when
//     the file changes again.
//   - unsupported (a 1.0 plugin, or no slot): logged once, at the first change: the change
//     applies at the next restart.
//   - unreadable file (mid-swap, removed): a warning (once until it is readable again); the
//     previous bytes stay the reference and the file is read again at the next period.
// Counted in ccm_provider_reconfigure_total{provider="NAME",result="ok|refused|failed|unsupported"}.
//
// THREAD: checkNow() from one thread at a time (the reloader's own thread once start() was
// called); start() and stop() from the owner's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "host/plugin/provider.hpp"
#include "host/runtime/metrics.hpp"

namespace ccm::app {

class ConfigReloader {
 public:
  enum class Outcome { Unchanged, Unreadable, Applied, Refused, Failed, Unsupported };

  // path: the --cloud-config file; current: the bytes the provider was created with.
  ConfigReloader(plugin::Provider& provider, std::string path, std::string current,
                 metrics::Registry* registry);
  ~ConfigReloader();
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Reads the file once and, when its bytes differ from the last ones offered, reconfigures.
  Outcome checkNow();

  // Calls checkNow() every period on a thread of its own until stop() (or destruction).
  void start(std::chrono::milliseconds period);
  void stop();

 private:
  void count(const char* result);

  plugin::Provider& provider_;
  const std::string path_;
  std::string offered_;  // the bytes last offered (applied or not); checkNow's thread only
  bool told_unsupported_ = false;  // checkNow's thread only
  bool told_unreadable_ = false;   // checkNow's thread only
  metrics::Family<metrics::Counter>* total_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ccm::app
