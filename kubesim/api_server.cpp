// ApiServer: faults, authn, impersonation, authz and routing.
#include "kubesim/api_server.hpp"

#include <boost/asio/steady_timer.hpp>

#include "host/log/log.hpp"
#include "kubesim/json_yaml.hpp"
#include "kubesim/protobuf_encoder.hpp"
#include "kubesim/response_encoding.hpp"
#include "kubesim/watch_stream.hpp"

namespace ccm::kubesim {
namespace {

namespace http = boost::beast::http;

// How long the watch cache waits for a resourceVersion it has not seen, and how often kubesim
// looks whether the store got there.
constexpr std::chrono::seconds kRvWait{3};
constexpr std::chrono::milliseconds kRvPoll{20};

HttpResponse textResponse(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

bool isHealthPath(std::string_view p) {
  for (std::string_view h : {"/healthz", "/livez", "/readyz"}) {
    if (p == h || (p.size() > h.size() && p.substr(0, h.size()) == h && p[h.size()] == '/')) {
      return true;
    }
  }
  return false;
}

// A watch request that a fault answers with 410: HTTP 200 and one ERROR event.
HttpResponse expiredWatch(ObjectStore& store, const ResourceType& type, const std::string& body) {
  auto w = std::make_shared<Watcher>(type, WatchFilter{}, std::make_unique<JsonWatchRenderer>(type),
                                     16, false);
  w->enqueueError(body);
  HttpResponse r;
  r.stream = std::make_shared<WatchStream>(store, w, std::chrono::seconds(60), std::nullopt);
  return r;
}

}  // namespace

void ApiServer::handle(HttpRequest& request, Responder respond) {
  auto query = UrlQuery::parse(
      std::string_view(request.message.target().data(), request.message.target().size()));
  if (!query) {
    respond(errorResponse(ApiError::badRequest("malformed request URL")));
    return;
  }
  std::string method(request.message.method_string());
  RequestInfo info = RequestInfo::parse(method, *query);
  bool admin = info.path == "/admin" || info.path.rfind("/admin/", 0) == 0;
  FaultInjector::Decision decision;
  if (!admin) {
    decision = p_.faults.evaluate(method, info);
  }
  countRequest(request.http2, info.verb);
  // Every answer leaves through here: compression, and the transport faults.
  auto accept_encoding = request.message.find(http::field::accept_encoding);
  respond = [this, respond = std::move(respond), decision,
             gzip_ok = accept_encoding != request.message.end() &&
                       acceptsGzip(std::string_view(accept_encoding->value().data(),
                                                    accept_encoding->value().size()))](
                HttpResponse r) {
    if (decision.goaway) {
      r.goaway = true;
    }
    if (decision.reset && decision.reset_after_events >= 0 && r.stream) {
      r.stream = std::make_shared<ResetAfterEvents>(r.stream, decision.reset_after_events);
    }
    if (gzip_ok && compressResponse(r, "gzip") && transport_stats_ != nullptr) {
      transport_stats_->gzip_responses.fetch_add(1);
    }
    respond(std::move(r));
  };
  auto finish = [this, decision, query = *query, info,
                 respond](const std::shared_ptr<HttpRequest>& req) {
    if (decision.reset && decision.reset_after_events < 0) {
      HttpResponse r;
      r.reset = true;
      respond(std::move(r));
      return;
    }
    if (decision.drop) {
      HttpResponse r;
      r.abort = true;
      respond(std::move(r));
      return;
    }
    if (decision.response) {
      if (info.verb == "watch" && decision.response->status == 410) {
        const auto* type =
            ResourceRegistry::builtin().find(info.api_group, info.api_version, info.resource);
        if (type != nullptr && type->stored) {
          respond(expiredWatch(p_.store, *type, decision.response->body));
          return;
        }
      }
      respond(*decision.response);
      return;
    }
    serve(req, query, info, respond);
  };
  if (decision.delay.count() > 0) {
    auto req = std::make_shared<HttpRequest>(std::move(request));
    auto timer = std::make_shared<boost::asio::steady_timer>(p_.io, decision.delay);
    timer->async_wait([timer, req, finish](boost::system::error_code) { finish(req); });
    return;
  }
  // Not delayed: serve in place (the connection keeps the request alive until it answers).
  std::shared_ptr<HttpRequest> borrowed(&request, [](HttpRequest*) {});
  finish(borrowed);
}

void ApiServer::serve(const std::shared_ptr<HttpRequest>& request, const UrlQuery& query,
                      const RequestInfo& info, const Responder& respond) {
  UserInfo user;
  std::string reason;
  auto outcome = p_.authn.authenticate(*request, &user, &reason);
  if (outcome == Authenticator::Outcome::Anonymous) {
    // --anonymous-auth=true (the API server's default): RBAC decides, and only
    // system:public-info-viewer (health and version) is granted to system:unauthenticated.
    user = Authenticator::anonymousUser();
  } else if (outcome != Authenticator::Outcome::Authenticated) {
    ccm::log::infoV(3, "unauthorized request",
                    {{"path", info.path}, {"peer", request->peer}, {"reason", reason}});
    respond(errorResponse(ApiError::unauthorized()));
    return;
  }
  if (auto denied = impersonate(*request, user)) {
    respond(std::move(*denied));
    return;
  }
  HttpResponse response = route(*request, query, info, user);
  if (response.wait_for_rv == 0) {
    respond(std::move(response));
    return;
  }
  // A read at a resourceVersion the watch cache has not seen: wait for it, as the API server
  // does, then serve the request again or give up with the prepared 504.
  auto owned = std::make_shared<HttpRequest>(*request);
  waitForRv(owned, query, info, user, respond, std::move(response),
            std::chrono::steady_clock::now() + kRvWait);
}

void ApiServer::waitForRv(const std::shared_ptr<HttpRequest>& request, const UrlQuery& query,
                          const RequestInfo& info, const UserInfo& user, const Responder& respond,
                          HttpResponse pending, std::chrono::steady_clock::time_point deadline) {
  auto timer = std::make_shared<boost::asio::steady_timer>(p_.io, kRvPoll);
  timer->async_wait([this, timer, request, query, info, user, respond,
                     pending = std::move(pending), deadline](boost::system::error_code) mutable {
    if (p_.store.currentRv() >= pending.wait_for_rv) {
      HttpResponse again = route(*request, query, info, user);
      again.wait_for_rv = 0;
      respond(std::move(again));
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      pending.wait_for_rv = 0;
      respond(std::move(pending));
      return;
    }
    waitForRv(request, query, info, user, respond, std::move(pending), deadline);
  });
}

std::optional<HttpResponse> ApiServer::impersonate(const HttpRequest& request,
                                                   UserInfo& user) const {
  std::string as_user;
  std::vector<std::string> as_groups;
  std::string as_uid;
  std::map<std::string, std::vector<std::string>> extra;
  for (const auto& field : request.message) {
    std::string name(field.name_string());
    std::string lname = name;
    std::transform(lname.begin(), lname.end(), lname.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value(field.value());
    if (lname == "impersonate-user") {
      as_user = value;
    } else if (lname == "impersonate-group") {
      as_groups.push_back(value);
    } else if (lname == "impersonate-uid") {
      as_uid = value;
    } else if (lname.rfind("impersonate-extra-", 0) == 0) {
      extra[lname.substr(18)].push_back(value);
    }
  }
  if (as_user.empty()) {
    if (!as_groups.empty() || !as_uid.empty() || !extra.empty()) {
      return errorResponse(ApiError::internal("requested [" +
                                              std::string(as_groups.empty() ? "" : "groups") +
                                              "] without impersonating a user"));
    }
    return std::nullopt;
  }
  auto check = [&](const std::string& resource, const std::string& name,
                   const std::string& ns) -> std::optional<HttpResponse> {
    AuthorizationAttributes a;
    a.user = user;
    a.verb = "impersonate";
    a.resource = resource;
    a.name = name;
    a.ns = ns;
    if (!p_.authz.authorize(a, "impersonation").allowed) {
      return errorResponse(
          ApiError::forbidden("", resource, name, RbacAuthorizer::forbiddenMessage(a)));
    }
    return std::nullopt;
  };
  constexpr std::string_view kSaPrefix = "system:serviceaccount:";
  if (as_user.rfind(kSaPrefix, 0) == 0) {
    std::string rest = as_user.substr(kSaPrefix.size());
    size_t colon = rest.find(':');
    if (auto e = check("serviceaccounts", rest.substr(colon + 1), rest.substr(0, colon))) {
      return e;
    }
  } else if (auto e = check("users", as_user, "")) {
    return e;
  }
  for (const auto& g : as_groups) {
    if (auto e = check("groups", g, "")) {
      return e;
    }
  }
  UserInfo impersonated;
  impersonated.name = as_user;
  impersonated.uid = as_uid;
  impersonated.groups = as_groups;
  impersonated.extra = extra;
  if (as_user.rfind(kSaPrefix, 0) == 0 && as_groups.empty()) {
    std::string ns = as_user.substr(kSaPrefix.size());
    ns = ns.substr(0, ns.find(':'));
    impersonated.groups = {"system:serviceaccounts", "system:serviceaccounts:" + ns};
  }
  if (!impersonated.inGroup("system:authenticated")) {
    impersonated.groups.emplace_back("system:authenticated");
  }
  user = std::move(impersonated);
  return std::nullopt;
}

HttpResponse ApiServer::route(const HttpRequest& request, const UrlQuery& query,
                              const RequestInfo& info, const UserInfo& user) {
  ApiRequest r{request,
               query,
               info,
               user,
               nullptr,
               OutputFormat::Json,
               std::string(request.message.method_string())};
  if (info.path == "/admin" || info.path.rfind("/admin/", 0) == 0) {
    if (!user.inGroup("system:masters")) {
      AuthorizationAttributes a;
      a.user = user;
      a.verb = info.verb;
      a.resource_request = false;
      a.path = info.path;
      return errorResponse(ApiError::forbidden("", "", "", RbacAuthorizer::forbiddenMessage(a)));
    }
    return p_.admin.handleAdmin(r);
  }
  AuthorizationAttributes a;
  a.user = user;
  a.verb = info.verb;
  a.resource_request = info.resource_request;
  a.api_group = info.api_group;
  a.api_version = info.api_version;
  a.resource = info.resource;
  a.subresource = info.subresource;
  a.ns = info.ns;
  a.name = info.name;
  a.path = info.path;
  auto decision = p_.authz.authorize(a);
  if (!decision.allowed) {
    ccm::log::infoV(3, "forbidden",
                    {{"user", user.name}, {"verb", info.verb}, {"path", info.path}});
    if (!info.resource_request) {
      return errorResponse(ApiError::forbidden("", "", "", RbacAuthorizer::forbiddenMessage(a)));
    }
    return errorResponse(ApiError::forbidden(info.api_group, info.resource, info.name,
                                             RbacAuthorizer::forbiddenMessage(a)));
  }
  if (!info.resource_request) {
    return nonResource(r);
  }
  const ResourceType* type =
      ResourceRegistry::builtin().find(info.api_group, info.api_version, info.resource);
  if (type == nullptr || !p_.surface.serves(*type)) {
    return errorResponse(ApiError::notFoundPath());
  }
  r.type = type;
  if (!type->namespaced && !info.ns.empty() && type->resource != "namespaces") {
    return errorResponse(ApiError::notFoundPath());
  }
  if (type->namespaced && info.ns.empty() && info.verb != "list" && info.verb != "watch") {
    return errorResponse(info.name.empty() ? ApiError::methodNotAllowed()
                                           : ApiError::notFoundPath());
  }
  if (!type->stored || (type->resource == "serviceaccounts" && info.subresource == "token")) {
    return p_.reviews.handle(r);
  }
  bool readable = info.verb == "get" || info.verb == "list" || info.verb == "watch";
  auto accept = request.message.find(http::field::accept);
  bool watch = info.verb == "watch";
  WireOptions offered;
  offered.yaml = !watch;  // YAML has no streaming form
  offered.protobuf = ProtobufEncoder::builtin().supports(
      Schema::builtin().rootFor(type->group, type->kind));
  WireFormat wire = WireFormat::Json;
  r.format = negotiateOutput(accept == request.message.end()
                                 ? std::string_view()
                                 : std::string_view(accept->value().data(), accept->value().size()),
                             readable, info.verb == "list" || info.verb == "deletecollection",
                             &wire, offered);
  if (r.format == OutputFormat::NotAcceptable) {
    if (watch) {
      return errorResponse(ApiError::notAcceptable(
          {"application/json", "application/json;stream=watch",
           "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch"}));
    }
    return errorResponse(ApiError::notAcceptable(
        {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}));
  }
  if ((info.verb == "update" || info.verb == "patch") && info.name.empty()) {
    return reencode(errorResponse(ApiError::methodNotAllowed()), wire);
  }
  return reencode(p_.resources.handle(r), wire);
}

HttpResponse ApiServer::reencode(HttpResponse resp, WireFormat wire) {
  bool json = resp.content_type.rfind("application/json", 0) == 0;
  if (wire == WireFormat::Yaml && json && !resp.stream) {
    if (auto text = jsonToYaml(resp.body)) {
      resp.body = std::move(*text);
      resp.content_type = "application/yaml";
    }
  } else if (wire == WireFormat::Protobuf && json) {
    if (resp.stream) {
      resp.stream = std::make_shared<ProtobufWatchSource>(resp.stream);
      resp.content_type = "application/vnd.kubernetes.protobuf;stream=watch";
    } else {
      std::string error;
      if (auto pb = ProtobufEncoder::builtin().encode(resp.body, &error)) {
        resp.body = std::move(*pb);
        resp.content_type = "application/vnd.kubernetes.protobuf";
      } else {
        ccm::log::infoV(2, "answer kept in JSON", {{"reason", error}});
      }
    }
  }
  return resp;
}

void ApiServer::countRequest(bool http2, const std::string& verb) {
  std::lock_guard lock(counts_mu_);
  ++request_counts_[http2 ? 1 : 0][verb.empty() ? std::string("other") : verb];
}

std::string ApiServer::requestCountsJson() const {
  std::lock_guard lock(counts_mu_);
  std::string out = "{";
  const char* names[] = {"HTTP/1.1", "HTTP/2"};
  for (int p = 0; p < 2; ++p) {
    out += std::string(p ? "," : "") + "\"" + names[p] + "\":{";
    bool first = true;
    for (const auto& [verb, n] : request_counts_[p]) {
      out += (first ? "\"" : ",\"") + verb + "\":" + std::to_string(n);
      first = false;
    }
    out += "}";
  }
  return out + "}";
}

HttpResponse ApiServer::nonResource(const ApiRequest& r) {
  const std::string& path = r.info.path;
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') {
    p.pop_back();
  }
  if (isHealthPath(p)) {
    return textResponse(200, "ok");
  }
  if (r.method != "GET" && r.method != "HEAD") {
    return errorResponse(ApiError::methodNotAllowed());
  }
  if (p == "/version") {
    return jsonResponse(200, p_.discovery.version());
  }
  if (p == "/api") {
    return jsonResponse(200, p_.discovery.apiVersions(p_.server_address()));
  }
  if (p == "/apis") {
    return jsonResponse(200, p_.discovery.apiGroupList());
  }
  if (p.rfind("/api/", 0) == 0) {
    if (auto doc = p_.discovery.resourceList("", p.substr(5))) {
      return jsonResponse(200, *doc);
    }
    return textResponse(404, "404 page not found\n");
  }
  if (p.rfind("/apis/", 0) == 0) {
    std::string rest = p.substr(6);
    size_t slash = rest.find('/');
    std::optional<std::string> doc =
        slash == std::string::npos
            ? p_.discovery.apiGroup(rest)
            : p_.discovery.resourceList(rest.substr(0, slash), rest.substr(slash + 1));
    if (doc) {
      return jsonResponse(200, *doc);
    }
    return textResponse(404, "404 page not found\n");
  }
  if (p == "/openapi/v3") {
    return jsonResponse(200, p_.discovery.openApiIndex());
  }
  if (p.rfind("/openapi/v3/", 0) == 0) {
    if (auto doc = p_.discovery.openApiDocument(p.substr(12))) {
      HttpResponse resp = jsonResponse(200, *doc);
      resp.headers.emplace_back("Cache-Control", "public, immutable");
      return resp;
    }
  }
  return textResponse(404, "404 page not found\n");
}

}  // namespace ccm::kubesim
