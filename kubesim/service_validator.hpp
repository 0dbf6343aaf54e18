// ServiceValidator: kube-apiserver's Service validation on the prepared object (after
// ServiceAllocator's defaulting, drops and allocation): ValidateService's spec rules,
// ValidateServiceUpdate's immutable fields and ValidateLoadBalancerStatus, with the server's
// field paths and texts.
//
// THREAD: stateless.
#pragma once

#include "kubesim/api_error.hpp"
#include "kubesim/json_util.hpp"

namespace ccm::kubesim {

// Spec rules of a Service being created or updated.
void validateService(const JsonValue& obj, FieldErrors& errs);
// status.loadBalancer.ingress: IPs must be IPs, hostnames DNS names and not IPs.
void validateLoadBalancerStatus(const JsonValue& obj, FieldErrors& errs);
// What an update may not change: cluster IPs, loadBalancerClass, healthCheckNodePort.
void validateServiceUpdate(const JsonValue& obj, const JsonValue& old, FieldErrors& errs);

}  // namespace ccm::kubesim
