// AdminApi: the /admin endpoints.
#include "kubesim/admin_api.hpp"

#include <malloc.h>

#include "kubesim/cluster_bootstrap.hpp"
#include "kubesim/kubesim_server.hpp"

namespace ccm::kubesim {
namespace {

HttpResponse ok(std::string body) {
  return jsonResponse(200, std::move(body));
}

HttpResponse fail(int code, const std::string& message) {
  std::string reason = code == 404 ? "NotFound" : code == 400 ? "BadRequest" : "InternalError";
  return errorResponse(ApiError(code, reason, message));
}

HttpResponse fromStatus(const Status& s) {
  int code = s.code() == Code::NotFound          ? 404
             : s.code() == Code::InvalidArgument ? 400
             : s.code() == Code::AlreadyExists   ? 409
                                                 : 500;
  return fail(code, s.message());
}

std::vector<std::string> splitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') {
      ++i;
    }
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) {
      j = path.size();
    }
    if (j > i) {
      out.emplace_back(path.substr(i, j - i));
    }
    i = j;
  }
  return out;
}

std::vector<std::string> strings(const JsonValue& obj, std::string_view name) {
  std::vector<std::string> out;
  if (const JsonValue* v = member(obj, name); v && v->IsArray()) {
    for (const auto& e : v->GetArray()) {
      if (e.IsString()) {
        out.emplace_back(e.GetString());
      }
    }
  }
  return out;
}

int64_t intMember(const JsonValue& obj, std::string_view name, int64_t fallback) {
  const JsonValue* v = member(obj, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : fallback;
}

bool boolMember(const JsonValue& obj, std::string_view name, bool fallback) {
  const JsonValue* v = member(obj, name);
  return v != nullptr && v->IsBool() ? v->GetBool() : fallback;
}

std::string strList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? "," : "") + jsonString(v[i]);
  }
  return out + "]";
}

}  // namespace

HttpResponse AdminApi::handleAdmin(const ApiRequest& r) {
  auto parts = splitPath(r.info.path);  // "admin", ...
  parts.erase(parts.begin());
  JsonDocument body;
  if (!r.body().empty()) {
    body.Parse(r.body().data(), r.body().size());
    if (body.HasParseError() || !body.IsObject()) {
      return fail(400, "admin requests take a JSON object body");
    }
  } else {
    body.SetObject();
  }
  const std::string& m = r.method;
  if (parts.empty() || (parts[0] == "status" && m == "GET")) {
    return status();
  }
  const std::string& what = parts[0];
  if (what == "nodes") {
    return nodes(r, parts, body);
  }
  if (what == "heartbeats" && m == "POST") {
    server_.kubelets().setAllHeartbeats(boolMember(body, "enabled", true));
    return ok(R"({"ok":true})");
  }
  if (what == "faults") {
    return faults(r, parts, body);
  }
  if (what == "latency" && m == "POST") {
    server_.faults().setLatency(std::chrono::milliseconds(intMember(body, "ms", 0)),
                                std::chrono::milliseconds(intMember(body, "jitterMs", 0)));
    return ok(R"({"ok":true})");
  }
  if (what == "watches" && parts.size() == 2 && parts[1] == "close" && m == "POST") {
    return ok(R"({"closed":)" + std::to_string(server_.closeWatches()) + "}");
  }
  if (what == "connections" && parts.size() == 2 && parts[1] == "close" && m == "POST") {
    // Every other connection goes now; this one right after its answer. A connection the
    // caller opens once it has the answer is never dropped by this call.
    size_t closed = server_.closeConnections(r.http.peer);
    HttpResponse resp = ok(R"({"closed":)" + std::to_string(closed + 1) + "}");
    resp.close = true;
    return resp;
  }
  if (what == "http2" && parts.size() == 2 && parts[1] == "goaway" && m == "POST") {
    bool end_streams = boolMember(body, "endStreams", true);
    return ok(R"({"connections":)" +
              std::to_string(server_.http().goAwayAll(end_streams)) + "}");
  }
  if (what == "http2" && parts.size() == 2 && parts[1] == "reset" && m == "POST") {
    return ok(R"({"connections":)" + std::to_string(server_.http().resetStreams()) + "}");
  }
  if (what == "compact" && m == "POST") {
    server_.compact();
    return ok(R"({"resourceVersion":")" + decimal(server_.store().currentRv()) + "\"}");
  }
  if (what == "restart" && m == "POST") {
    bool keep = boolMember(body, "keepState", true);
    auto down = std::chrono::milliseconds(intMember(body, "downMs", 0));
    uint64_t before = server_.restarts();
    server_.restartAsync(keep, down);
    HttpResponse resp =
        jsonResponse(202, R"({"restarting":true,"restartsBefore":)" + std::to_string(before) + "}");
    resp.close = true;
    return resp;
  }
  if (what == "state" && parts.size() == 2 && parts[1] == "save" && m == "POST") {
    std::string path(stringMember(body, "path"));
    if (path.empty()) {
      path = server_.options().state_file;
    }
    if (path.empty()) {
      return fail(400, "no path given and no --state-file configured");
    }
    auto s = server_.saveState(path);
    if (!s.ok()) {
      return fromStatus(s);
    }
    return ok(R"({"path":)" + jsonString(path) + "}");
  }
  if (what == "credentials" && m == "POST") {
    return credentials(body);
  }
  if (what == "authz" && parts.size() == 1 && (m == "GET" || m == "DELETE")) {
    AuthzRecorder* recorder = server_.authzRecorder();
    if (recorder == nullptr) {
      return fail(400,
                  "authorization decisions are not recorded: start kubesim with "
                  "--record-authz");
    }
    if (m == "DELETE") {
      return ok(R"({"cleared":)" + std::to_string(recorder->clear()) + "}");
    }
    return ok(recorder->toJson(r.query.get("user")));
  }
  if (what == "manifests" && m == "POST") {
    auto res = ClusterBootstrap::loadManifests(server_.writer(), strings(body, "paths"));
    if (!res.ok()) {
      return fromStatus(res.status());
    }
    return ok(R"({"applied":)" + std::to_string(res.value().applied) + R"(,"ignored":)" +
              std::to_string(res.value().ignored) + "}");
  }
  return fail(404, "no admin endpoint " + m + " " + r.info.path);
}

