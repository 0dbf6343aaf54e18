// The catalog of the ABI: one descriptor per function the host calls, and one per capability.
// AbiCaller (abi_call.hpp) runs any described function; nothing else is written per function.
//
// A function descriptor (derived from Function<slot, name, output>) says:
//   Table, kSlot    the capability table and the function pointer in it
//   kName           the call's name in metrics, logs and errors (the slot's field name)
//   kOutput         which emit_* service the plugin may use during the call
//   Out             the out-parameter passed after the inputs (NoOut: none), arena-owned
//   Result          what the typed method returns (Status: just the call's status)
//   read(done[, inputs...])  the Result from a successful call's outputs (state locked)
//   kAlsoSuccess    a failure code the ABI reads as success (routes' idempotent create/delete)
//   kReadsFailures  read() sees failed calls too (the batch's per-node results)
// The typed inputs are converted by AbiInput::args, one overload per input type.
//
// A capability descriptor (CapabilitySpec<Table>, derived from Capability<...>) says its ID,
// its runner's name, which ProviderOptions deadline and ProviderInfo entry are its, and its
// functions (every one a required slot, checked when the provider is created).
//
// Adding a function: a descriptor here (and a read() in abi_functions.cpp when it returns
// more than a Status), its entry in its capability's Functions, and the typed method that
// calls it. A new input type also needs its AbiInput::args overload.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "ccm/provider_abi.h"
#include "host/plugin/abi_call.hpp"
#include "host/plugin/host_services.hpp"
#include "host/plugin/provider.hpp"
#include "host/plugin/provider_options.hpp"
#include "host/runtime/status.hpp"

namespace ccm::plugin::abi {

// A string literal as a template argument (a function's or a capability's name).
template <size_t N>
struct Literal {
  // Implicit, so that a descriptor can say "instance_exists".
  constexpr Literal(const char (&text)[N]) { std::copy_n(text, N, chars); }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N]{};
};

template <typename Slot>
struct TableOf;
template <typename Table, typename Fn>
struct TableOf<Fn Table::*> {
  using type = Table;
};

// The base of every function descriptor: its slot, name and output, and the defaults.
template <auto Slot, Literal Name, OutputKind Output = OutputKind::None>
struct Function {
  using Table = typename TableOf<decltype(Slot)>::type;
  static constexpr auto kSlot = Slot;
  static constexpr std::string_view kName = Name.view();
  static constexpr OutputKind kOutput = Output;
  using Out = NoOut;
  using Result = Status;
  static constexpr Code kAlsoSuccess = Code::Ok;
  static constexpr bool kReadsFailures = false;
};

// ---- ccm.instances/1 ---------------------------------------------------------------------

struct InstanceExists : Function<&ccm_instances_v1::instance_exists, "instance_exists"> {
  using Out = ccm_existence;
  using Result = StatusOr<Existence>;
  static Result read(const Finished<Out>& done);
};

struct InstanceShutdown : Function<&ccm_instances_v1::instance_shutdown, "instance_shutdown"> {
  using Out = ccm_power;
  using Result = StatusOr<Power>;
  static Result read(const Finished<Out>& done);
};

struct InstanceMetadata
    : Function<&ccm_instances_v1::instance_metadata, "instance_metadata", OutputKind::Metadata> {
  using Result = StatusOr<std::optional<sdk::InstanceMetadata>>;
  static Result read(const Finished<Out>& done);
};

// ---- ccm.instances.batch/1 ---------------------------------------------------------------

// One chunk of at most max_batch_size nodes; the result has one entry per node.
struct InstanceMetadataBatch : Function<&ccm_instances_batch_v1::instance_metadata_batch,
                                        "instance_metadata_batch", OutputKind::Metadata> {
  static constexpr bool kReadsFailures = true;
  using Result = StatusOr<std::vector<MetadataResult>>;
  static Result read(const Finished<Out>& done, std::span<const NodeRef> nodes);
};

