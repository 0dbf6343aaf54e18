// Fuzz target: the streaming Node and Service decoders (host/kube/node_decoder.cpp,
// service_decoder.cpp) on one JSON object, as a single GET decodes it. The first byte picks
// the kind. A decoded object must be readable in full and keep its documented invariants
// (labels and annotations sorted by key, so lookups work). Node inputs also go through
// resourceVersionOf (the version read from a write's answer), which must never crash, and
// through scanNodeEvent (as a watch event line), whose views must lie inside the input.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/kube/objects/node_event_scan.hpp"
#include "test/fuzz/object_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view json(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    auto s = ccm::kube::decodeService(json);
    if (s.ok()) {
      ccm::fuzz::touchService(**s);
    }
  } else {
    auto n = ccm::kube::decodeNode(json);
    if (n.ok()) {
      ccm::fuzz::touchNode(**n);
    }
    if (auto rv = ccm::kube::resourceVersionOf(json)) {
      ccm::fuzz::touch(*rv);
    }
    static ccm::kube::NodeEventScan scan;
    if (ccm::kube::scanNodeEvent(json, scan)) {
      auto inside = [json](std::string_view v) {
        if (!v.empty() &&
            (v.data() < json.data() || v.data() + v.size() > json.data() + json.size())) {
          std::abort();
        }
      };
      inside(scan.type);
      inside(scan.name);
      inside(scan.resource_version);
      for (const auto& c : scan.conditions) {
        inside(c.type);
        inside(c.heartbeat);
      }
    }
  }
  return 0;
}
