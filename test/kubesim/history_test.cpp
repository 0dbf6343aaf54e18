// Unit tests: the store's etcd-like history (compaction at a revision), the lagging watch
// cache behind resourceVersion=0 reads, etcd paging with selectors, and continue tokens.
#include <doctest/doctest.h>

#include "host/runtime/base64.hpp"
#include "kubesim/continue_token.hpp"
#include "kubesim/object_store.hpp"

namespace ccm::kubesim {
namespace {

using namespace std::string_literals;

const ResourceType& nodes() { return *ResourceRegistry::builtin().find("", "v1", "nodes"); }

PreparedObject node(std::string_view name, std::string_view label = "a") {
  std::string json = R"({"kind":"Node","apiVersion":"v1","metadata":{"name":")" +
                     std::string(name) + R"(","labels":{"l":")" + std::string(label) +
                     R"("}},"spec":{}})";
  JsonDocument doc;
  doc.Parse(json.c_str());
  REQUIRE_FALSE(doc.HasParseError());
  return prepareObject(nodes(), doc, doc.GetAllocator());
}

ObjectPtr put(ObjectStore& s, const ObjectPtr& expected, const PreparedObject& p) {
  auto r = s.put(nodes(), expected, p);
  REQUIRE(r.status == ObjectStore::CommitStatus::Ok);
  return r.object;
}

TEST_CASE("compactTo forgets the history up to a revision, no further") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  put(store, nullptr, node("a"));
  uint64_t mid = store.currentRv();
  put(store, nullptr, node("b"));
  store.compactTo(mid);
  CHECK(store.compactedRv(nodes()) == mid);
  ObjectStore::ListRequest at_mid;
  at_mid.at_rv = mid;
  CHECK(store.list(nodes(), at_mid).ok());  // the compaction point itself is readable
  ObjectStore::ListRequest before;
  before.at_rv = mid - 1;
  auto r = store.list(nodes(), before);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code() == 410);
  CHECK(r.error().message() == "The resourceVersion for the provided list is too old.");
  store.compactTo(mid - 1);  // never goes back
  CHECK(store.compactedRv(nodes()) == mid);
}

TEST_CASE("the watch cache trails writes by the lag; quorum reads do not") {
  ObjectStore::Options opts;
  opts.watch_cache_lag = std::chrono::hours(1);
  ObjectStore store(ResourceRegistry::builtin(), opts);
  auto a = put(store, nullptr, node("a"));
  put(store, a, node("a", "changed"));
  CHECK(store.getCached(nodes(), "", "a") == nullptr);  // created within the lag
  CHECK(store.get(nodes(), "", "a") != nullptr);
  ObjectStore::ListRequest cached;
  cached.from_cache = true;
  auto l = store.list(nodes(), cached);
  REQUIRE(l.ok());
  CHECK(l.value().items.empty());
  CHECK(l.value().rv == 0);

  ObjectStore fresh(ResourceRegistry::builtin(), {});
  auto b = put(fresh, nullptr, node("b"));
  CHECK(fresh.getCached(nodes(), "", "b") == b);
}

TEST_CASE("paging with a selector: a full page carries a token while more keys follow") {
  ObjectStore store(ResourceRegistry::builtin(), {});
  put(store, nullptr, node("a1", "x"));
  put(store, nullptr, node("a2", "x"));
  put(store, nullptr, node("b1", "y"));
  ObjectStore::ListRequest req;
  std::string err;
  req.labels = *LabelSelector::parse("l=x", &err);
  req.limit = 2;
  auto first = store.list(nodes(), req);
  REQUIRE(first.ok());
  CHECK(first.value().items.size() == 2);
  REQUIRE_FALSE(first.value().next_key.empty());
  req.start_key = first.value().next_key;
  auto last = store.list(nodes(), req);
  REQUIRE(last.ok());
  CHECK(last.value().items.empty());
  CHECK(last.value().next_key.empty());
}

TEST_CASE("continue tokens: the API server's encoding, strict decoding") {
  std::string token = encodeContinue(7, "ns", "ns/b\0"s);
  CHECK(token.find('=') == std::string::npos);
  std::string err;
  auto t = decodeContinue(token, "ns", &err);
  REQUIRE(t);
  CHECK(t->rv == 7);
  CHECK(t->start == "ns/b\0"s);
  CHECK(*base64Decode(token) == std::string(R"({"v":"meta.k8s.io/v1","rv":7,"start":"b\u0000"})"));

  CHECK_FALSE(decodeContinue("gQ", "", &err));
  CHECK(err == "continue key is not valid: invalid character '\\u0081' looking for beginning of "
               "value");
  CHECK_FALSE(decodeContinue(token + "=", "", &err));
  CHECK(err == "continue key is not valid: illegal base64 data at input byte " +
                   std::to_string(token.size()));
  CHECK_FALSE(decodeContinue("a", "", &err));
  CHECK(err == "continue key is not valid: illegal base64 data at input byte 0");
  CHECK_FALSE(decodeContinue(base64UrlEncode(R"({"v":"meta.k8s.io/v1","rv":1,"start":"a/../b"})"),
                             "", &err));
  CHECK(err == "continue key is not valid: a/../b");
  CHECK_FALSE(decodeContinue(base64UrlEncode("[]"), "", &err));
  CHECK(err == "continue key is not valid: json: cannot unmarshal array into Go value of type "
               "storage.continueToken");
}

}  // namespace
}  // namespace ccm::kubesim