// ---- ccm.loadbalancer/1 ------------------------------------------------------------------

struct GetLoadBalancer
    : Function<&ccm_loadbalancer_v1::get_load_balancer, "get_load_balancer", OutputKind::LbStatus> {
  using Out = bool;
  using Result = StatusOr<std::optional<LoadBalancerStatus>>;
  static Result read(const Finished<Out>& done);
};

struct GetLoadBalancerName : Function<&ccm_loadbalancer_v1::get_load_balancer_name,
                                      "get_load_balancer_name", OutputKind::String> {
  using Result = StatusOr<std::string>;
  static Result read(const Finished<Out>& done);
};

struct EnsureLoadBalancer : Function<&ccm_loadbalancer_v1::ensure_load_balancer,
                                     "ensure_load_balancer", OutputKind::LbStatus> {
  using Result = StatusOr<LoadBalancerStatus>;
  static Result read(const Finished<Out>& done);
};

struct UpdateLoadBalancer
    : Function<&ccm_loadbalancer_v1::update_load_balancer, "update_load_balancer"> {};

struct EnsureLoadBalancerDeleted
    : Function<&ccm_loadbalancer_v1::ensure_load_balancer_deleted, "ensure_load_balancer_deleted"> {
};

// ---- ccm.routes/1 ------------------------------------------------------------------------

struct ListRoutes : Function<&ccm_routes_v1::list_routes, "list_routes", OutputKind::Routes> {
  using Result = StatusOr<std::vector<Route>>;
  static Result read(const Finished<Out>& done);
};

// ALREADY_EXISTS from a create and NOT_FOUND from a delete are success (both are idempotent).
struct CreateRoute : Function<&ccm_routes_v1::create_route, "create_route"> {
  static constexpr Code kAlsoSuccess = Code::AlreadyExists;
};

struct DeleteRoute : Function<&ccm_routes_v1::delete_route, "delete_route"> {
  static constexpr Code kAlsoSuccess = Code::NotFound;
};

// ---- the capabilities --------------------------------------------------------------------

// The base of every capability descriptor: its ID, its runner's name (threads
// "ccm-<runner>"), its deadline in ProviderOptions, its entry in ProviderInfo, its functions.
template <Literal Id, Literal Runner, auto Timeout, auto Info, typename... Fs>
struct Capability {
  static constexpr std::string_view kId = Id.view();
  static constexpr std::string_view kRunner = Runner.view();
  static constexpr auto kTimeout = Timeout;
  static constexpr auto kInfo = Info;
  using Functions = std::tuple<Fs...>;
};

template <typename Table>
struct CapabilitySpec;

template <>
struct CapabilitySpec<ccm_instances_v1>
    : Capability<CCM_CAP_INSTANCES, "instances", &ProviderOptions::instances_timeout,
                 &ProviderInfo::instances, InstanceExists, InstanceShutdown, InstanceMetadata> {};

template <>
struct CapabilitySpec<ccm_instances_batch_v1>
    : Capability<CCM_CAP_INSTANCES_BATCH, "instances.batch", &ProviderOptions::batch_timeout,
                 &ProviderInfo::instances_batch, InstanceMetadataBatch> {};

template <>
struct CapabilitySpec<ccm_loadbalancer_v1>
    : Capability<CCM_CAP_LOADBALANCER, "loadbalancer", &ProviderOptions::load_balancer_timeout,
                 &ProviderInfo::load_balancer, GetLoadBalancer, GetLoadBalancerName,
                 EnsureLoadBalancer, UpdateLoadBalancer, EnsureLoadBalancerDeleted> {};

template <>
struct CapabilitySpec<ccm_routes_v1>
    : Capability<CCM_CAP_ROUTES, "routes", &ProviderOptions::routes_timeout, &ProviderInfo::routes,
                 ListRoutes, CreateRoute, DeleteRoute> {};

}  // namespace ccm::plugin::abi
