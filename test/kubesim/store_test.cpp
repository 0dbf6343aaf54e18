// Unit tests: ObjectStore commits, resourceVersions, history window, lists at an RV, paging,
// and watcher replay/filtering.
#include <doctest/doctest.h>

#include "kubesim/object_store.hpp"

namespace ccm::kubesim {
namespace {

const ResourceRegistry& reg() { return ResourceRegistry::builtin(); }
const ResourceType& nodes() { return *reg().find("", "v1", "nodes"); }
const ResourceType& leases() { return *reg().find("coordination.k8s.io", "v1", "leases"); }

PreparedObject prep(const ResourceType& type, std::string json) {
  JsonDocument doc;
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return prepareObject(type, doc, doc.GetAllocator());
}

std::string nodeJson(std::string_view name, std::string_view label = "a") {
  return R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" + std::string(name) +
         R"(","labels":{"l":")" + std::string(label) + R"("}},"spec":{}})";
}

ObjectPtr mustPut(ObjectStore& s, const ResourceType& t, const ObjectPtr& expected,
                  const PreparedObject& p) {
  auto r = s.put(t, expected, p);
  REQUIRE(r.status == ObjectStore::CommitStatus::Ok);
  return r.object;
}

std::string drainAll(Watcher& w) {
  std::string out;
  w.drain(out);
  return out;
}

TEST_CASE("commit assigns increasing RVs, splices them into JSON, detects stale and no-op") {
  ObjectStore store(reg(), {});
  auto a = mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n1")));
  CHECK(a->rv == 1);
  CHECK(a->json.find(R"("resourceVersion":"1")") != std::string::npos);
  CHECK(a->name == "n1");
  CHECK(findLabel(a->labels, "l") != nullptr);

  // Same content again: no-op, RV unchanged.
  auto noop = store.put(nodes(), a, prep(nodes(), nodeJson("n1")));
  CHECK(noop.status == ObjectStore::CommitStatus::NoOp);
  CHECK(store.currentRv() == 1);

  auto b = mustPut(store, nodes(), a, prep(nodes(), nodeJson("n1", "b")));
  CHECK(b->rv == 2);
  // A writer that read `a` is now stale.
  auto stale = store.put(nodes(), a, prep(nodes(), nodeJson("n1", "c")));
  CHECK(stale.status == ObjectStore::CommitStatus::Stale);
  CHECK(stale.object == b);
  // Creating an existing key is stale too.
  CHECK(store.put(nodes(), nullptr, prep(nodes(), nodeJson("n1"))).status ==
        ObjectStore::CommitStatus::Stale);

  auto del = store.remove(nodes(), b);
  REQUIRE(del.status == ObjectStore::CommitStatus::Ok);
  CHECK(del.object->rv == 3);
  CHECK(del.object->json.find(R"("resourceVersion":"3")") != std::string::npos);
  CHECK(store.get(nodes(), "", "n1") == nullptr);
}

TEST_CASE("stored metadata is in kube-apiserver's field order, unknown fields after") {
  ObjectStore store(reg(), {});
  auto a = mustPut(store, nodes(), nullptr,
                   prep(nodes(), R"({"kind":"Node","apiVersion":"v1","metadata":{"x-extra":1,)"
                                 R"("managedFields":[],"annotations":{"a":"b"},"labels":{},)"
                                 R"("creationTimestamp":"2026-01-01T00:00:00Z","uid":"u1",)"
                                 R"("name":"n1"},"spec":{}})"));
  CHECK(a->json ==
        R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","uid":"u1",)"
        R"("resourceVersion":"1","creationTimestamp":"2026-01-01T00:00:00Z","labels":{},)"
        R"("annotations":{"a":"b"},"managedFields":[],"x-extra":1},"spec":{}})");
}

