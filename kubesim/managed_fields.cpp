// managedFields bookkeeping (see managed_fields.hpp).
#include "kubesim/managed_fields.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "kubesim/patch/patch_schema.hpp"

namespace ccm::kubesim {
namespace {

// A set of field paths in FieldsV1 spelling ("f:name", "k:{...}", "v:...").
struct PathTree {
  bool member = false;  // the path itself is in the set
  std::map<std::string, PathTree, std::less<>> children;
  bool empty() const { return !member && children.empty(); }
};

enum class Shape : unsigned char { Struct, Map, AtomicMap };

// Where a value sits: how its object members and list fields are to be read.
struct Ctx {
  std::span<const FieldSchema> fields;  // the struct's list rules (patch schema)
  Shape shape = Shape::Struct;
  bool service_spec = false;
};

bool isMapField(std::string_view name) {
  static constexpr std::array<std::string_view, 11> kMaps = {
      "labels", "annotations", "capacity",     "allocatable", "data",      "binaryData",
      "limits", "requests",    "nodeSelector", "matchLabels", "stringData"};
  return std::find(kMaps.begin(), kMaps.end(), name) != kMaps.end();
}

Ctx childCtx(const Ctx& parent, std::string_view name, bool top_level_spec_of_service) {
  Ctx c;
  if (parent.shape != Shape::Struct) {
    return c;  // a map's values: scalars or free-form objects
  }
  if (const FieldSchema* fs = findField(parent.fields, name)) {
    c.fields = fs->fields;
  }
  if (parent.service_spec && name == "selector") {
    c.shape = Shape::AtomicMap;
  } else if (isMapField(name)) {
    c.shape = Shape::Map;
  }
  c.service_spec = top_level_spec_of_service;
  return c;
}

std::string_view nameOf(const JsonValue& v) {
  return {v.GetString(), v.GetStringLength()};
}

std::string fieldKey(std::string_view name) {
  std::string k = "f:";
  k.append(name);
  return k;
}

// How a list is merged: its keys (keyed lists), or set/atomic.
struct ListRule {
  ListStrategy strategy = ListStrategy::Atomic;
  std::vector<std::string_view> keys;
  std::span<const FieldSchema> item_fields;
};

ListRule listRule(const Ctx& parent, std::string_view name) {
  ListRule rule;
  if (parent.shape != Shape::Struct) {
    return rule;
  }
  const FieldSchema* fs = findField(parent.fields, name);
  if (fs == nullptr) {
    return rule;
  }
  rule.strategy = fs->list;
  rule.item_fields = fs->fields;
  if (fs->list == ListStrategy::MergeByKey) {
    if (parent.service_spec && name == "ports") {
      rule.keys = {"port", "protocol"};  // listMapKey port and protocol
    } else {
      rule.keys = {fs->mergeKey};
    }
  }
  return rule;
}

// `k:{"port":80,"protocol":"TCP"}` (keys sorted), or "" when the item lacks a key.
std::string itemKey(const JsonValue& item, const ListRule& rule) {
  if (!item.IsObject()) {
    return {};
  }
  std::vector<std::string_view> keys = rule.keys;
  std::sort(keys.begin(), keys.end());
  std::string out = "k:{";
  bool first = true;
  for (std::string_view k : keys) {
    const JsonValue* v = member(item, k);
    if (v == nullptr || v->IsNull()) {
      return {};
    }
    if (!first) {
      out += ',';
    }
    first = false;
    appendJsonString(out, k);
    out += ':';
    appendJson(out, *v);
  }
  out += '}';
  return out;
}

std::string setKey(const JsonValue& v) {
  std::string out = "v:";
  appendJson(out, v);
  return out;
}

void addAll(const JsonValue& v, const Ctx& ctx, PathTree& node);

void addList(const JsonValue& list, const ListRule& rule, PathTree& node) {
  node.member = true;
  if (rule.strategy == ListStrategy::MergeScalars) {
    for (const auto& item : list.GetArray()) {
      node.children[setKey(item)].member = true;
    }
    return;
  }
  Ctx item_ctx{rule.item_fields, Shape::Struct, false};
  for (const auto& item : list.GetArray()) {
    PathTree& child = node.children[itemKey(item, rule)];
    child.member = true;
    addAll(item, item_ctx, child);
  }
}

bool listIsKeyable(const JsonValue& list, const ListRule& rule) {
  if (rule.strategy == ListStrategy::Atomic) {
    return false;
  }
  if (rule.strategy == ListStrategy::MergeScalars) {
    return true;
  }
  return std::all_of(list.Begin(), list.End(),
                     [&](const JsonValue& item) { return !itemKey(item, rule).empty(); });
}

void addMember(const JsonValue& parent_value, const JsonValue& name, const JsonValue& value,
               const Ctx& ctx, PathTree& node, bool service) {
  (void)parent_value;
  if (value.IsNull()) {
    return;
  }
  std::string_view n = nameOf(name);
  PathTree& child = node.children[fieldKey(n)];
  if (value.IsArray()) {
    ListRule rule = listRule(ctx, n);
    if (listIsKeyable(value, rule)) {
      addList(value, rule, child);
    } else {
      child.member = true;
    }
    return;
  }
  addAll(value, childCtx(ctx, n, service && n == "spec"), child);
}

// Every leaf of v (and v itself when it is a map or an empty struct) into node.
void addAll(const JsonValue& v, const Ctx& ctx, PathTree& node) {
  if (!v.IsObject() || ctx.shape == Shape::AtomicMap) {
    node.member = true;
    return;
  }
  if (ctx.shape == Shape::Map || v.ObjectEmpty()) {
    node.member = true;
  }
  for (auto it = v.MemberBegin(); it != memberEnd(v); ++it) {
    addMember(v, it->name, it->value, ctx, node, false);
  }
}

void diffValue(const JsonValue& o, const JsonValue& n, const Ctx& ctx, PathTree& changed,
               PathTree& removed);

void diffList(const JsonValue& o, const JsonValue& n, const ListRule& rule, PathTree& changed,
              PathTree& removed) {
  if (!listIsKeyable(o, rule) || !listIsKeyable(n, rule)) {
    changed.member = true;
    return;
  }
  std::vector<std::pair<std::string, const JsonValue*>> old_items;
  old_items.reserve(o.Size());
  bool set = rule.strategy == ListStrategy::MergeScalars;
  for (const auto& item : o.GetArray()) {
    old_items.emplace_back(set ? setKey(item) : itemKey(item, rule), &item);
  }
  std::vector<bool> seen(old_items.size(), false);
  Ctx item_ctx{rule.item_fields, Shape::Struct, false};
  for (const auto& item : n.GetArray()) {
    std::string key = set ? setKey(item) : itemKey(item, rule);
    auto found = std::find_if(old_items.begin(), old_items.end(),
                              [&](const auto& e) { return e.first == key; });
    if (found == old_items.end()) {
      if (set) {
        changed.children[key].member = true;
      } else {
        PathTree& child = changed.children[key];
        child.member = true;
        addAll(item, item_ctx, child);
      }
      continue;
    }
    seen[static_cast<size_t>(found - old_items.begin())] = true;
    if (!set && *found->second != item) {
      PathTree c;
      PathTree r;
      diffValue(*found->second, item, item_ctx, c, r);
      if (!c.empty()) {
        changed.children[key] = std::move(c);
      }
      if (!r.empty()) {
        removed.children[key] = std::move(r);
      }
    }
  }
  for (size_t i = 0; i < old_items.size(); ++i) {
    if (!seen[i]) {
      removed.children[old_items[i].first].member = true;
    }
  }
}

// The members of two objects; skip names members not to compare (stripped metadata).
void diffObject(const JsonValue& o, const JsonValue& n, const Ctx& ctx, PathTree& changed,
                PathTree& removed, bool service, std::span<const std::string_view> skip = {}) {
  auto skipped = [&](std::string_view name) {
    return std::find(skip.begin(), skip.end(), name) != skip.end();
  };
  for (auto it = n.MemberBegin(); it != memberEnd(n); ++it) {
    std::string_view name = nameOf(it->name);
    if (skipped(name)) {
      continue;
    }
    const JsonValue* ov = member(o, name);
    if (ov == nullptr || ov->IsNull()) {
      addMember(n, it->name, it->value, ctx, changed, service);
      continue;
    }
    if (*ov == it->value) {
      continue;
    }
    if (it->value.IsNull()) {
      removed.children[fieldKey(name)].member = true;
      continue;
    }
    PathTree c;
    PathTree r;
    if (ov->IsArray() && it->value.IsArray()) {
      diffList(*ov, it->value, listRule(ctx, name), c, r);
    } else {
      diffValue(*ov, it->value, childCtx(ctx, name, service && name == "spec"), c, r);
    }
    if (!c.empty()) {
      changed.children[fieldKey(name)] = std::move(c);
    }
    if (!r.empty()) {
      removed.children[fieldKey(name)] = std::move(r);
    }
  }
  for (auto it = o.MemberBegin(); it != memberEnd(o); ++it) {
    std::string_view name = nameOf(it->name);
    if (!skipped(name) && !it->value.IsNull() && member(n, name) == nullptr) {
      removed.children[fieldKey(name)].member = true;
    }
  }
}

void diffValue(const JsonValue& o, const JsonValue& n, const Ctx& ctx, PathTree& changed,
               PathTree& removed) {
  if (o.IsObject() && n.IsObject() && ctx.shape != Shape::AtomicMap) {
    diffObject(o, n, ctx, changed, removed, false);
    return;
  }
  if (o != n) {
    changed.member = true;
  }
}

// ---- FieldsV1 objects ------------------------------------------------------------------

bool isSelf(const JsonValue& name) {
  return name.GetStringLength() == 1 && name.GetString()[0] == '.';
}

JsonValue::MemberIterator findKey(JsonValue& obj, std::string_view key) {
  return obj.FindMember(JsonValue(rapidjson::StringRef(key.data(), key.size())));
}

// Puts "." first and the rest in byte order (the serialized order of a field set).
void sortFields(JsonValue& obj, JsonAllocator& alloc) {
  auto less = [](const JsonValue::Member* a, const JsonValue::Member* b) {
    if (isSelf(a->name) != isSelf(b->name)) {
      return isSelf(a->name);
    }
    return nameOf(a->name) < nameOf(b->name);
  };
  std::vector<JsonValue::Member*> members;
  members.reserve(obj.MemberCount());
  for (auto it = obj.MemberBegin(); it != memberEnd(obj); ++it) {
    members.push_back(&*it);
  }
  if (std::is_sorted(members.begin(), members.end(), less)) {
    return;
  }
  std::sort(members.begin(), members.end(), less);
  JsonValue out(rapidjson::kObjectType);
  for (JsonValue::Member* m : members) {
    out.AddMember(m->name, m->value, alloc);
  }
  obj = out;
}

// A node is a member when it is a leaf ({}) or holds ".".
bool nodeIsMember(const JsonValue& v) {
  return v.ObjectEmpty() || v.HasMember(".");
}

// Keeps a member node well-formed: "." only beside other children, {} alone.
void settleMember(JsonValue& v, JsonAllocator& alloc) {
  size_t others = v.MemberCount() - (v.HasMember(".") ? 1 : 0);
  if (others == 0) {
    v.RemoveAllMembers();
  } else if (!v.HasMember(".")) {
    v.AddMember(".", JsonValue(rapidjson::kObjectType), alloc);
  }
}

// fields ∪= tree; true when fields changed.
bool addTree(JsonValue& fields, const PathTree& tree, JsonAllocator& alloc) {
  bool modified = false;
  bool added_key = false;
  for (const auto& [key, child] : tree.children) {
    auto it = findKey(fields, key);
    bool was_member = false;
    if (it == memberEnd(fields)) {
      fields.AddMember(makeString(key, alloc), JsonValue(rapidjson::kObjectType), alloc);
      it = fields.MemberEnd() - 1;
      added_key = true;
      modified = true;
    } else {
      if (!it->value.IsObject()) {
        it->value.SetObject();
      }
      was_member = nodeIsMember(it->value);
    }
    JsonValue& v = it->value;
    if (!child.children.empty()) {
      modified = addTree(v, child, alloc) || modified;
    }
    if (child.member || was_member) {
      bool had_self = v.HasMember(".");
      settleMember(v, alloc);
      if (had_self != v.HasMember(".")) {
        sortFields(v, alloc);
      }
    }
  }
  if (added_key) {
    sortFields(fields, alloc);
  }
  return modified;
}

// fields −= tree; recursive: a member path of tree takes its whole subtree.
void subtractTree(JsonValue& fields, const PathTree& tree, bool recursive) {
  for (const auto& [key, child] : tree.children) {
    auto it = findKey(fields, key);
    if (it == memberEnd(fields)) {
      continue;
    }
    JsonValue& v = it->value;
    if (!v.IsObject() || (recursive && child.member)) {
      fields.EraseMember(it);
      continue;
    }
    bool was_member = nodeIsMember(v);
    if (child.member) {
      v.EraseMember(".");
      was_member = false;
    }
    if (!child.children.empty()) {
      subtractTree(v, child, recursive);
    }
    if (v.ObjectEmpty()) {
      if (!was_member) {
        fields.EraseMember(it);
      }
    } else if (v.MemberCount() == 1 && v.HasMember(".")) {
      v.RemoveAllMembers();
    }
  }
}

// ---- entries ---------------------------------------------------------------------------

bool validEntries(const JsonValue& list) {
  if (!list.IsArray()) {
    return false;
  }
  for (const auto& e : list.GetArray()) {
    if (!e.IsObject()) {
      return false;
    }
    std::string_view op = stringMember(e, "operation");
    const JsonValue* f = member(e, "fieldsV1");
    if ((op != "Update" && op != "Apply") || (f != nullptr && !f->IsObject())) {
      return false;
    }
  }
  return true;
}

// A client's explicit reset: [] or [{}].
bool isReset(const JsonValue& list) {
  return list.IsArray() &&
         (list.Empty() || (list.Size() == 1 && list[0].IsObject() && list[0].ObjectEmpty()));
}

JsonValue newEntry(std::string_view manager, std::string_view api_version,
                   std::string_view subresource, JsonAllocator& alloc) {
  JsonValue e(rapidjson::kObjectType);
  if (!manager.empty()) {
    e.AddMember("manager", makeString(manager, alloc), alloc);
  }
  e.AddMember("operation", "Update", alloc);
  e.AddMember("apiVersion", makeString(api_version, alloc), alloc);
  e.AddMember("time", JsonValue(rapidjson::kStringType), alloc);
  e.AddMember("fieldsType", "FieldsV1", alloc);
  e.AddMember("fieldsV1", JsonValue(rapidjson::kObjectType), alloc);
  if (!subresource.empty()) {
    e.AddMember("subresource", makeString(subresource, alloc), alloc);
  }
  return e;
}

JsonValue* findEntry(JsonValue& entries, std::string_view manager, std::string_view subresource) {
  for (auto& e : entries.GetArray()) {
    if (stringMember(e, "manager") == manager && stringMember(e, "operation") == "Update" &&
        stringMember(e, "subresource") == subresource) {
      return &e;
    }
  }
  return nullptr;
}

// The writer's entry gains changed (and loses removed); every other one loses both.
void applyWrite(JsonValue& entries, const PathTree& changed, const PathTree& removed,
                std::string_view manager, std::string_view api_version,
                std::string_view subresource, const std::string& now, JsonAllocator& alloc) {
  for (auto& e : entries.GetArray()) {
    bool own = stringMember(e, "manager") == manager && stringMember(e, "operation") == "Update" &&
               stringMember(e, "subresource") == subresource;
    JsonValue* f = member(e, "fieldsV1");
    if (own || f == nullptr) {
      continue;
    }
    subtractTree(*f, changed, false);
    subtractTree(*f, removed, true);
  }
  JsonValue* own = findEntry(entries, manager, subresource);
  if (own == nullptr && !changed.empty()) {
    entries.PushBack(newEntry(manager, api_version, subresource, alloc), alloc);
    own = &entries[entries.Size() - 1];
  }
  if (own != nullptr) {
    JsonValue& f = ensureObject(*own, "fieldsV1", alloc);
    if (!changed.empty()) {
      addTree(f, changed, alloc);
      setString(*own, "time", now, alloc);
    }
    subtractTree(f, removed, true);
  }
  // Drop emptied entries.
  for (auto it = entries.Begin(); it != entries.End();) {
    const JsonValue* f = member(*it, "fieldsV1");
    if (f == nullptr || (f->IsObject() && f->ObjectEmpty())) {
      it = entries.Erase(it);
    } else {
      ++it;
    }
  }
}

// The API server's order: operation, time, manager, apiVersion, subresource.
void sortEntries(JsonValue& entries, JsonAllocator& alloc) {
  auto rank = [](const JsonValue& e) {
    return std::array<std::string_view, 5>{
        stringMember(e, "operation"), stringMember(e, "time"), stringMember(e, "manager"),
        stringMember(e, "apiVersion"), stringMember(e, "subresource")};
  };
  std::vector<JsonValue*> list;
  for (auto& e : entries.GetArray()) {
    list.push_back(&e);
  }
  auto less = [&](const JsonValue* a, const JsonValue* b) { return rank(*a) < rank(*b); };
  if (std::is_sorted(list.begin(), list.end(), less)) {
    return;
  }
  std::stable_sort(list.begin(), list.end(), less);
  JsonValue out(rapidjson::kArrayType);
  out.Reserve(entries.Size(), alloc);
  for (JsonValue* e : list) {
    out.PushBack(*e, alloc);
  }
  entries = out;
}

// Fields the field manager never tracks.
constexpr std::array<std::string_view, 10> kStrippedMeta = {
    "name",       "namespace", "uid",           "resourceVersion",   "creationTimestamp",
    "generation", "selfLink",  "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"};

}  // namespace

std::string managerFromUserAgent(std::string_view user_agent) {
  std::string_view prefix = user_agent.substr(0, user_agent.find('/'));
  std::string out;
  for (size_t i = 0; i < prefix.size();) {
    auto c = static_cast<unsigned char>(prefix[i]);
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    len = std::min(len, prefix.size() - i);
    bool printable = c >= 0x80 ? c >= 0xC0 : (c >= 0x20 && c != 0x7F);
    if (printable) {
      if (out.size() + len > kFieldManagerMaxLength) {
        break;
      }
      out.append(prefix.substr(i, len));
    }
    i += len;
  }
  return out;
}

void recordManagedFields(const ResourceType& type, JsonValue& doc, const JsonValue* old,
                         std::string_view manager, std::string_view subresource,
                         JsonAllocator& alloc) {
  JsonValue& meta = ensureObject(doc, "metadata", alloc);
  const JsonValue* live =
      old != nullptr ? memberPath(*old, {"metadata", "managedFields"}) : nullptr;
  JsonValue entries(rapidjson::kArrayType);
  JsonValue* sent = member(meta, "managedFields");
  bool from_client = sent != nullptr && subresource.empty();
  bool carried = sent != nullptr && live != nullptr && *sent == *live;
  if (from_client && isReset(*sent)) {
    // reset: start from nothing
  } else if ((from_client && validEntries(*sent) && !sent->Empty()) || carried) {
    // The client's own list, or the stored one carried over by the write: moved, not copied.
    entries = *sent;
  } else if (live != nullptr && validEntries(*live)) {
    entries.CopyFrom(*live, alloc);
  }
  removeMember(meta, "managedFields");

  Ctx root{strategicSchemaForKind(type.kind), Shape::Struct, false};
  bool service = type.kind == "Service";
  bool status_split = type.hasSubresource("status");
  PathTree changed;
  PathTree removed;
  PathTree status_changed;  // Node create: the creator's status entry
  std::vector<std::string_view> skip_top = {"apiVersion", "kind", "metadata"};
  if (status_split && subresource.empty()) {
    skip_top.emplace_back("status");
  } else if (status_split && subresource == "status") {
    skip_top.emplace_back("spec");
  }
  Ctx meta_ctx = childCtx(root, "metadata", false);
  JsonValue empty(rapidjson::kObjectType);
  const JsonValue* old_meta = old != nullptr ? member(*old, "metadata") : nullptr;
  PathTree meta_changed;
  PathTree meta_removed;
  diffObject(old_meta != nullptr && old_meta->IsObject() ? *old_meta : empty, meta, meta_ctx,
             meta_changed, meta_removed, false, kStrippedMeta);
  if (!meta_changed.empty()) {
    changed.children["f:metadata"] = std::move(meta_changed);
  }
  if (!meta_removed.empty()) {
    removed.children["f:metadata"] = std::move(meta_removed);
  }
  diffObject(old != nullptr ? *old : empty, doc, root, changed, removed, service, skip_top);
  if (old == nullptr && type.resource == "nodes") {
    if (const JsonValue* status = member(doc, "status"); status != nullptr && status->IsObject()) {
      addAll(*status, childCtx(root, "status", false), status_changed.children["f:status"]);
    }
  }
  if (changed.empty() && removed.empty() && status_changed.empty()) {
    if (!entries.Empty()) {
      meta.AddMember("managedFields", entries, alloc);
    }
    return;
  }
  std::string now = formatTime(std::chrono::system_clock::now());
  std::string api_version = type.apiVersion();
  applyWrite(entries, changed, removed, manager, api_version, subresource, now, alloc);
  if (!status_changed.empty()) {
    applyWrite(entries, status_changed, PathTree{}, manager, api_version, "status", now, alloc);
  }
  if (!entries.Empty()) {
    sortEntries(entries, alloc);
    meta.AddMember("managedFields", entries, alloc);
  }
}

}  // namespace ccm::kubesim