HttpResponse AdminApi::status() {
  const auto& reg = ResourceRegistry::builtin();
  std::string counts;
  for (const auto& t : reg.all()) {
    if (!t.stored || t.group == "events.k8s.io") {
      continue;
    }
    counts += (counts.empty() ? "" : ",") + jsonString(t.qualifiedResource()) + ":" +
              std::to_string(server_.store().count(t));
  }
  return ok(R"({"resourceVersion":")" + decimal(server_.store().currentRv()) + R"(","port":)" +
            std::to_string(server_.port()) + R"(,"watchers":)" +
            std::to_string(server_.store().watcherCount()) + R"(,"connections":)" +
            std::to_string(server_.connectionCount()) + R"(,"restarts":)" +
            std::to_string(server_.restarts()) + R"(,"simulatedNodes":)" +
            std::to_string(server_.kubelets().size()) + R"(,"heapInUseBytes":)" +
            std::to_string(mallinfo2().uordblks) + R"(,"transport":)" + transportJson() +
            R"(,"requests":)" + server_.api().requestCountsJson() + R"(,"objects":{)" + counts +
            "}}");
}

std::string AdminApi::transportJson() {
  const TransportStats& t = server_.http().stats();
  return R"({"http1Connections":)" + std::to_string(t.http1_connections.load()) +
         R"(,"http2Connections":)" + std::to_string(t.http2_connections.load()) +
         R"(,"http2ConnectionsOpen":)" + std::to_string(t.http2_connections_open.load()) +
         R"(,"http2Streams":)" + std::to_string(t.http2_streams.load()) +
         R"(,"http2StreamsOpen":)" + std::to_string(t.http2_streams_open.load()) +
         R"(,"http2WatchStreamsOpen":)" + std::to_string(t.http2_watch_streams_open.load()) +
         R"(,"goawaysSent":)" + std::to_string(t.goaways_sent.load()) +
         R"(,"streamsReset":)" + std::to_string(t.streams_reset.load()) +
         R"(,"gzipResponses":)" + std::to_string(t.gzip_responses.load()) + "}";
}

