// The catalog of the ABI: one descriptor per function the host calls, and one per capability.
// AbiCaller (abi_call.hpp) runs any described function; nothing else is written per function.
//
// What the ABI itself says about a slot (its table, name, output kind, since/required) is in
// the SDK's catalog (ccm/catalog.hpp); a descriptor adds only what is the host's. A function
// descriptor (derived from Function<catalog entry>) says:
//   Table, kSlot    the capability table and the function pointer in it (from the catalog)
//   kName           the call's name in metrics, logs and errors (the catalog's slot name)
//   kOutput         which emit_* service the plugin may use during the call (the catalog's)
//   Out             the out-parameter passed after the inputs (NoOut: none), arena-owned
//   Result          what the typed method returns (Status: just the call's status)
//   read(done[, inputs...])  the Result from a successful call's outputs (state locked)
//   kAlsoSuccess    a failure code the ABI reads as success (routes' idempotent create/delete)
//   kReadsFailures  read() sees failed calls too (the batch's per-node results)
// The typed inputs are converted by AbiInput::args, one overload per input type.
//
// A capability descriptor (CapabilitySpec<Table>, derived from Capability<...>) says its
// runner's name, which ProviderOptions deadline and ProviderInfo entry are its, and its
// functions; its ID comes from the catalog, and its functions must be the catalog's slots,
// in the catalog's order (a static_assert below), so a slot the host does not call fails the
// build. The required slots are checked when the provider is created (ccm/negotiation.hpp).
//
// Adding a function: its catalog entry, a descriptor here (and a read() in abi_functions.cpp
// when it returns more than a Status), its entry in its capability's Functions, and the typed
// method that calls it. A new input type also needs its AbiInput::args overload.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ccm/catalog.hpp"
#include "ccm/provider_abi.h"
#include "host/plugin/abi_call.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/provider.hpp"
#include "host/plugin/provider_options.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin::abi {

namespace catalog = sdk::catalog;
using catalog::Literal;

// The base of every function descriptor: its catalog entry, and the host's defaults.
template <typename Entry>
struct Function {
  using Slot = Entry;
  using Table = typename Entry::Table;
  static constexpr auto kSlot = Entry::kSlot;
  static constexpr std::string_view kName = Entry::kName;
  static constexpr OutputKind kOutput = Entry::kOutput;
  using Out = NoOut;
  using Result = Status;
  static constexpr Code kAlsoSuccess = Code::Ok;
  static constexpr bool kReadsFailures = false;
};

// ---- ccm.instances/1 ---------------------------------------------------------------------

struct InstanceExists : Function<catalog::InstanceExists> {
  using Out = ccm_existence;
  using Result = StatusOr<Existence>;
  static Result read(const Finished<Out>& done);
};

struct InstanceShutdown : Function<catalog::InstanceShutdown> {
  using Out = ccm_power;
  using Result = StatusOr<Power>;
  static Result read(const Finished<Out>& done);
};

struct InstanceMetadata : Function<catalog::InstanceMetadata> {
  using Result = StatusOr<std::optional<sdk::InstanceMetadata>>;
  static Result read(const Finished<Out>& done);
};

// ---- ccm.instances.batch/1 ---------------------------------------------------------------

// One chunk of at most max_batch_size nodes; the result has one entry per node.
struct InstanceMetadataBatch : Function<catalog::InstanceMetadataBatch> {
  static constexpr bool kReadsFailures = true;
  using Result = StatusOr<std::vector<MetadataResult>>;
  static Result read(const Finished<Out>& done, std::span<const NodeRef> nodes);
};

// ---- ccm.loadbalancer/1 ------------------------------------------------------------------

struct GetLoadBalancer : Function<catalog::GetLoadBalancer> {
  using Out = bool;
  using Result = StatusOr<std::optional<LoadBalancerStatus>>;
  static Result read(const Finished<Out>& done);
};

struct GetLoadBalancerName : Function<catalog::GetLoadBalancerName> {
  using Result = StatusOr<std::string>;
  static Result read(const Finished<Out>& done);
};

struct EnsureLoadBalancer : Function<catalog::EnsureLoadBalancer> {
  using Result = StatusOr<LoadBalancerStatus>;
  static Result read(const Finished<Out>& done);
};

struct UpdateLoadBalancer : Function<catalog::UpdateLoadBalancer> {};

struct EnsureLoadBalancerDeleted : Function<catalog::EnsureLoadBalancerDeleted> {};

// ---- ccm.routes/1 ------------------------------------------------------------------------

struct ListRoutes : Function<catalog::ListRoutes> {
  using Result = StatusOr<std::vector<Route>>;
  static Result read(const Finished<Out>& done);
};

// ALREADY_EXISTS from a create and NOT_FOUND from a delete are success (both are idempotent).
struct CreateRoute : Function<catalog::CreateRoute> {
  static constexpr Code kAlsoSuccess = Code::AlreadyExists;
};

struct DeleteRoute : Function<catalog::DeleteRoute> {
  static constexpr Code kAlsoSuccess = Code::NotFound;
};

// ---- the capabilities --------------------------------------------------------------------

// The base of every capability descriptor: its ID (the catalog's), its runner's name
// (threads "ccm-<runner>"), its deadline in ProviderOptions, its entry in ProviderInfo, its
// functions, which must be the catalog's slots of Table in the catalog's order.
template <typename Table, Literal Runner, auto Timeout, auto Info, typename... Fs>
struct Capability {
  static constexpr std::string_view kId = catalog::Capability<Table>::kId;
  static constexpr std::string_view kRunner = Runner.view();
  static constexpr auto kTimeout = Timeout;
  static constexpr auto kInfo = Info;
  using Functions = std::tuple<Fs...>;
  static_assert(std::is_same_v<typename catalog::Capability<Table>::SlotList,
                               std::tuple<typename Fs::Slot...>>,
                "the host's functions of a capability must be its catalog slots, in order");
};

template <typename Table>
struct CapabilitySpec;

template <>
struct CapabilitySpec<ccm_instances_v1>
    : Capability<ccm_instances_v1, "instances", &ProviderOptions::instances_timeout,
                 &ProviderInfo::instances, InstanceExists, InstanceShutdown, InstanceMetadata> {};

template <>
struct CapabilitySpec<ccm_instances_batch_v1>
    : Capability<ccm_instances_batch_v1, "instances.batch", &ProviderOptions::batch_timeout,
                 &ProviderInfo::instances_batch, InstanceMetadataBatch> {};

template <>
struct CapabilitySpec<ccm_loadbalancer_v1>
    : Capability<ccm_loadbalancer_v1, "loadbalancer", &ProviderOptions::load_balancer_timeout,
                 &ProviderInfo::load_balancer, GetLoadBalancer, GetLoadBalancerName,
                 EnsureLoadBalancer, UpdateLoadBalancer, EnsureLoadBalancerDeleted> {};

template <>
struct CapabilitySpec<ccm_routes_v1>
    : Capability<ccm_routes_v1, "routes", &ProviderOptions::routes_timeout, &ProviderInfo::routes,
                 ListRoutes, CreateRoute, DeleteRoute> {};

}  // namespace ccm::plugin::abi
