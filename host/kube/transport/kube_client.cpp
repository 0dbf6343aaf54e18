// KubeClient: paths, verbs and bodies of single-object calls.
#include "host/kube/transport/kube_client.hpp"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ccm::kube {

StatusOr<std::unique_ptr<KubeClient>> KubeClient::create(const ClientOptions& options, Clock& clock,
                                                         metrics::Registry* registry) {
  RestConfig config;
  CCM_RETURN_IF_ERROR(loadRestConfig(options, &config));
  auto rest = RestClient::create(config, options, clock, registry);
  if (!rest.ok()) {
    return rest.status().withPrefix(config.source);
  }
  return std::make_unique<KubeClient>(std::move(rest).value());
}

ApiResult<std::string> KubeClient::get(const ResourcePath& path, std::string_view resource_version,
                                       const CallOptions& options) {
  Request req;
  req.verb = Verb::Get;
  req.path = path.path();
  if (!resource_version.empty()) {
    req.path += "?resourceVersion=" + urlEscape(resource_version);
  }
  req.timeout = options.timeout;
  auto r = rest_->call(req, options.stop);
  if (!r.ok()) {
    return r.status();
  }
  return std::move(r->body);
}

Request KubeClient::writeRequest(Verb verb, const ResourcePath& path, std::string body,
                                 std::string_view content_type, const CallOptions& options) {
  Request req;
  req.verb = verb;
  req.path = path.path();
  req.body = std::move(body);
  req.content_type = content_type;
  req.want_body = options.want_response;
  req.metadata_answer = !options.want_response || options.metadata_only;
  req.timeout = options.timeout;
  return req;
}

ApiResult<std::string> KubeClient::write(Verb verb, const ResourcePath& path, std::string body,
                                         std::string_view content_type,
                                         const CallOptions& options) {
  auto r =
      rest_->call(writeRequest(verb, path, std::move(body), content_type, options), options.stop);
  if (!r.ok()) {
    return r.status();
  }
  return std::move(r->body);
}

std::vector<ApiResult<std::string>> KubeClient::writeBatch(std::vector<Write> writes,
                                                           const CallOptions& options,
                                                           std::chrono::microseconds gather) {
  std::vector<Request> requests;
  requests.reserve(writes.size());
  for (auto& w : writes) {
    // As create(), update() and patch() send them.
    bool patch = w.verb == Write::Verb::Patch;
    Verb verb = patch ? Verb::Patch : w.verb == Write::Verb::Update ? Verb::Put : Verb::Post;
    requests.push_back(writeRequest(verb, w.path, std::move(w.body),
                                    patch ? patchContentType(w.patch_type) : kJson, options));
  }
  std::vector<ApiResult<std::string>> results;
  results.reserve(requests.size());
  for (auto& r : rest_->callBatch(requests, options.stop, gather)) {
    if (r.ok()) {
      results.push_back(std::move(r->body));
    } else {
      results.push_back(r.status());
    }
  }
  return results;
}

ApiResult<std::string> KubeClient::create(const ResourcePath& path, std::string body,
                                          const CallOptions& options) {
  return write(Verb::Post, path, std::move(body), kJson, options);
}

ApiResult<std::string> KubeClient::update(const ResourcePath& path, std::string body,
                                          const CallOptions& options) {
  return write(Verb::Put, path, std::move(body), kJson, options);
}

ApiResult<std::string> KubeClient::patch(const ResourcePath& path, PatchType type, std::string body,
                                         const CallOptions& options) {
  return write(Verb::Patch, path, std::move(body), patchContentType(type), options);
}

ApiStatus KubeClient::remove(const ResourcePath& path, const Preconditions& preconditions,
                             const CallOptions& options) {
  std::string body;
  if (!preconditions.uid.empty() || !preconditions.resource_version.empty()) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("kind");
    w.String("DeleteOptions");
    w.Key("apiVersion");
    w.String("v1");
    w.Key("preconditions");
    w.StartObject();
    if (!preconditions.uid.empty()) {
      w.Key("uid");
      w.String(preconditions.uid);
    }
    if (!preconditions.resource_version.empty()) {
      w.Key("resourceVersion");
      w.String(preconditions.resource_version);
    }
    w.EndObject();
    w.EndObject();
    body = buf.GetString();
  }
  auto r = write(Verb::Delete, path, std::move(body), kJson, options);
  if (!r.ok()) {
    return r.status();
  }
  return ApiStatus();
}

}  // namespace ccm::kube