TEST_CASE("lists: order, namespaces, paging, selectors, state at an older RV") {
  ObjectStore store(reg(), {});
  for (int i = 0; i < 10; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "n%02d", i);
    mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson(name, i % 2 ? "odd" : "even")));
  }
  auto all = store.list(nodes(), {});
  REQUIRE(all.ok());
  CHECK(all->items.size() == 10);
  CHECK(all->items.front()->name == "n00");
  CHECK(all->rv == 10);

  ObjectStore::ListRequest page;
  page.limit = 4;
  auto p1 = store.list(nodes(), page);
  REQUIRE(p1.ok());
  CHECK(p1->items.size() == 4);
  CHECK(p1->remaining == 6);
  REQUIRE_FALSE(p1->next_key.empty());

  // Changes after the first page do not leak into later pages at the same RV.
  auto n05 = store.get(nodes(), "", "n05");
  mustPut(store, nodes(), n05, prep(nodes(), nodeJson("n05", "changed")));
  store.remove(nodes(), store.get(nodes(), "", "n06"));
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n055")));

  page.start_key = p1->next_key;
  page.at_rv = p1->rv;
  auto p2 = store.list(nodes(), page);
  REQUIRE(p2.ok());
  CHECK(p2->rv == 10);
  REQUIRE(p2->items.size() == 4);
  CHECK(p2->items[0]->name == "n04");
  CHECK(p2->items[1]->name == "n05");
  CHECK(findLabel(p2->items[1]->labels, "l")->compare("odd") == 0);
  CHECK(p2->items[2]->name == "n06");

  // Latest state has the changes.
  auto latest = store.list(nodes(), {});
  CHECK(latest->items.size() == 10);

  std::string err;
  ObjectStore::ListRequest sel;
  sel.labels = *LabelSelector::parse("l=even", &err);
  CHECK(store.list(nodes(), sel)->items.size() == 4);  // n06 was deleted

  // After compaction an old RV is gone.
  store.compact();
  auto expired = store.list(nodes(), page);
  REQUIRE_FALSE(expired.ok());
  CHECK(expired.error().code() == 410);
  CHECK(expired.error().reason() == "Expired");
}

TEST_CASE("namespaced lists only see their namespace") {
  ObjectStore store(reg(), {});
  for (auto ns : {"a", "ab", "b"}) {
    mustPut(store, leases(), nullptr,
            prep(leases(), R"({"metadata":{"name":"x","namespace":")" + std::string(ns) +
                               R"("},"spec":{}})"));
  }
  ObjectStore::ListRequest req;
  req.ns = "a";
  auto r = store.list(leases(), req);
  REQUIRE(r.ok());
  REQUIRE(r->items.size() == 1);
  CHECK(r->items[0]->ns == "a");
  CHECK(store.count(leases(), "ab") == 1);
  CHECK(store.count(leases()) == 3);
}

