// AbiInput: the C structs a call passes to a plugin, built in memory the call owns.
//
// Inputs are copied into an arena that lives as long as the call's task — not the caller's
// stack — so a call abandoned past its deadline can keep reading its inputs safely while the
// caller has long moved on. args() is the typed conversion the generic call path uses: one
// overload per kind of input an ABI function takes.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ccm/provider_abi.h"
#include "ccm/types.hpp"
#include "host/plugin/provider.hpp"

namespace ccm::plugin {

class AbiInput {
 public:
  // nodes_with_json: whether nodes carry their object JSON (their capability asked for it).
  explicit AbiInput(bool nodes_with_json = false) : nodes_with_json_(nodes_with_json) {}
  AbiInput(const AbiInput&) = delete;
  AbiInput& operator=(const AbiInput&) = delete;

  // The C arguments one typed input becomes, in the order the ABI function takes them.
  std::tuple<ccm_str> args(std::string_view s) { return {str(s)}; }
  std::tuple<const ccm_node*> args(const NodeRef& n) { return {node(n)}; }
  std::tuple<const ccm_node* const*, size_t> args(std::span<const NodeRef> ns) {
    return {nodes(ns), ns.size()};
  }
  // A shared host set: its C form is built once per set and kept alive by every call that
  // uses it (an abandoned call included), not copied into each call's arena.
  std::tuple<const ccm_node* const*, size_t> args(const SharedHosts& hosts);
  std::tuple<const ccm_service*> args(const ServiceRef& s) { return {service(s)}; }
  std::tuple<const ccm_route*> args(const Route& r) { return {route(r)}; }

  ccm_str str(std::string_view s);

  // n zero-initialised objects of a trivially copyable ABI type.
  template <typename T>
  T* array(size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n == 0) {
      return nullptr;
    }
    // T is a pointer type for arrays of pointers (nodes, ports): its size is the one meant.
    const size_t bytes = sizeof(T) * n;  // NOLINT(bugprone-sizeof-expression)
    void* p = allocate(bytes, alignof(T));
    std::memset(p, 0, bytes);
    return static_cast<T*>(p);
  }

  const ccm_node* node(const NodeRef& n);
  const ccm_node* const* nodes(std::span<const NodeRef> ns);
  const ccm_service* service(const ServiceRef& s);
  const ccm_route* route(const Route& r);
  const ccm_lb_status* lbStatus(const LoadBalancerStatus* s);

 private:
  void* allocate(size_t bytes, size_t align);

  // One zeroed ABI struct with its struct_size set.
  template <typename T>
  T* object() {
    T* out = array<T>(1);
    out->struct_size = sizeof(T);
    return out;
  }
  // Every item of items converted to a T, in an array (null when there are none).
  template <typename T, typename Items, typename Convert>
  const T* list(const Items& items, Convert convert) {
    T* out = array<T>(std::size(items));
    size_t i = 0;
    for (const auto& item : items) {
      out[i++] = convert(item);
    }
    return out;
  }
  // The same as an array of pointers, each to its own T.
  template <typename T, typename Items, typename Convert>
  const T* const* pointers(const Items& items, Convert convert) {
    return list<const T*>(items, [&](const auto& item) {
      T* one = array<T>(1);
      *one = convert(item);
      return one;
    });
  }
  // Each fills the array a struct field points at and returns the item count, so that a
  // struct's array and its count are set together: out->label_count = put(out->labels, ...).
  size_t put(const ccm_kv*& to, std::span<const KeyValueRef> items);
  size_t put(const ccm_str*& to, std::span<const std::string_view> items);
  template <typename Items>  // addresses of any type with .type and .address
  size_t put(const ccm_node_address*& to, const Items& items) {
    to = list<ccm_node_address>(items, [&](const auto& a) {
      return ccm_node_address{str(a.type), str(a.address)};
    });
    return std::size(items);
  }
  template <typename T, typename Items, typename Convert>
  size_t put(const T* const*& to, const Items& items, Convert convert) {
    to = pointers<T>(items, convert);
    return std::size(items);
  }

  const bool nodes_with_json_;
  std::vector<std::shared_ptr<const void>> shared_;  // shared host forms this call reads
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  size_t used_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ccm::plugin
