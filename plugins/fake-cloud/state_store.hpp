// StateStore: where the fake cloud keeps its CloudState. Without a state file, in memory. With
// one, on disk: every transaction re-reads the file when it changed and writes it back when it
// changed the state, under an flock on <stateFile>.lock — so several host processes (and the
// tests reading the file) share one cloud.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "ccm/provider.hpp"
#include "plugins/fake-cloud/cloud_state.hpp"
#include "plugins/fake-cloud/files.hpp"

namespace ccm::fakecloud {

class StateStore {
 public:
  // Loads the state file when there is one. Throws ConfigError when its lock file cannot be
  // created.
  StateStore(std::string state_file, const sdk::Host& host);

  // Runs fn(CloudState& state, bool& changed) with the state current and locked, and saves it
  // afterwards when fn set `changed`. Returns what fn returns. THREAD: any.
  template <typename Fn>
  auto transact(Fn&& fn) {
    std::lock_guard lock(mu_);
    std::optional<FileLock> file_lock;
    if (!file_.empty()) {
      file_lock.emplace(lockPath());
      loadLocked();
    }
    bool changed = false;
    auto result = std::forward<Fn>(fn)(state_, changed);
    if (changed && !file_.empty()) {
      saveLocked();
    }
    return result;
  }

 private:
  std::string lockPath() const { return file_ + ".lock"; }
  void loadLocked();  // reads the file when its stamp changed
  void saveLocked();  // writes the file (write, then rename)

  const std::string file_;  // empty: in memory only
  const sdk::Host& host_;

  std::mutex mu_;     // within this process; the flock is between processes
  CloudState state_;  // guarded by mu_
  FileStamp stamp_;   // guarded by mu_: the file as last read or written
};

}  // namespace ccm::fakecloud
