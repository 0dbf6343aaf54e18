// StateFile: JSON save/load of the object store.
#include "kubesim/state_file.hpp"

#include "kubesim/cluster_pki.hpp"

namespace ccm::kubesim {

Status StateFile::save(const ObjectStore::Snapshot& snapshot, const std::string& path) {
  const auto& reg = ResourceRegistry::builtin();
  std::string out = R"({"kind":"KubesimState","version":1,"resourceVersion":")" +
                    decimal(snapshot.rv) + R"(","objects":[)";
  bool first = true;
  for (const auto& [id, obj] : snapshot.objects) {
    const ResourceType& t = reg.at(id);
    out += first ? "" : ",\n";
    first = false;
    out += R"({"group":)" + jsonString(t.group) + R"(,"resource":)" + jsonString(t.resource) +
           R"(,"object":)" + obj->json + "}";
  }
  out += "]}\n";
  return writeFileAtomically(path, out);
}

StatusOr<ObjectStore::Snapshot> StateFile::load(const std::string& path) {
  auto text = readFile(path);
  if (!text.ok()) {
    return text.status();
  }
  JsonDocument doc;
  doc.Parse(text.value().data(), text.value().size());
  if (doc.HasParseError() || !doc.IsObject() || stringMember(doc, "kind") != "KubesimState") {
    return Status(Code::InvalidArgument, path + " is not a kubesim state file");
  }
  ObjectStore::Snapshot snap;
  snap.rv = parseDecimal(stringMember(doc, "resourceVersion")).value_or(0);
  const JsonValue* objects = member(doc, "objects");
  if (objects == nullptr || !objects->IsArray()) {
    return Status(Code::InvalidArgument, path + ": objects missing");
  }
  const auto& reg = ResourceRegistry::builtin();
  for (const auto& e : objects->GetArray()) {
    const ResourceType* t = reg.find(stringMember(e, "group"), "v1", stringMember(e, "resource"));
    const JsonValue* obj = member(e, "object");
    if (t == nullptr || obj == nullptr) {
      return Status(Code::InvalidArgument,
                    path + ": unknown resource " + std::string(stringMember(e, "resource")));
    }
    ObjectPtr stored = storedFromJson(*t, toJson(*obj));
    if (!stored) {
      return Status(Code::InvalidArgument, path + ": bad object");
    }
    snap.rv = std::max(snap.rv, stored->rv);
    snap.objects.emplace_back(t->id, std::move(stored));
  }
  return snap;
}

}  // namespace ccm::kubesim
