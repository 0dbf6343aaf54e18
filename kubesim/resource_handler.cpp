// ResourceHandler: REST semantics of stored resources.
#include "kubesim/resource_handler.hpp"

#include <cstdio>

#include "host/log/log.hpp"
#include "host/runtime/base64.hpp"
#include "kubesim/continue_token.hpp"
#include "kubesim/event_conversion.hpp"
#include "kubesim/managed_fields.hpp"
#include "kubesim/patch/patch.hpp"
#include "kubesim/protobuf_decoder.hpp"
#include "kubesim/schema.hpp"
#include "kubesim/table_printer.hpp"
#include "kubesim/watch_stream.hpp"
#include "kubesim/yaml_json.hpp"

namespace ccm::kubesim {
namespace {

namespace http = boost::beast::http;

const std::vector<std::string> kBodyTypes = {"application/json", "application/yaml"};
const std::vector<std::string> kPatchTypes = {"application/json-patch+json",
                                              "application/merge-patch+json",
                                              "application/strategic-merge-patch+json"};

bool isEventsV1(const ResourceType& t) {
  return t.group == "events.k8s.io";
}

ApiError optionsInvalid(std::string_view kind, const FieldError& fe) {
  return ApiError::invalid("meta.k8s.io", kind, "", {fe});
}

// Validates fieldValidation; returns "Ignore", "Warn" or "Strict".
std::optional<std::string> fieldValidation(const ApiRequest& r, std::string_view options_kind,
                                           std::optional<ApiError>* error) {
  std::string v = r.query.get("fieldValidation");
  if (v.empty()) {
    return std::string("Warn");
  }
  if (v == "Ignore" || v == "Warn" || v == "Strict") {
    return v;
  }
  *error = optionsInvalid(
      options_kind, FieldError::notSupported("fieldValidation", v, {"Ignore", "Strict", "Warn"}));
  return std::nullopt;
}

// The write's field manager: ?fieldManager= (at most 128 printable bytes), else the
// User-Agent's product name.
std::optional<std::string> fieldManager(const ApiRequest& r, std::string_view options_kind,
                                        std::optional<ApiError>* error) {
  std::string m = r.query.get("fieldManager");
  if (m.empty()) {
    return managerFromUserAgent(r.header(http::field::user_agent));
  }
  std::vector<FieldError> errs;
  if (m.size() > kFieldManagerMaxLength) {
    errs.push_back(FieldError::tooLong("fieldManager", static_cast<int>(kFieldManagerMaxLength)));
  }
  for (size_t i = 0; i < m.size(); ++i) {
    auto c = static_cast<unsigned char>(m[i]);
    if (c < 0x20 || c == 0x7F) {
      char rune[16];
      std::snprintf(rune, sizeof rune, "U+%04X", static_cast<unsigned>(c));
      errs.push_back(FieldError::invalid(
          "fieldManager", goQuote(m),
          "invalid character " + std::string(rune) + " (at position " + std::to_string(i) + ")"));
    }
  }
  if (!errs.empty()) {
    *error = ApiError::invalid("meta.k8s.io", options_kind, "", errs);
    return std::nullopt;
  }
  return m;
}

bool dryRun(const ApiRequest& r) {
  for (const auto& v : r.query.getAll("dryRun")) {
    if (v == "All") {
      return true;
    }
  }
  return false;
}

std::string summarize(std::string_view data) {
  if (data.empty()) {
    return "<empty>";
  }
  if (data[0] == '{') {
    return data.size() > 30 ? std::string(data.substr(0, 30)) + " ..." : std::string(data);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(data.size(), 30); ++i) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return data.size() > 30 ? out + " ..." : out;
}

std::string strictMessage(const std::vector<std::string>& errors) {
  std::string out = "strict decoding error: ";
  for (size_t i = 0; i < errors.size(); ++i) {
    out += (i ? ", " : "") + errors[i];
  }
  return out;
}

// Decodes a create/update body into doc for `type` (the served type). Applies the
// fieldValidation directive: unknown and duplicate fields are dropped (Ignore/Warn, with
// warnings for Warn) or rejected (Strict).
std::optional<ApiError> decodeBody(const ApiRequest& r, const ResourceType& type,
                                   const ResourceHandler::Options& options,
                                   const std::string& validation, JsonDocument& doc,
                                   std::vector<std::string>& warnings) {
  std::string ct = r.header(http::field::content_type);
  MediaType mt = parseMediaType(ct.empty() ? "application/json" : ct);
  std::string_view body = r.body();
  if (body.find(kRvMarker) != std::string_view::npos) {
    return ApiError::badRequest("the object provided contains a reserved string");
  }
  if (mt.essence() == "application/json") {
    doc.Parse(body.data(), body.size());
    if (doc.HasParseError()) {
      return ApiError::badRequest("the object provided is unrecognized (must be of type " +
                                  type.kind + "): couldn't get version/kind; json parse error: " +
                                  describeParseError(doc, body) + " (" + summarize(body) + ")");
    }
  } else if (mt.essence() == "application/yaml") {
    std::string err;
    if (!parseYamlDocument(body, doc, &err)) {
      return ApiError::badRequest("the object provided is unrecognized (must be of type " +
                                  type.kind + "): couldn't get version/kind; yaml: " + err);
    }
  } else if (mt.essence() == "application/vnd.kubernetes.protobuf" &&
             ProtobufDecoder::builtin().supports(
                 Schema::builtin().rootFor(type.group, type.kind))) {
    std::string err;
    if (!ProtobufDecoder::builtin().decode(body, Schema::builtin().rootFor(type.group, type.kind),
                                           doc, &err)) {
      return ApiError::badRequest("the object provided is unrecognized (must be of type " +
                                  type.kind + "): " + err + " (" + summarize(body) + ")");
    }
  } else {
    return ApiError::unsupportedMediaType(kBodyTypes);
  }
  if (!doc.IsObject()) {
    return ApiError::badRequest(
        "the object provided is unrecognized (must be of type " + type.kind +
        "): couldn't get version/kind; json parse error: " + "json: cannot unmarshal " +
        (doc.IsArray() ? std::string("array") : std::string("value")) +
        " into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; "
        "Kind string \"json:\\\"kind,omitempty\\\"\" } (" +
        summarize(body) + ")");
  }
  std::string_view api = stringMember(doc, "apiVersion");
  std::string_view kind = stringMember(doc, "kind");
  if (!api.empty() && api != type.apiVersion()) {
    return ApiError::badRequest("the API version in the data (" + std::string(api) +
                                ") does not match the expected API version (" + type.apiVersion() +
                                ")");
  }
  if (!kind.empty() && kind != type.kind) {
    return ApiError::badRequest("the kind in the data (" + std::string(kind) +
                                ") does not match the expected kind (" + type.kind + ")");
  }
  std::vector<std::string> strict;
  std::vector<std::string> dups;
  dedupeKeys(doc, doc.GetAllocator(), "", &dups);
  strict.reserve(dups.size());
  for (const auto& d : dups) {
    strict.push_back("json: duplicate field " + jsonString(d));
  }
  const Schema& schema = Schema::builtin();
  auto issues = schema.check(schema.rootFor(type.group, type.kind), doc, doc.GetAllocator(), true);
  if (issues.type_error) {
    return ApiError::badRequest(type.kind + " in version " + jsonString(type.version) +
                                " cannot be handled as a " + type.kind + ": " + *issues.type_error);
  }
  options.surface.pruneUnservedFields(type.group, type.kind, doc, &issues.unknown_fields);
  for (const auto& u : issues.unknown_fields) {
    strict.push_back("unknown field " + jsonString(u));
  }
  if (!strict.empty()) {
    if (validation == "Strict") {
      return ApiError::badRequest(strictMessage(strict));
    }
    if (validation == "Warn") {
      warnings.insert(warnings.end(), strict.begin(), strict.end());
    }
  }
  return std::nullopt;
}

// What the registry answers to a PUT without metadata.resourceVersion when the strategy does
// not allow unconditional updates: the field error carries the resource (not the Kind) and the
// uint64 zero as Go's %#v prints it.
ApiError unconditionalUpdateRefused(const ResourceType& type, std::string_view name) {
  return ApiError::invalid(type.group, type.resource, name,
                           {FieldError::invalid("metadata.resourceVersion", "0x0",
                                                "must be specified for an update")});
}

ApiError listOptionsInvalid(const FieldError& fe) {
  return ApiError::invalid("meta.k8s.io", "ListOptions", "", {fe});
}

// retry_after: 1 from the watch cache (after waiting for the RV), 0 from etcd (at once).
ApiError tooLargeRv(uint64_t requested, uint64_t current, int retry_after) {
  ApiError e = ApiError::timeout(
      "Too large resource version: " + decimal(requested) + ", current: " + decimal(current),
      retry_after);
  e.mutableDetails().causes.push_back(
      {"ResourceVersionTooLarge", "Too large resource version", ""});
  return e;
}

std::optional<ApiError> parseSelectors(const ApiRequest& r, const ResourceType& type,
                                       const ServedSurface& surface, LabelSelector& labels,
                                       FieldSelector& fields) {
  std::string err;
  auto ls = LabelSelector::parse(r.query.get("labelSelector"), &err);
  if (!ls) {
    return ApiError::badRequest(err);
  }
  labels = std::move(*ls);
  auto fs = FieldSelector::parse(r.query.get("fieldSelector"), type, &err);
  if (!fs) {
    return ApiError::badRequest(err);
  }
  if (type.group.empty() && type.resource == "services" &&
      !surface.serviceTypeAndClusterIpFieldSelectors()) {
    for (const auto& term : fs->terms()) {
      if (term.label == "spec.type" || term.label == "spec.clusterIP") {
        return ApiError::badRequest("field label not supported: " + term.label);
      }
    }
  }
  fields = std::move(*fs);
  return std::nullopt;
}

std::optional<uint64_t> parseRv(const std::string& rv, std::optional<ApiError>* error) {
  if (rv.empty()) {
    return std::nullopt;
  }
  auto v = parseDecimal(rv);
  if (!v) {
    *error = ApiError::badRequest("invalid resource version: " + goQuote(rv));
    return std::nullopt;
  }
  return v;
}

}  // namespace

HttpResponse jsonResponse(unsigned status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse errorResponse(const ApiError& error) {
  HttpResponse r = jsonResponse(static_cast<unsigned>(error.code()), error.toJson());
  for (const auto& h : error.headers()) {
    r.headers.push_back(h);
  }
  return r;
}

HttpResponse waitForRv(uint64_t rv, const ApiError& too_large) {
  HttpResponse r = errorResponse(too_large);
  r.wait_for_rv = rv;
  return r;
}

void addWarnings(HttpResponse& response, const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) {
    response.headers.emplace_back("Warning", "299 - " + goQuote(w));
  }
}

const ResourceType& ResourceHandler::storageType(const ResourceType& type) const {
  if (isEventsV1(type)) {
    return *ResourceRegistry::builtin().find("", "v1", "events");
  }
  return type;
}

std::string ResourceHandler::view(const ResourceType& type, const StoredObject& obj) const {
  return isEventsV1(type) ? coreEventJsonToV1(obj.json) : obj.json;
}

std::string ResourceHandler::answer(const ApiRequest& r, const StoredObject& obj) const {
  std::string served = view(*r.type, obj);
  return r.format == OutputFormat::PartialObjectMetadata ? partialObjectMetadata(served) : served;
}

std::string ResourceHandler::listHead(const ApiRequest& r) {
  if (r.format == OutputFormat::PartialObjectMetadata) {
    return R"("kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1")";
  }
  return R"("kind":)" + jsonString(r.type->listKind()) + R"(,"apiVersion":)" +
         jsonString(r.type->apiVersion());
}

HttpResponse ResourceHandler::objectResponse(const ApiRequest& r, unsigned status,
                                             const StoredObject& obj) {
  if (r.format == OutputFormat::Table && (r.info.verb == "get")) {
    return jsonResponse(
        status,
        TablePrinter::table(*r.type, {view(*r.type, obj)}, decimal(obj.rv), "",
                            TablePrinter::parseIncludeObject(r.query.get("includeObject"))));
  }
  return jsonResponse(status, answer(r, obj));
}

HttpResponse ResourceHandler::handle(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  const std::string& verb = r.info.verb;
  const std::string& sub = r.info.subresource;
  if (!sub.empty() && (sub != "status" || !type.hasSubresource("status"))) {
    return errorResponse(ApiError::notFoundPath());
  }
  if (!sub.empty() && verb != "get" && verb != "update" && verb != "patch") {
    return errorResponse(ApiError::methodNotAllowed());
  }
  if (verb == "get") {
    return get(r);
  }
  if (verb == "list") {
    return list(r);
  }
  if (verb == "watch") {
    return watch(r);
  }
  if (verb == "create") {
    if (!r.info.name.empty()) {
      return errorResponse(ApiError::methodNotAllowed());
    }
    return create(r);
  }
  if (verb == "update") {
    return update(r);
  }
  if (verb == "patch") {
    return patch(r);
  }
  if (verb == "delete") {
    return type.resource == "namespaces" ? removeNamespace(r) : remove(r);
  }
  if (verb == "deletecollection") {
    return removeCollection(r);
  }
  return errorResponse(ApiError::methodNotAllowed());
}

HttpResponse ResourceHandler::get(const ApiRequest& r) {
  std::optional<ApiError> err;
  auto rv = parseRv(r.query.get("resourceVersion"), &err);
  if (err) {
    return errorResponse(*err);
  }
  if (rv && *rv > store_.currentRv()) {
    // The watch cache waits for the RV (ApiServer retries), then gives up with 504.
    return waitForRv(*rv, tooLargeRv(*rv, store_.currentRv(), 1));
  }
  const ResourceType& st = storageType(*r.type);
  // resourceVersion "0": whatever the (lagging) watch cache holds; otherwise the latest.
  ObjectPtr obj = rv && *rv == 0 ? store_.getCached(st, r.info.ns, r.info.name)
                                 : store_.get(st, r.info.ns, r.info.name);
  if (!obj) {
    return errorResponse(ApiError::notFound(r.type->group, r.type->resource, r.info.name));
  }
  return objectResponse(r, 200, *obj);
}

HttpResponse ResourceHandler::list(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  const ResourceType& st = storageType(type);
  ObjectStore::ListRequest req;
  req.ns = type.namespaced ? r.info.ns : std::string();
  if (auto err = parseSelectors(r, type, options_.surface, req.labels, req.fields)) {
    return errorResponse(*err);
  }
  if (r.query.has("sendInitialEvents") &&
      options_.surface.watchList() != ServedSurface::WatchList::UnknownParameter) {
    return errorResponse(listOptionsInvalid(
        FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")));
  }
  std::string rv_text = r.query.get("resourceVersion");
  std::string match = r.query.get("resourceVersionMatch");
  std::string cont = r.query.get("continue");
  std::optional<ApiError> err;
  auto rv = parseRv(rv_text, &err);
  if (err) {
    return errorResponse(*err);
  }
  size_t limit = 0;
  if (std::string l = r.query.get("limit"); !l.empty()) {
    // An int64; zero or negative means "no limit", as in the API server's storage.
    bool negative = l[0] == '-';
    auto v = parseDecimal(negative ? std::string_view(l).substr(1) : std::string_view(l));
    if (!v) {
      return errorResponse(ApiError::badRequest("invalid limit: " + goQuote(l)));
    }
    limit = negative ? 0 : static_cast<size_t>(*v);
  }
  if (!match.empty()) {
    if (match != "Exact" && match != "NotOlderThan") {
      return errorResponse(listOptionsInvalid(
          FieldError::notSupported("resourceVersionMatch", match, {"Exact", "NotOlderThan"})));
    }
    if (!cont.empty()) {
      return errorResponse(listOptionsInvalid(FieldError::forbidden(
          "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")));
    }
    if (rv_text.empty()) {
      return errorResponse(listOptionsInvalid(FieldError::forbidden(
          "resourceVersionMatch",
          "resourceVersionMatch is forbidden unless resourceVersion is provided")));
    }
    if (match == "Exact" && rv_text == "0") {
      return errorResponse(listOptionsInvalid(FieldError::forbidden(
          "resourceVersionMatch",
          "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")));
    }
  }
  uint64_t current = store_.currentRv();
  // The watch cache serves RV=0, and RV=N without a limit unless Exact; etcd the rest.
  const bool cached = cont.empty() && match != "Exact" && rv && (*rv == 0 || limit == 0);
  if (!cont.empty()) {
    std::string cerr;
    auto token = decodeContinue(cont, req.ns, &cerr);
    if (!token) {
      return errorResponse(ApiError::badRequest("invalid continue token: " + cerr));
    }
    if (!rv_text.empty() && rv_text != "0") {
      return errorResponse(
          ApiError::badRequest("specifying resource version is not allowed when using continue"));
    }
    req.start_key = token->start;
    if (token->rv >= 0) {
      req.at_rv = static_cast<uint64_t>(token->rv);
    }
    req.limit = limit;
  } else if (rv && *rv > current) {
    if (cached) {
      return waitForRv(*rv, tooLargeRv(*rv, current, 1));
    }
    return errorResponse(tooLargeRv(*rv, current, 0));
  } else if (cached) {
    // From the watch cache: at least RV=N, maybe trailing the latest write for RV=0; the
    // limit is ignored, no continue, no order.
    req.from_cache = true;
    req.at_rv = *rv;
    req.limit = 0;
  } else if (match == "Exact" || (rv && limit != 0 && match.empty())) {
    req.at_rv = rv;  // Exact, and RV=N with a limit (the legacy exact read)
    req.limit = limit;
  } else {
    req.limit = limit;
  }
  auto result = store_.list(st, req);
  if (!result.ok()) {
    ApiError e = result.error();
    if (!cont.empty() && e.code() == 410) {
      e = ApiError::expired(
          "The provided continue parameter is too old to display a consistent list result. You "
          "can start a new list without the continue parameter, or use the continue token in "
          "this response to retrieve the remainder of the results. Continuing with the provided "
          "token results in an inconsistent list - objects that were created, modified, or "
          "deleted between the time the first chunk was returned and now may show up in the "
          "list.");
      // A fresh token with rv -1: "continue inconsistently from the latest state".
      e.setContinue(encodeContinue(-1, req.ns, req.start_key));
    }
    return errorResponse(e);
  }
  auto& res = result.value();
  std::string token;
  if (!res.next_key.empty()) {
    token = encodeContinue(static_cast<int64_t>(res.rv), req.ns, res.next_key);
  }
  bool selecting = !req.labels.empty() || !req.fields.empty();
  if (r.format == OutputFormat::Table) {
    std::vector<std::string> objs;
    objs.reserve(res.items.size());
    for (const auto& o : res.items) {
      objs.push_back(view(type, *o));
    }
    return jsonResponse(
        200, TablePrinter::table(type, objs, decimal(res.rv), token,
                                 TablePrinter::parseIncludeObject(r.query.get("includeObject"))));
  }
  std::string out;
  size_t total = 64;
  for (const auto& o : res.items) {
    total += o->json.size() + 1;
  }
  out.reserve(total);
  out += "{" + listHead(r);
  out += R"(,"metadata":{"resourceVersion":")" + decimal(res.rv) + "\"";
  if (!token.empty()) {
    out += R"(,"continue":)";
    appendJsonString(out, token);
    if (!selecting) {
      out += R"(,"remainingItemCount":)" + std::to_string(res.remaining);
    }
  }
  out += R"(},"items":[)";
  bool first = true;
  for (const auto& o : res.items) {
    if (!first) {
      out += ",";
    }
    first = false;
    if (isEventsV1(type) || r.format == OutputFormat::PartialObjectMetadata) {
      out += answer(r, *o);
    } else {
      out += o->json;
    }
  }
  out += "]}";
  return jsonResponse(200, std::move(out));
}

HttpResponse ResourceHandler::watch(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  WatchFilter filter;
  filter.ns = type.namespaced ? r.info.ns : std::string();
  if (auto err = parseSelectors(r, type, options_.surface, filter.labels, filter.fields)) {
    return errorResponse(*err);
  }
  std::string rv_text = r.query.get("resourceVersion");
  std::string match = r.query.get("resourceVersionMatch");
  bool send_initial = r.query.getBool("sendInitialEvents");
  bool sie_given = r.query.has("sendInitialEvents");
  if (options_.surface.watchList() == ServedSurface::WatchList::UnknownParameter) {
    // Before 1.27 sendInitialEvents is no parameter at all: only resourceVersionMatch, which
    // a watch may not carry, is refused.
    if (!match.empty()) {
      return errorResponse(listOptionsInvalid(FieldError::forbidden(
          "resourceVersionMatch", "resourceVersionMatch is forbidden for watch")));
    }
    send_initial = false;
  } else if (sie_given) {
    if (!options_.watch_list ||
        options_.surface.watchList() == ServedSurface::WatchList::GateDisabled) {
      return errorResponse(listOptionsInvalid(
          FieldError::forbidden("sendInitialEvents",
                                "sendInitialEvents is forbidden for watch unless the WatchList "
                                "feature gate is enabled")));
    }
    if (match != "NotOlderThan") {
      return errorResponse(listOptionsInvalid(FieldError::forbidden(
          "resourceVersionMatch",
          "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")));
    }
  } else if (!match.empty()) {
    return errorResponse(listOptionsInvalid(FieldError::forbidden(
        "resourceVersionMatch",
        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")));
  }
  std::optional<ApiError> err;
  auto rv = parseRv(rv_text, &err);
  if (err) {
    return errorResponse(*err);
  }
  bool bookmarks = r.query.getBool("allowWatchBookmarks");
  std::chrono::milliseconds timeout;
  std::optional<uint64_t> timeout_seconds;
  if (std::string t = r.query.get("timeoutSeconds"); !t.empty()) {
    timeout_seconds = parseDecimal(t);
    if (!timeout_seconds) {
      return errorResponse(ApiError::badRequest("invalid timeoutSeconds: " + goQuote(t)));
    }
  }
  if (timeout_seconds && *timeout_seconds > 0) {
    timeout = std::chrono::seconds(*timeout_seconds);
  } else {  // unset or 0: the server picks [min-request-timeout, 2x)
    auto base = options_.min_request_timeout.count();
    timeout = std::chrono::seconds(randomInt(base, base * 2 - 1));
  }

  std::unique_ptr<WatchRenderer> renderer;
  if (r.format == OutputFormat::Table) {
    renderer = std::make_unique<TableWatchRenderer>(
        type, TablePrinter::parseIncludeObject(r.query.get("includeObject")), isEventsV1(type));
  } else if (r.format == OutputFormat::PartialObjectMetadata) {
    renderer = std::make_unique<MetadataWatchRenderer>(type, isEventsV1(type));
  } else if (isEventsV1(type)) {
    renderer = std::make_unique<EventsV1WatchRenderer>(type);
  } else {
    renderer = std::make_unique<JsonWatchRenderer>(type);
  }
  // Watchers are registered on the storage type; the renderer shows the served view.
  auto watcher =
      std::make_shared<Watcher>(storageType(type), std::move(filter), std::move(renderer),
                                options_.watch_queue_limit, bookmarks);
  ObjectStore::WatchMode mode;
  uint64_t from = 0;
  if (send_initial) {
    mode = ObjectStore::WatchMode::InitialStateWithBookmark;
    if (rv && *rv > store_.currentRv()) {
      return waitForRv(*rv, tooLargeRv(*rv, store_.currentRv(), 1));
    }
  } else if (!rv) {
    mode = ObjectStore::WatchMode::InitialState;
  } else if (*rv == 0) {
    mode = ObjectStore::WatchMode::InitialCachedState;  // "any version": from the watch cache
  } else {
    mode = ObjectStore::WatchMode::FromRv;
    from = *rv;
  }
  auto started = store_.watch(watcher, mode, from);
  if (!started.ok()) {
    if (started.error().code() != 410) {
      return errorResponse(started.error());
    }
    // Expired: HTTP 200 with one ERROR event, then the end of the stream.
    watcher->enqueueError(started.error().toJson());
  }
  HttpResponse resp;
  resp.status = 200;
  resp.content_type = "application/json";
  resp.stream = std::make_shared<WatchStream>(
      store_, watcher, timeout,
      bookmarks ? std::optional<std::chrono::milliseconds>(options_.bookmark_interval)
                : std::nullopt);
  return resp;
}

HttpResponse ResourceHandler::create(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  std::optional<ApiError> err;
  auto validation = fieldValidation(r, "CreateOptions", &err);
  if (!validation) {
    return errorResponse(*err);
  }
  auto manager = fieldManager(r, "CreateOptions", &err);
  if (!manager) {
    return errorResponse(*err);
  }
  JsonDocument body;
  std::vector<std::string> warnings;
  if (auto e = decodeBody(r, type, options_, *validation, body, warnings)) {
    return errorResponse(*e);
  }
  JsonValue& meta = ensureObject(body, "metadata", body.GetAllocator());
  std::string_view body_ns = stringMember(meta, "namespace");
  if (type.namespaced) {
    if (body_ns.empty()) {
      setString(meta, "namespace", r.info.ns, body.GetAllocator());
    } else if (body_ns != r.info.ns) {
      return errorResponse(ApiError::badRequest(
          "the namespace of the provided object does not match the namespace sent on the "
          "request"));
    }
  }
  JsonDocument stored;
  JsonValue* target = &body;
  if (isEventsV1(type)) {
    v1EventToCore(body, stored, stored.GetAllocator());
    target = &stored;
  }
  auto result = writer_.create(storageType(type), *target,
                               isEventsV1(type) ? stored.GetAllocator() : body.GetAllocator(),
                               dryRun(r), isEventsV1(type) ? &body : nullptr, *manager);
  if (!result.ok()) {
    return errorResponse(result.error());
  }
  HttpResponse resp = jsonResponse(201, answer(r, *result.value().object));
  addWarnings(resp, warnings);
  return resp;
}

HttpResponse ResourceHandler::update(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  std::optional<ApiError> err;
  auto validation = fieldValidation(r, "UpdateOptions", &err);
  if (!validation) {
    return errorResponse(*err);
  }
  auto manager = fieldManager(r, "UpdateOptions", &err);
  if (!manager) {
    return errorResponse(*err);
  }
  JsonDocument body;
  std::vector<std::string> warnings;
  if (auto e = decodeBody(r, type, options_, *validation, body, warnings)) {
    return errorResponse(*e);
  }
  JsonDocument stored_body;
  const JsonValue* incoming = &body;
  if (isEventsV1(type)) {
    v1EventToCore(body, stored_body, stored_body.GetAllocator());
    incoming = &stored_body;
  }
  std::string body_rv;
  std::string_view body_name;
  if (const JsonValue* meta = member(*incoming, "metadata")) {
    body_rv = std::string(stringMember(*meta, "resourceVersion"));
    body_name = stringMember(*meta, "name");
  }
  const std::string name = r.info.name;
  if (body_name != name) {
    return errorResponse(ApiError::badRequest("the name of the object (" + std::string(body_name) +
                                              ") does not match the name on the URL (" + name +
                                              ")"));
  }
  const ResourceType& st = storageType(type);
  auto result = writer_.update(
      st, r.info.ns, name, r.info.subresource,
      [&](JsonDocument& doc, const StoredObject& current) -> std::optional<ApiError> {
        if (body_rv.empty() && !st.allow_unconditional_update) {
          return unconditionalUpdateRefused(st, name);
        }
        if (!body_rv.empty() && body_rv != decimal(current.rv)) {
          return ObjectWriter::staleConflict(type, name);
        }
        doc.CopyFrom(*incoming, doc.GetAllocator());
        return std::nullopt;
      },
      dryRun(r), *manager);
  if (!result.ok() && result.error().code() == 404 && st.allow_create_on_update &&
      r.info.subresource.empty()) {
    // The registry creates the object when its strategy allows create on update (Leases,
    // Endpoints, Services, Events, RBAC objects); the resourceVersion sent is not checked.
    JsonDocument created;
    created.CopyFrom(*incoming, created.GetAllocator());
    JsonValue& meta = ensureObject(created, "metadata", created.GetAllocator());
    removeMember(meta, "resourceVersion");
    if (st.namespaced && stringMember(meta, "namespace").empty()) {
      setString(meta, "namespace", r.info.ns, created.GetAllocator());
    } else if (st.namespaced && stringMember(meta, "namespace") != r.info.ns) {
      return errorResponse(ApiError::badRequest(
          "the namespace of the provided object does not match the namespace sent on the "
          "request"));
    }
    auto made = writer_.create(st, created, created.GetAllocator(), dryRun(r),
                               isEventsV1(type) ? &body : nullptr, *manager);
    if (!made.ok()) {
      return errorResponse(made.error());
    }
    HttpResponse resp = jsonResponse(201, answer(r, *made.value().object));
    addWarnings(resp, warnings);
    return resp;
  }
  if (!result.ok()) {
    return errorResponse(result.error());
  }
  HttpResponse resp = jsonResponse(200, answer(r, *result.value().object));
  addWarnings(resp, warnings);
  return resp;
}

HttpResponse ResourceHandler::patch(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  std::string ct = r.header(http::field::content_type);
  auto ptype_opt = patchTypeForContentType(ct);
  if (!ptype_opt) {
    // Server-side apply (application/apply-patch+yaml) is not implemented: the same 415 as
    // a server without it, naming the three patch types that are served.
    return errorResponse(ApiError::unsupportedMediaType(kPatchTypes));
  }
  const PatchType ptype = *ptype_opt;
  if (r.query.has("force")) {
    return errorResponse(ApiError::invalid(
        "meta.k8s.io", "PatchOptions", "",
        {FieldError::forbidden("force", "may not be specified for non-apply patch")}));
  }
  std::optional<ApiError> err;
  auto validation = fieldValidation(r, "PatchOptions", &err);
  if (!validation) {
    return errorResponse(*err);
  }
  auto manager = fieldManager(r, "PatchOptions", &err);
  if (!manager) {
    return errorResponse(*err);
  }
  std::string_view body = r.body();
  if (body.find(kRvMarker) != std::string_view::npos) {
    return errorResponse(ApiError::badRequest("the patch contains a reserved string"));
  }
  if (ptype == PatchType::Json) {
    // Count operations without the engine (413 above 10000, as the API server does).
    JsonDocument ops;
    ops.Parse(body.data(), body.size());
    if (!ops.HasParseError() && ops.IsArray() && ops.Size() > 10000) {
      return errorResponse(ApiError::requestEntityTooLarge(
          "The allowed maximum operations in a JSON patch is 10000, got " +
          std::to_string(ops.Size())));
    }
  }
  std::vector<std::string> warnings;
  const std::string name = r.info.name;
  const Schema& schema = Schema::builtin();
  const std::string root = schema.rootFor(type.group, type.kind);
  auto result = writer_.update(
      storageType(type), r.info.ns, name, r.info.subresource,
      [&](JsonDocument& doc, const StoredObject& current) -> std::optional<ApiError> {
        warnings.clear();
        JsonDocument v1;
        JsonValue* target = &doc;
        JsonAllocator* alloc = &doc.GetAllocator();
        if (isEventsV1(type)) {
          coreEventToV1(doc, v1, v1.GetAllocator());
          target = &v1;
          alloc = &v1.GetAllocator();
        }
        std::string detail;
        if (auto perr = applyPatch(ptype, type.kind, *target, *alloc, body, &detail)) {
          ccm::log::infoV(4, "patch rejected", {{"name", name}, {"detail", detail}});
          ApiError e(perr->code, perr->reason, perr->message);
          if (perr->code == 422) {
            e.mutableDetails();
          }
          return e;
        }
        if (!target->IsObject()) {
          return ApiError::invalid(
              "", "", "",
              {FieldError::invalid("patch", goQuote(toJson(*target)),
                                   "the patched object is not a JSON object")});
        }
        // The patched object decodes like a body: types, unknown fields (422 when Strict).
        auto issues = schema.check(root, *target, *alloc, true);
        if (issues.type_error) {
          return ApiError::invalid(
              "", "", "",
              {FieldError::invalid("patch", goQuote(toJson(*target)), *issues.type_error)});
        }
        options_.surface.pruneUnservedFields(type.group, type.kind, *target,
                                             &issues.unknown_fields);
        std::vector<std::string> strict;
        for (const auto& u : issues.unknown_fields) {
          strict.push_back("unknown field " + jsonString(u));
        }
        if (!strict.empty()) {
          if (*validation == "Strict") {
            return ApiError::invalid(
                "", "", "",
                {FieldError::invalid("patch", goQuote(std::string(body)), strictMessage(strict))});
          }
          if (*validation == "Warn") {
            warnings = strict;
          }
        }
        // A resourceVersion in the patch is a precondition.
        if (const JsonValue* meta = member(*target, "metadata")) {
          std::string_view prv = stringMember(*meta, "resourceVersion");
          if (!prv.empty() && prv != decimal(current.rv)) {
            return ObjectWriter::staleConflict(type, name);
          }
        }
        if (isEventsV1(type)) {
          JsonDocument core;
          v1EventToCore(v1, core, core.GetAllocator());
          doc.CopyFrom(core, doc.GetAllocator());
        }
        return std::nullopt;
      },
      dryRun(r), *manager);
  if (!result.ok()) {
    return errorResponse(result.error());
  }
  HttpResponse resp = jsonResponse(200, answer(r, *result.value().object));
  addWarnings(resp, warnings);
  return resp;
}

namespace {

struct DeleteRequest {
  ObjectWriter::DeleteOptions options;
  std::string propagation;
};

std::optional<ApiError> parseDeleteOptions(const ApiRequest& r, DeleteRequest& out) {
  std::string_view body = r.body();
  out.options.dry_run = dryRun(r);
  out.propagation = r.query.get("propagationPolicy");
  bool has_body = false;
  for (char c : body) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      has_body = true;
      break;
    }
  }
  if (has_body) {
    JsonDocument doc;
    std::string perr;
    if (parseMediaType(r.header(http::field::content_type)).essence() ==
        "application/vnd.kubernetes.protobuf") {
      if (!ProtobufDecoder::builtin().decode(body, "DeleteOptions", doc, &perr)) {
        return ApiError::badRequest(
            "the object provided is unrecognized (must be of type "
            "DeleteOptions): " +
            perr);
      }
    } else {
      doc.Parse(body.data(), body.size());
    }
    if (doc.HasParseError() || !doc.IsObject()) {
      return ApiError::badRequest(
          "the object provided is unrecognized (must be of type "
          "DeleteOptions): couldn't get version/kind; json parse error: " +
          (doc.HasParseError() ? describeParseError(doc, body) : std::string("not an object")) +
          " (" + summarize(body) + ")");
    }
    auto issues = Schema::builtin().check("DeleteOptions", doc, doc.GetAllocator(), true);
    if (issues.type_error) {
      return ApiError::badRequest(
          "DeleteOptions in version \"v1\" cannot be handled as a "
          "DeleteOptions: " +
          *issues.type_error);
    }
    if (const JsonValue* pre = member(doc, "preconditions")) {
      out.options.uid = std::string(stringMember(*pre, "uid"));
      out.options.resource_version = std::string(stringMember(*pre, "resourceVersion"));
    }
    if (std::string_view p = stringMember(doc, "propagationPolicy"); !p.empty()) {
      out.propagation = std::string(p);
    }
    if (const JsonValue* dr = member(doc, "dryRun"); dr && dr->IsArray()) {
      for (const auto& v : dr->GetArray()) {
        if (v.IsString() && std::string_view(v.GetString()) == "All") {
          out.options.dry_run = true;
        }
      }
    }
  }
  if (!out.propagation.empty() && out.propagation != "Orphan" && out.propagation != "Background" &&
      out.propagation != "Foreground") {
    return ApiError::invalid("meta.k8s.io", "DeleteOptions", "",
                             {FieldError::notSupported("propagationPolicy", out.propagation,
                                                       {"Foreground", "Background", "Orphan"})});
  }
  return std::nullopt;
}

std::string successStatus(const ResourceType& type, const StoredObject& obj) {
  std::string out =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":)";
  appendJsonString(out, obj.name);
  if (!type.group.empty()) {
    out += R"(,"group":)";
    appendJsonString(out, type.group);
  }
  out += R"(,"kind":)";
  appendJsonString(out, type.resource);
  out += R"(,"uid":)";
  appendJsonString(out, obj.uid);
  out += "}}";
  return out;
}

}  // namespace

HttpResponse ResourceHandler::remove(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  DeleteRequest dr;
  if (auto e = parseDeleteOptions(r, dr)) {
    return errorResponse(*e);
  }
  if (dr.propagation == "Foreground") {
    // The object stays, with deletionTimestamp and the foregroundDeletion finalizer, until
    // the garbage collector (BuiltinControllers) has seen its blocking dependents go.
    dr.options.mark_only = true;
    dr.options.mark = [](JsonDocument& doc) {
      addFinalizer(doc, kForegroundDeletion, doc.GetAllocator());
    };
  }
  // Orphan and Background delete at once (no dependents are orphaned or collected).
  auto result = writer_.remove(storageType(type), r.info.ns, r.info.name, dr.options);
  if (!result.ok()) {
    return errorResponse(result.error());
  }
  const auto& res = result.value();
  if (res.deleted && !type.returns_deleted_object) {
    return jsonResponse(200, successStatus(type, *res.object));
  }
  return jsonResponse(200, answer(r, *res.object));
}

HttpResponse ResourceHandler::removeNamespace(const ApiRequest& r) {
  const std::string& name = r.info.name;
  if (name == "default" || name == "kube-system" || name == "kube-public") {
    return errorResponse(
        ApiError::forbidden("", "namespaces", name, "this namespace may not be deleted"));
  }
  DeleteRequest dr;
  if (auto e = parseDeleteOptions(r, dr)) {
    return errorResponse(*e);
  }
  // Mark it Terminating; the namespace controller empties and then removes it.
  dr.options.mark_only = true;
  dr.options.mark = [](JsonDocument& doc) {
    setString(ensureObject(doc, "status", doc.GetAllocator()), "phase", "Terminating",
              doc.GetAllocator());
  };
  auto result = writer_.remove(*r.type, "", name, dr.options);
  if (!result.ok()) {
    return errorResponse(result.error());
  }
  return jsonResponse(200, answer(r, *result.value().object));
}

HttpResponse ResourceHandler::removeCollection(const ApiRequest& r) {
  const ResourceType& type = *r.type;
  const ResourceType& st = storageType(type);
  DeleteRequest dr;
  if (auto e = parseDeleteOptions(r, dr)) {
    return errorResponse(*e);
  }
  ObjectStore::ListRequest req;
  req.ns = type.namespaced ? r.info.ns : std::string();
  if (auto err = parseSelectors(r, type, options_.surface, req.labels, req.fields)) {
    return errorResponse(*err);
  }
  auto listed = store_.list(st, req);
  if (!listed.ok()) {
    return errorResponse(listed.error());
  }
  std::string items;
  for (const auto& obj : listed.value().items) {
    ObjectWriter::DeleteOptions opts;
    opts.dry_run = dr.options.dry_run;
    auto res = writer_.remove(st, obj->ns, obj->name, opts);
    if (!res.ok()) {
      if (res.error().code() == 404) {
        continue;
      }
      return errorResponse(res.error());
    }
    items += (items.empty() ? "" : ",") + answer(r, *res.value().object);
  }
  return jsonResponse(200, "{" + listHead(r) + R"(,"metadata":{"resourceVersion":")" +
                               decimal(store_.currentRv()) + R"("},"items":[)" + items + "]}");
}

}  // namespace ccm::kubesim