TEST_CASE("watch replays history after an RV, filters, and expires") {
  ObjectStore store(reg(), ObjectStore::Options{4});
  auto n1 = mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n1", "x")));  // rv 1
  auto n2 = mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n2", "y")));  // rv 2

  std::string err;
  WatchFilter f;
  f.labels = *LabelSelector::parse("l=x", &err);
  auto w = std::make_shared<Watcher>(nodes(), f, std::make_unique<JsonWatchRenderer>(nodes()),
                                     100, true);
  REQUIRE(store.watch(w, ObjectStore::WatchMode::FromRv, 0).ok());
  std::string out = drainAll(*w);
  CHECK(out.find(R"("type":"ADDED")") != std::string::npos);
  CHECK(out.find(R"("name":"n1")") != std::string::npos);
  CHECK(out.find(R"("name":"n2")") == std::string::npos);

  // n1 stops matching -> DELETED at the new RV; n2 starts matching -> ADDED.
  auto n1b = mustPut(store, nodes(), n1, prep(nodes(), nodeJson("n1", "z")));
  auto n2b = mustPut(store, nodes(), n2, prep(nodes(), nodeJson("n2", "x")));
  out = drainAll(*w);
  auto del = out.find(R"({"type":"DELETED")");
  auto add = out.find(R"({"type":"ADDED")");
  REQUIRE(del != std::string::npos);
  REQUIRE(add != std::string::npos);
  CHECK(del < add);
  CHECK(out.find(R"("resourceVersion":")" + decimal(n1b->rv)) != std::string::npos);
  CHECK(out.back() == '\n');

  store.bookmark(*w);
  out = drainAll(*w);
  CHECK(out.find(R"({"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":")" +
                 decimal(n2b->rv)) != std::string::npos);

  // History window of 4: rv 1 has been pushed out after 5 events.
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n3")));
  auto w2 = std::make_shared<Watcher>(nodes(), WatchFilter{},
                                      std::make_unique<JsonWatchRenderer>(nodes()), 100, false);
  auto r = store.watch(w2, ObjectStore::WatchMode::FromRv, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == 410);
  CHECK(r.error().message() == "too old resource version: 0 (1)");
  // A future RV: registered, silent until the store passes it (as the watch cache).
  auto w3 = std::make_shared<Watcher>(nodes(), WatchFilter{},
                                      std::make_unique<JsonWatchRenderer>(nodes()), 100, false);
  const uint64_t ahead = store.currentRv() + 2;
  REQUIRE(store.watch(w3, ObjectStore::WatchMode::FromRv, ahead).ok());
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n4")));
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n5")));
  store.bookmark(*w3);
  CHECK(drainAll(*w3).empty());
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n6")));
  std::string after = drainAll(*w3);
  CHECK(after.find("\"n6\"") != std::string::npos);
  CHECK(after.find("\"n5\"") == std::string::npos);
  store.unregister(w3);

  CHECK(store.closeAllWatchers() == 1);
  std::string rest;
  CHECK_FALSE(w->drain(rest));
}

TEST_CASE("initial-state watch with the initial-events-end bookmark") {
  ObjectStore store(reg(), {});
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n1")));
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n2")));
  auto w = std::make_shared<Watcher>(nodes(), WatchFilter{},
                                     std::make_unique<JsonWatchRenderer>(nodes()), 100, true);
  REQUIRE(store.watch(w, ObjectStore::WatchMode::InitialStateWithBookmark, 0).ok());
  std::string out = drainAll(*w);
  auto b = out.find(R"("k8s.io/initial-events-end":"true")");
  REQUIRE(b != std::string::npos);
  CHECK(out.find(R"("name":"n2")") < b);
  CHECK(out.find(R"("resourceVersion":"2","creationTimestamp":null)") != std::string::npos);
}

TEST_CASE("slow watchers are cut off instead of growing without bound") {
  ObjectStore store(reg(), {});
  auto w = std::make_shared<Watcher>(nodes(), WatchFilter{},
                                     std::make_unique<JsonWatchRenderer>(nodes()), 3, false);
  REQUIRE(store.watch(w, ObjectStore::WatchMode::FromRv, 0).ok());
  for (int i = 0; i < 5; ++i) {
    mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n" + std::to_string(i))));
  }
  CHECK(w->overflowed());
  std::string out;
  CHECK_FALSE(w->drain(out));
}

TEST_CASE("snapshot and load keep objects and the counter, and forget history") {
  ObjectStore store(reg(), {});
  mustPut(store, nodes(), nullptr, prep(nodes(), nodeJson("n1")));
  mustPut(store, leases(), nullptr,
          prep(leases(), R"({"metadata":{"name":"l","namespace":"kube-system"}})"));
  auto snap = store.snapshot();
  CHECK(snap.objects.size() == 2);
  ObjectStore other(reg(), {});
  other.load(snap);
  CHECK(other.currentRv() == 2);
  CHECK(other.get(leases(), "kube-system", "l") != nullptr);
  CHECK(other.compactedRv(nodes()) == 2);
}

}  // namespace
}  // namespace ccm::kubesim
