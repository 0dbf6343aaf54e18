// ApiServer: kubesim's request pipeline, in the API server's filter order — fault injection,
// authentication (401 for anonymous or bad credentials), impersonation, authorization (403
// with the RBAC message), then routing: health and version, discovery and OpenAPI, the admin
// API (system:masters only), reviews and TokenRequest, and stored resources with content
// negotiation (JSON, YAML, protobuf, Table, metadata only; 406 otherwise). Answers over 128 KiB are
// gzip-compressed for clients that accept it.
//
// THREAD: handle() runs on connection strands (io threads), concurrently.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
  // Counters the gzip answers go to (the transport's); set once before serving.
  void setTransportStats(TransportStats* stats) { transport_stats_ = stats; }
  // {"HTTP/1.1":{"list":N,...},"HTTP/2":{...}}: requests by protocol and API verb.
  std::string requestCountsJson() const;

 private:
  void serve(const std::shared_ptr<HttpRequest>& request, const UrlQuery& query,
             const RequestInfo& info, const Responder& respond);
  // Polls until the store reaches pending.wait_for_rv (then routes the request again) or the
  // deadline passes (then sends pending).
  void waitForRv(const std::shared_ptr<HttpRequest>& request, const UrlQuery& query,
                 const RequestInfo& info, const UserInfo& user, const Responder& respond,
                 HttpResponse pending, std::chrono::steady_clock::time_point deadline);
  HttpResponse route(const HttpRequest& request, const UrlQuery& query, const RequestInfo& info,
                     const UserInfo& user);
  HttpResponse nonResource(const ApiRequest& r);
  // Applies Impersonate-* headers; returns an error response when not allowed.
  std::optional<HttpResponse> impersonate(const HttpRequest& request, UserInfo& user) const;

  void countRequest(bool http2, const std::string& verb);
  // A JSON answer in the negotiated serialization (YAML, protobuf; watches framed).
  static HttpResponse reencode(HttpResponse resp, WireFormat wire);

  Parts p_;
  TransportStats* transport_stats_ = nullptr;
  mutable std::mutex counts_mu_;
  std::map<std::string, uint64_t> request_counts_[2];  // [http2]; guarded by counts_mu_
};

}  // namespace ccm::kubesim
