// ApiServer: kubesim's request pipeline, in the API server's filter order — fault injection,
// authentication (401 for anonymous or bad credentials), impersonation, authorization (403
// with the RBAC message), then routing: health and version, discovery and OpenAPI, the admin
// API (system:masters only), reviews and TokenRequest, and stored resources with content
// negotiation (JSON or Table; 406 otherwise).
//
// THREAD: handle() runs on connection strands (io threads), concurrently.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "kubesim/authenticator.hpp"
#include "kubesim/discovery.hpp"
#include "kubesim/fault_injector.hpp"
#include "kubesim/http_types.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/rbac_authorizer.hpp"
#include "kubesim/resource_handler.hpp"
#include "kubesim/review_handler.hpp"
#include "kubesim/served_surface.hpp"

namespace ccm::kubesim {

// The admin API seen from the request pipeline.
class AdminHandler {
 public:
  virtual ~AdminHandler() = default;
  virtual HttpResponse handleAdmin(const ApiRequest& request) = 0;
};

class ApiServer : public HttpHandler {
 public:
  struct Parts {
    boost::asio::io_context& io;
    ObjectStore& store;
    const Authenticator& authn;
    const RbacAuthorizer& authz;
    const Discovery& discovery;
    ResourceHandler& resources;
    ReviewHandler& reviews;
    FaultInjector& faults;
    AdminHandler& admin;
    std::function<std::string()> server_address;  // "127.0.0.1:port"
    ServedSurface surface;                         // what --server-version serves
  };

  explicit ApiServer(Parts parts) : p_(std::move(parts)) {}

  void handle(HttpRequest& request, Responder respond) override;

 private:
  void serve(const std::shared_ptr<HttpRequest>& request, const UrlQuery& query,
             const RequestInfo& info, const Responder& respond);
  HttpResponse route(const HttpRequest& request, const UrlQuery& query, const RequestInfo& info,
                     const UserInfo& user);
  HttpResponse nonResource(const ApiRequest& r);
  // Applies Impersonate-* headers; returns an error response when not allowed.
  std::optional<HttpResponse> impersonate(const HttpRequest& request, UserInfo& user) const;

  Parts p_;
};

}  // namespace ccm::kubesim
