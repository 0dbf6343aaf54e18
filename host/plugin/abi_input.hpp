// AbiInput: the C structs a call passes to a plugin, built in memory the call owns.
//
// Inputs are copied into an arena that lives as long as the call's task — not the caller's
// stack — so a call abandoned past its deadline can keep reading its inputs safely while the
// caller has long moved on.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ccm/provider_abi.h"
#include "ccm/types.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::plugin {

class AbiInput {
 public:
  AbiInput() = default;
  AbiInput(const AbiInput&) = delete;
  AbiInput& operator=(const AbiInput&) = delete;

  ccm_str str(std::string_view s);

  // n zero-initialised objects of a trivially copyable ABI type.
  template <typename T>
  T* array(size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n == 0) {
      return nullptr;
    }
    void* p = allocate(sizeof(T) * n, alignof(T));
    std::memset(p, 0, sizeof(T) * n);
    return static_cast<T*>(p);
  }

  const ccm_node* node(const NodeRef& n, bool with_json);
  const ccm_node* const* nodes(std::span<const NodeRef> ns, bool with_json);
  const ccm_service* service(const ServiceRef& s);
  const ccm_route* route(const Route& r);
  const ccm_lb_status* lbStatus(const LoadBalancerStatus* s);

 private:
  void* allocate(size_t bytes, size_t align);
  const ccm_kv* kvs(std::span<const KeyValueRef> kv);
  const ccm_node_address* addresses(std::span<const AddressRef> a);

  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  size_t used_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ccm::plugin
