// scanNodeEvent: what a Node watch event says, read off its bytes without parsing them.
//
// A kubelet's status heartbeat changes, of a Node, only its resourceVersion, its
// managedFields' times and its conditions' lastHeartbeatTime. The scan walks one watch event
// (one line, `{"type":...,"object":{...}}`), finds those values and the event's type, the
// node's name and its conditions' types, and computes a fingerprint of every other byte. Two
// events with the same fingerprint differ at most in those values, so the second can be made
// from the Node decoded from the first (NodeDecoder::finishScanned) without running the JSON
// parser over it. Containers it has no interest in are stepped over to their end, and once
// the metadata and the conditions are read the rest of the line is only fingerprinted, in
// one run. Anything the scan does not understand (a value it cannot place, an escape in a
// name it needs, a line that ends early) makes it answer false, and the event is parsed as
// usual; a false answer is never wrong, only slower. A line it accepts may still be malformed
// where it did not look; its fingerprint then matches no node's, since nodes keep only the
// fingerprints of events that parsed.
//
// THREAD: a NodeEventScan is one caller's scratch.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ccm::kube {

struct NodeEventScan {
  struct Condition {
    std::string_view type;
    std::string_view heartbeat;  // lastHeartbeatTime as written; empty when absent
  };
  std::string_view type;              // the event's type ("MODIFIED", ...)
  std::string_view name;              // object.metadata.name
  std::string_view resource_version;  // object.metadata.resourceVersion
  std::vector<Condition> conditions;  // object.status.conditions, in order
  // Of every byte but the event's type, the resourceVersion, the managedFields' `time` and
  // the conditions' lastHeartbeatTime (each left-out value marked where it was). Never 0.
  uint64_t fingerprint = 0;
};

// Scans one watch event (`line`, without its newline). Views point into `line`. False when
// the line is not a JSON object the scan can follow; `out` is then unspecified.
bool scanNodeEvent(std::string_view line, NodeEventScan& out);

}  // namespace ccm::kube
