// Unit tests: ObjectTable (kubesim/object_table.hpp), the store's table with a hash index
// beside the ordered map: lookups, replacement, erase, and iteration in key order after
// random inserts and erases, checked against a plain std::map.
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kubesim/object_table.hpp"

namespace ccm::kubesim {
namespace {

// Every entry of table in iteration order.
std::vector<std::pair<std::string, int>> entries(const ObjectTable<int>& table) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [key, value] : table) {
    out.emplace_back(key, value);
  }
  return out;
}

std::vector<std::pair<std::string, int>> entries(const std::map<std::string, int>& model) {
  return {model.begin(), model.end()};
}

TEST_CASE("object table: find, replace, erase") {
  ObjectTable<int> t;
  CHECK(t.empty());
  CHECK(t.find("a") == nullptr);
  CHECK(t.insertOrAssign("kube-node-lease/node-00002", 2));
  CHECK(t.insertOrAssign("kube-node-lease/node-00001", 1));
  CHECK(t.insertOrAssign("node-00001", 10));
  CHECK(t.size() == 3);
  REQUIRE(t.find("kube-node-lease/node-00001") != nullptr);
  CHECK(*t.find("kube-node-lease/node-00001") == 1);
  CHECK(t.contains("node-00001"));
  CHECK_FALSE(t.contains("node-0000"));
  CHECK_FALSE(t.contains("node-000011"));

  // Replacing keeps the entry (and a pointer to it) and the size.
  int* slot = t.find("node-00001");
  CHECK_FALSE(t.insertOrAssign("node-00001", 11));
  CHECK(t.find("node-00001") == slot);
  CHECK(*slot == 11);
  *slot = 12;
  CHECK(*t.find("node-00001") == 12);
  CHECK(t.size() == 3);

  // A key built elsewhere (a view into another buffer) finds the same entry.
  std::string built = std::string("kube-node-lease") + "/" + "node-00002";
  CHECK(*t.find(std::string_view(built)) == 2);

  CHECK(t.erase("kube-node-lease/node-00001"));
  CHECK_FALSE(t.erase("kube-node-lease/node-00001"));
  CHECK(t.find("kube-node-lease/node-00001") == nullptr);
  CHECK(t.size() == 2);
  CHECK(entries(t) == std::vector<std::pair<std::string, int>>{
                          {"kube-node-lease/node-00002", 2}, {"node-00001", 12}});

  // Erased and inserted again: found again, in order.
  CHECK(t.insertOrAssign("kube-node-lease/node-00001", 3));
  CHECK(*t.find("kube-node-lease/node-00001") == 3);
  CHECK(t.begin()->first == "kube-node-lease/node-00001");

  t.clear();
  CHECK(t.empty());
  CHECK(t.find("node-00001") == nullptr);
  CHECK(t.begin() == t.end());
  CHECK(t.insertOrAssign("node-00001", 4));
  CHECK(*t.find("node-00001") == 4);
}

TEST_CASE("object table: lower bound in key order (namespace ranges, continue keys)") {
  ObjectTable<int> t;
  for (const char* key : {"b/x", "a/y", "a/x", "c/z", "a0", "b/w"}) {
    t.insertOrAssign(key, 0);
  }
  auto it = t.lowerBound("a/");
  REQUIRE(it != t.end());
  CHECK(it->first == "a/x");
  // ["b/", "b0") is namespace b's range ('0' follows '/').
  std::vector<std::string> in_b;
  for (auto i = t.lowerBound("b/"); i != t.lowerBound("b0"); ++i) {
    in_b.push_back(i->first);
  }
  CHECK(in_b == std::vector<std::string>{"b/w", "b/x"});
  // A continue key: the last key of a page and a NUL, so the page after starts past it.
  std::string next = "a/y";
  next.push_back('\0');
  CHECK(t.lowerBound(next)->first == "a0");
  CHECK(t.lowerBound("d") == t.end());
}

TEST_CASE("object table: random inserts and erases keep lookups and key order right") {
  std::mt19937 rng(29);
  ObjectTable<int> t;
  std::map<std::string, int> model;
  auto randomKey = [&] {
    // Few distinct keys, so inserts hit existing keys and erases hit present ones often.
    int n = std::uniform_int_distribution<int>(0, 499)(rng);
    return (n % 3 == 0 ? std::string() : "ns-" + std::to_string(n % 7) + "/") + "node-" +
           std::to_string(n);
  };
  for (int step = 0; step < 20000; ++step) {
    std::string key = randomKey();
    int op = std::uniform_int_distribution<int>(0, 9)(rng);
    if (op < 6) {
      bool inserted = model.find(key) == model.end();
      CHECK(t.insertOrAssign(key, step) == inserted);
      model[key] = step;
    } else if (op < 9) {
      CHECK(t.erase(key) == (model.erase(key) == 1));
    } else {
      const int* found = t.find(key);
      auto m = model.find(key);
      REQUIRE((found == nullptr) == (m == model.end()));
      if (found != nullptr) {
        CHECK(*found == m->second);
      }
    }
    if (step % 1000 == 999) {
      REQUIRE(t.size() == model.size());
      REQUIRE(entries(t) == entries(model));
      for (const auto& [k, v] : model) {
        const int* found = t.find(k);
        REQUIRE(found != nullptr);
        CHECK(*found == v);
      }
    }
  }
  CHECK(entries(t) == entries(model));
}

TEST_CASE("object table: a moved table keeps its index") {
  ObjectTable<std::shared_ptr<const std::string>> a;
  for (int i = 0; i < 100; ++i) {
    a.insertOrAssign("node-" + std::to_string(i), std::make_shared<const std::string>("v"));
  }
  ObjectTable<std::shared_ptr<const std::string>> b(std::move(a));
  CHECK(b.size() == 100);
  REQUIRE(b.find("node-42") != nullptr);
  CHECK(**b.find("node-42") == "v");
  CHECK(b.erase("node-42"));
  CHECK(b.find("node-42") == nullptr);
  CHECK(b.size() == 99);
}

}  // namespace
}  // namespace ccm::kubesim