HttpResponse AdminApi::nodes(const ApiRequest& r, const std::vector<std::string>& parts,
                             const JsonValue& body) {
  const std::string& m = r.method;
  auto& kubelets = server_.kubelets();
  if (parts.size() == 1 && m == "GET") {
    std::string out;
    for (const auto& n : kubelets.nodes()) {
      out += (out.empty() ? "" : ",") + std::string(R"({"name":)") + jsonString(n.name) +
             R"(,"ready":)" + jsonString(n.ready) + R"(,"heartbeats":)" +
             (n.heartbeats ? "true" : "false") + R"(,"leaseRenewals":)" +
             std::to_string(n.lease_renewals) + R"(,"statusUpdates":)" +
             std::to_string(n.status_updates) + "}";
    }
    return ok(R"({"nodes":[)" + out + "]}");
  }
  if (parts.size() == 1 && m == "POST") {
    std::string ready(stringMember(body, "ready"));
    if (ready.empty()) {
      ready = "True";
    }
    auto names = strings(body, "names");
    if (names.empty() && member(body, "labels") != nullptr) {
      return fail(400, "labels are given with names (numbered nodes carry the usual ones)");
    }
    if (!names.empty()) {
      // Labels the kubelets register with (--node-labels): on the Node from its creation,
      // as a real kubelet's are, not patched on after it.
      KubeletSimulator::NodeLabels labels;
      if (const JsonValue* l = member(body, "labels"); l != nullptr) {
        if (!l->IsObject()) {
          return fail(400, "labels must be an object of strings");
        }
        for (const auto& m : l->GetObject()) {
          if (!m.value.IsString()) {
            return fail(400, "labels must be an object of strings");
          }
          labels[m.name.GetString()] = m.value.GetString();
        }
      }
      auto s = kubelets.addNamedNodes(names, ready, labels);
      if (!s.ok()) {
        return fromStatus(s);
      }
      return ok(R"({"names":)" + strList(names) + "}");
    }
    int64_t count = intMember(body, "count", 1);
    if (count < 1 || count > 100000) {
      return fail(400, "count must be between 1 and 100000");
    }
    auto added = kubelets.addNodes(static_cast<int>(count), ready);
    if (!added.ok()) {
      return fromStatus(added.status());
    }
    // Bulk registration churns through many short-lived parse buffers: give the freed
    // pages back so RSS reflects what is kept.
    malloc_trim(0);
    return ok(R"({"names":)" + strList(added.value()) + "}");
  }
  if (parts.size() == 2 && parts[1] == "ready" && m == "POST") {
    std::string st(stringMember(body, "status"));
    for (const auto& n : strings(body, "names")) {
      auto s = kubelets.setReady(n, st);
      if (!s.ok()) {
        return fromStatus(s);
      }
    }
    return ok(R"({"ok":true})");
  }
  if (parts.size() == 2 && m == "DELETE") {
    auto s = kubelets.deleteNode(parts[1]);
    if (!s.ok()) {
      return fromStatus(s);
    }
    return ok(R"({"deleted":)" + jsonString(parts[1]) + "}");
  }
  if (parts.size() == 3 && (parts[2] == "ready" || parts[2] == "condition") && m == "POST") {
    auto s = kubelets.setReady(parts[1], std::string(stringMember(body, "status")));
    if (!s.ok()) {
      return fromStatus(s);
    }
    return ok(R"({"ok":true})");
  }
  if (parts.size() == 3 && parts[2] == "heartbeats" && m == "POST") {
    auto s = kubelets.setHeartbeats(parts[1], boolMember(body, "enabled", true));
    if (!s.ok()) {
      return fromStatus(s);
    }
    return ok(R"({"ok":true})");
  }
  return fail(404, "no admin endpoint " + m + " " + r.info.path);
}

HttpResponse AdminApi::faults(const ApiRequest& r, const std::vector<std::string>& parts,
                              const JsonValue& body) {
  const std::string& m = r.method;
  auto& faults = server_.faults();
  if (parts.size() == 1 && m == "GET") {
    std::string out;
    for (const auto& f : faults.rules()) {
      out += (out.empty() ? "" : ",") + f.toJson();
    }
    return ok(R"({"faults":[)" + out + "]}");
  }
  if (parts.size() == 1 && m == "POST") {
    std::string err;
    auto rule = FaultRule::fromJson(body, &err);
    if (!rule) {
      return fail(400, err);
    }
    int id = faults.add(*rule);
    return ok(R"({"id":)" + std::to_string(id) + "}");
  }
  if (parts.size() == 1 && m == "DELETE") {
    faults.clear();
    return ok(R"({"ok":true})");
  }
  if (parts.size() == 2 && m == "DELETE") {
    int id = 0;
    try {
      id = std::stoi(parts[1]);
    } catch (const std::exception&) {
      return fail(400, "bad fault id");
    }
    if (!faults.remove(id)) {
      return fail(404, "no fault " + parts[1]);
    }
    return ok(R"({"ok":true})");
  }
  return fail(404, "no admin endpoint " + m + " " + r.info.path);
}

HttpResponse AdminApi::credentials(const JsonValue& body) {
  std::string kubeconfig(stringMember(body, "kubeconfig"));
  std::string token_file(stringMember(body, "tokenFile"));
  StatusOr<KubesimServer::IssuedCredentials> issued = Status(Code::InvalidArgument, "");
  if (std::string sa(stringMember(body, "serviceAccount")); !sa.empty()) {
    size_t slash = sa.find('/');
    if (slash == std::string::npos) {
      return fail(400, "serviceAccount must be namespace/name");
    }
    issued = server_.serviceAccountCredentials(
        sa.substr(0, slash), sa.substr(slash + 1),
        std::chrono::seconds(intMember(body, "expirationSeconds", 86400)),
        boolMember(body, "create", true), kubeconfig);
  } else if (std::string user(stringMember(body, "user")); !user.empty()) {
    bool cert = stringMember(body, "type") == "cert";
    issued = server_.userCredentials(user, strings(body, "groups"), cert, kubeconfig);
  } else {
    return fail(400, "give serviceAccount or user");
  }
  if (!issued.ok()) {
    return fromStatus(issued.status());
  }
  if (!token_file.empty() && !issued.value().token.empty()) {
    auto s = writeFileAtomically(token_file, issued.value().token);
    if (!s.ok()) {
      return fromStatus(s);
    }
  }
  return ok(R"({"user":)" + jsonString(issued.value().user) + R"(,"token":)" +
            jsonString(issued.value().token) + R"(,"kubeconfig":)" +
            jsonString(issued.value().kubeconfig) + "}");
}

}  // namespace ccm::kubesim
