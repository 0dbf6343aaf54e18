// StateFile: kubesim's persistence. Saves every stored object and the resourceVersion counter
// to one JSON file (written atomically) and loads it back, so a restart can keep the cluster
// (but, like a restarted API server, not its watch history).
//
// THREAD: pure functions over a snapshot.
#pragma once

#include <string>

#include "host/runtime/status.hpp"
#include "kubesim/object_store.hpp"

namespace ccm::kubesim {

class StateFile {
 public:
  static Status save(const ObjectStore::Snapshot& snapshot, const std::string& path);
  static StatusOr<ObjectStore::Snapshot> load(const std::string& path);
};

}  // namespace ccm::kubesim
