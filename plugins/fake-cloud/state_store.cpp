// StateStore: the fake cloud's CloudState, in memory or in the state file shared by processes.
#include "plugins/fake-cloud/state_store.hpp"

#include <cstdio>
#include <fstream>

#include "plugins/fake-cloud/config.hpp"
#include "plugins/fake-cloud/state_json.hpp"

namespace ccm::fakecloud {

StateStore::StateStore(std::string state_file, const sdk::Host& host)
    : file_(std::move(state_file)), host_(host) {
  if (file_.empty()) {
    return;
  }
  std::lock_guard lock(mu_);
  if (!createFile(lockPath())) {
    throw ConfigError("stateFile: cannot create \"" + lockPath() + "\"");
  }
  loadLocked();
}

void StateStore::loadLocked() {
  auto stamp = stampOf(file_);
  if (!stamp) {
    return;  // no state yet: an empty cloud
  }
  if (*stamp == stamp_) {
    return;
  }
  auto text = readFile(file_);
  if (!text) {
    return;
  }
  auto state = decodeState(*text);
  if (!state) {
    host_.logFields(CCM_LOG_ERROR, "fake-cloud: state file is not valid JSON; ignoring",
                    {{"file", file_}});
    return;
  }
  state_ = std::move(*state);
  stamp_ = *stamp;
}

void StateStore::saveLocked() {
  std::string text = encodeState(state_);
  // Write-then-rename so a reader never sees half a file.
  std::string tmp = file_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.put('\n');
    if (!out) {
      host_.logFields(CCM_LOG_ERROR, "fake-cloud: cannot write the state file", {{"file", tmp}});
      return;
    }
  }
  if (std::rename(tmp.c_str(), file_.c_str()) != 0) {
    host_.logFields(CCM_LOG_ERROR, "fake-cloud: cannot replace the state file", {{"file", file_}});
    return;
  }
  if (auto stamp = stampOf(file_)) {
    stamp_ = *stamp;
  }
}

}  // namespace ccm::fakecloud
