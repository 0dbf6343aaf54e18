// ccm/catalog.hpp — the capabilities of ccm/provider_abi.h as C++ data (header-only, C++20):
// one entry per capability table, naming its ID and every function slot with its name, the
// emit_* output the call may use, the minor that introduced it and whether it is required.
//
// Everything that walks the capabilities reads them from here: the SDK's negotiation checks
// (ccm/negotiation.hpp: the required slots), the fake host (ccm/testing/fake_host.hpp), the
// host's call descriptors (each takes its slot, name and output from an entry here) and
// ccm-provider-check. The catalog-matches-header test (test/abi) parses the header and fails
// when a slot of a capability table is missing here, listed twice, or described differently.
//
// Adding a capability: its table in provider_abi.h, then one Capability<> specialisation
// below and its table in Tables (docs/writing-a-provider.md, "Adding a capability").
//
// THREAD: compile-time data only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "ccm/output_checks.hpp"
#include "ccm/provider_abi.h"

namespace ccm::sdk {
inline namespace v1 {
namespace catalog {

// A string literal as a template argument (a slot's or a runner's name).
template <size_t N>
struct Literal {
  // Implicit, so that an entry can say "instance_exists".
  constexpr Literal(const char (&text)[N]) { std::copy_n(text, N, chars); }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N]{};
};

template <typename Member>
struct MemberOf;
template <typename Table, typename Fn>
struct MemberOf<Fn Table::*> {
  using table = Table;
};

// Whether a plugin must set a slot: every 1.0 slot is required; a slot appended in a later
// minor is optional (a plugin built before it cannot have it), NULL meaning "not supported".
enum class Need { Required, Optional };

// One function slot of a capability table.
template <auto Member, Literal Name, OutputKind Output = OutputKind::None, uint32_t SinceMinor = 0,
          Need Needed = Need::Required>
struct Slot {
  using Table = typename MemberOf<decltype(Member)>::table;
  static constexpr auto kSlot = Member;
  static constexpr std::string_view kName = Name.view();
  static constexpr OutputKind kOutput = Output;
  static constexpr uint32_t kSinceMinor = SinceMinor;
  static constexpr bool kRequired = Needed == Need::Required;
  static_assert(SinceMinor == 0 || Needed == Need::Optional,
                "a slot appended after 1.0 must be optional: older plugins lack it");
};

// One capability: its ID and its slots, in the header's order.
template <Literal Id, typename... Slots>
struct Entry {
  static constexpr std::string_view kId = Id.view();
  using SlotList = std::tuple<Slots...>;
};

template <typename Table>
struct Capability;

// ---- ccm.instances/1 ---------------------------------------------------------------------

using InstanceExists = Slot<&ccm_instances_v1::instance_exists, "instance_exists">;
using InstanceShutdown = Slot<&ccm_instances_v1::instance_shutdown, "instance_shutdown">;
using InstanceMetadata =
    Slot<&ccm_instances_v1::instance_metadata, "instance_metadata", OutputKind::Metadata>;

template <>
struct Capability<ccm_instances_v1>
    : Entry<CCM_CAP_INSTANCES, InstanceExists, InstanceShutdown, InstanceMetadata> {};

// ---- ccm.instances.batch/1 ---------------------------------------------------------------

using InstanceMetadataBatch = Slot<&ccm_instances_batch_v1::instance_metadata_batch,
                                   "instance_metadata_batch", OutputKind::Metadata>;

template <>
struct Capability<ccm_instances_batch_v1> : Entry<CCM_CAP_INSTANCES_BATCH, InstanceMetadataBatch> {
};

// ---- ccm.loadbalancer/1 ------------------------------------------------------------------

using GetLoadBalancer =
    Slot<&ccm_loadbalancer_v1::get_load_balancer, "get_load_balancer", OutputKind::LbStatus>;
using GetLoadBalancerName = Slot<&ccm_loadbalancer_v1::get_load_balancer_name,
                                 "get_load_balancer_name", OutputKind::String>;
using EnsureLoadBalancer =
    Slot<&ccm_loadbalancer_v1::ensure_load_balancer, "ensure_load_balancer", OutputKind::LbStatus>;
using UpdateLoadBalancer = Slot<&ccm_loadbalancer_v1::update_load_balancer, "update_load_balancer">;
using EnsureLoadBalancerDeleted =
    Slot<&ccm_loadbalancer_v1::ensure_load_balancer_deleted, "ensure_load_balancer_deleted">;

template <>
struct Capability<ccm_loadbalancer_v1>
    : Entry<CCM_CAP_LOADBALANCER, GetLoadBalancer, GetLoadBalancerName, EnsureLoadBalancer,
            UpdateLoadBalancer, EnsureLoadBalancerDeleted> {};

// ---- ccm.routes/1 ------------------------------------------------------------------------

using ListRoutes = Slot<&ccm_routes_v1::list_routes, "list_routes", OutputKind::Routes>;
using CreateRoute = Slot<&ccm_routes_v1::create_route, "create_route">;
using DeleteRoute = Slot<&ccm_routes_v1::delete_route, "delete_route">;

template <>
struct Capability<ccm_routes_v1> : Entry<CCM_CAP_ROUTES, ListRoutes, CreateRoute, DeleteRoute> {};

// ---- every capability --------------------------------------------------------------------

// Every capability table, in the order the host and the fake host fetch them.
using Tables =
    std::tuple<ccm_instances_v1, ccm_instances_batch_v1, ccm_loadbalancer_v1, ccm_routes_v1>;

// Calls fn(Slot{}) for every slot entry of Table, in order (only the type matters).
template <typename Table, typename Fn>
constexpr void forEachSlot(Fn&& fn) {
  std::apply([&](auto... slot) { (fn(slot), ...); }, typename Capability<Table>::SlotList{});
}

// Calls fn(Table{}) for every capability table, in Tables' order (a value-initialised table:
// only its type matters).
template <typename Fn>
constexpr void forEachCapability(Fn&& fn) {
  std::apply([&](auto... table) { (fn(table), ...); }, Tables{});
}

// Every capability ID, "a, b, c and d" (for the "provides no capability" message).
inline std::string capabilityIdList() {
  std::string out;
  size_t left = std::tuple_size_v<Tables>;
  forEachCapability([&](auto table) {
    out += Capability<decltype(table)>::kId;
    --left;
    out += left > 1 ? ", " : (left == 1 ? " and " : "");
  });
  return out;
}

// std::tuple<Wrap<T>...> for every capability table T, in Tables' order.
template <template <typename> typename Wrap, typename List = Tables>
struct EachTable;
template <template <typename> typename Wrap, typename... Ts>
struct EachTable<Wrap, std::tuple<Ts...>> {
  using type = std::tuple<Wrap<Ts>...>;
};

}  // namespace catalog
}  // namespace v1
}  // namespace ccm::sdk
