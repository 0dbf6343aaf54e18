// Maps an OpenStack HTTP error response onto a sdk::Status: the code from the HTTP status, the
// service's own message from the body, the Retry-After header and the request ID.
#pragma once

#include <string>

#include "plugins/openstack/http_client.hpp"
#include "ccm/types.hpp"

namespace ccm::openstack {

// The request ID a service put on its answer (x-openstack-request-id, x-compute-request-id).
std::string requestIdOf(const HttpResponse& response);

// The human message inside an OpenStack error body ({"itemNotFound":{"message":..}},
// {"NeutronError":{"message":..}}, {"faultstring":..}, {"error":{"message":..}}, ...), cut to
// a sane length; the raw body prefix when none is found.
std::string errorMessageOf(const std::string& body);

// 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND,
// 409 ABORTED, 413/429 RESOURCE_EXHAUSTED, 5xx UNAVAILABLE, others INTERNAL. The message is
// "<what>: HTTP <code>: <service message> (request <id>)".
sdk::Status httpError(const std::string& what, const HttpResponse& response);

}  // namespace ccm::openstack
