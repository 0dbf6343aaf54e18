// The child's side of one call: decodes a Call frame, runs it on the in-process provider and
// encodes the Reply frame. The host's side (isolated_provider.cpp) writes the same layouts.
//
// Call:  kind, id (u64), method (u8), the method's arguments in Provider's order
//        (nodes, services, routes as in values.hpp; node lists as a count then the nodes).
// Reply: kind, id (u64), status; when OK, the method's value (existence/power as one byte,
//        optional values as a boolean then the value, lists as a count then the items).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "host/plugin/isolation/wire.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::plugin::isolation {

// The id of a Call payload, when it is one and the id can be read.
std::optional<uint64_t> callId(std::string_view payload);

// The hosts of the last load-balancer call, decoded once and kept with the provider's forms of
// them. The host encodes its host set once per wave and sends the same bytes at the end of
// every ensure and host update of the wave; without this the child decoded every host (a
// string each field) and the provider's adapter converted them again for every call. A call
// whose hosts are byte for byte the kept ones reuses them (the provider gets one shared set
// for the wave), other hosts replace them, and hosts unused for `idle` are dropped.
//
// THREAD: every method may be called from any thread.
class HostSetCache {
 public:
  explicit HostSetCache(std::chrono::steady_clock::duration idle = std::chrono::seconds(30));
  ~HostSetCache();
  HostSetCache(const HostSetCache&) = delete;
  HostSetCache& operator=(const HostSetCache&) = delete;

  struct Hosts;
  // The hosts encoded in the rest of `r` (a node list up to the end of the call), read
  // through `r`: from the kept ones when the bytes are equal, else decoded (and kept when
  // they decode exactly to the end). On a malformed list `r` fails as a plain decode would;
  // null when `r` had failed already.
  std::shared_ptr<const Hosts> take(Reader& r);
  // Drops the kept hosts when unused for `idle`, and gives freed heap back. True if dropped.
  bool dropIdle();
  // Host lists decoded so far (tests).
  uint64_t decodes() const;

 private:
  const std::chrono::steady_clock::duration idle_;
  mutable std::mutex mu_;
  std::shared_ptr<Hosts> kept_;  // guarded by mu_
  std::chrono::steady_clock::time_point used_;  // guarded by mu_
  uint64_t decodes_ = 0;                        // guarded by mu_
};

// Runs the call and returns the reply payload. A call that cannot be decoded answers
// INVALID_ARGUMENT naming what is wrong (the provider is not called). With `hosts`, a
// load-balancer call's hosts come from it (see HostSetCache) and reach the provider as a
// shared host set.
std::string serveCall(Provider& provider, std::string_view payload,
                      HostSetCache* hosts = nullptr);

}  // namespace ccm::plugin::isolation
