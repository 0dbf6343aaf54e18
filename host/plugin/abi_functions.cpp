// How each ABI function's typed result is read from what its call left: the out-parameter,
// the emitted outputs, and the checks of outputs the function must have emitted.
#include "host/plugin/abi_functions.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <utility>

#include "ccm/output_checks.hpp"

namespace ccm::plugin::abi {

namespace {

// A value outside the ABI's set: a counted violation, and the call fails as INTERNAL.
template <typename E, typename Accept>
StatusOr<E> readEnum(const Finished<int32_t>& done, Accept accept) {
  E value{};
  if (std::string problem = accept(*done.out, &value); !problem.empty()) {
    done.violation("invalid_output", problem);
    return Status(Code::Internal,
                  fmt::format("provider {} returned invalid output: {}", done.provider, problem));
  }
  return value;
}

}  // namespace

InstanceExists::Result InstanceExists::read(const Finished<Out>& done) {
  return readEnum<Existence>(done, sdk::acceptExistence);
}

InstanceShutdown::Result InstanceShutdown::read(const Finished<Out>& done) {
  return readEnum<Power>(done, sdk::acceptPower);
}

InstanceMetadata::Result InstanceMetadata::read(const Finished<Out>& done) {
  return std::move(done.state->metadata[0]);
}

InstanceMetadataBatch::Result InstanceMetadataBatch::read(const Finished<Out>& done,
                                                          std::span<const NodeRef> nodes) {
  std::vector<MetadataResult> results;
  results.reserve(nodes.size());
  if (done.state == nullptr) {
    // Refused before it started (cancelled): every node of the chunk gets that answer.
    for (size_t i = 0; i < nodes.size(); ++i) {
      results.emplace_back(done.status);
    }
    return results;
  }
  CallState& state = *done.state;
  // A call that overstayed or emitted invalid output is void: none of its results count.
  bool void_call = done.status.code() == Code::DeadlineExceeded ||
                   (done.status.code() == Code::Internal && !state.violation.empty());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!void_call && state.metadata[i].has_value()) {
      results.emplace_back(std::move(*state.metadata[i]));
    } else if (!void_call && state.item_errors[i].has_value()) {
      results.emplace_back(*state.item_errors[i]);
    } else if (!done.status.ok()) {
      results.emplace_back(done.status);
    } else {
      done.violation("missing_output", "instance_metadata_batch returned OK without a result "
                                       "for every node");
      results.emplace_back(Status(
          Code::Unavailable,
          fmt::format("provider {} returned no result for node {}", done.provider, nodes[i].name)));
    }
  }
  return results;
}

GetLoadBalancer::Result GetLoadBalancer::read(const Finished<Out>& done) {
  if (!*done.out) {
    return std::optional<LoadBalancerStatus>();
  }
  if (!done.state->lb_status) {
    // "Exists" with no status would publish an empty one: the Service would lose its
    // ingress. A broken contract, not an answer.
    done.violation("missing_output", "get_load_balancer returned exists without a status");
    return Status(Code::Internal,
                  "provider returned OK from get_load_balancer with exists set but without a "
                  "load balancer status");
  }
  return std::optional<LoadBalancerStatus>(std::move(*done.state->lb_status));
}

GetLoadBalancerName::Result GetLoadBalancerName::read(const Finished<Out>& done) {
  if (!done.state->string_value) {
    done.violation("missing_output", "get_load_balancer_name returned OK without a name");
    return Status(Code::Internal,
                  "provider returned OK from get_load_balancer_name without a "
                  "name");
  }
  return *done.state->string_value;
}

EnsureLoadBalancer::Result EnsureLoadBalancer::read(const Finished<Out>& done) {
  if (!done.state->lb_status) {
    done.violation("missing_output", "ensure_load_balancer returned OK without a status");
    return Status(Code::Internal,
                  "provider returned OK from ensure_load_balancer without a "
                  "load balancer status");
  }
  return std::move(*done.state->lb_status);
}

ListRoutes::Result ListRoutes::read(const Finished<Out>& done) {
  return std::move(done.state->routes);
}

}  // namespace ccm::plugin::abi
