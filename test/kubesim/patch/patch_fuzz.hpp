// A libFuzzer-style driver of the patch engine: one input, every invariant checked with abort().
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccm::kubesim {

// The first byte of data picks the patch type and the kind, the rest is the body, applied to a
// realistic node. Aborts if a failed patch changed the object, if a patch that succeeded left
// something other than an object, or if a rejection has an implausible status code.
int fuzzPatchOnce(const uint8_t* data, size_t size);

}  // namespace ccm::kubesim
