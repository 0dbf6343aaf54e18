// Prints the SDK's capability catalog (ccm/catalog.hpp), one line per slot, for
// catalog_test.py to compare with ccm/provider_abi.h:
//   <table> <capability id> <slot name> <offset of the member it points to> <emit service>
//   <since minor> <required|optional>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

#include "ccm/catalog.hpp"
#include "ccm/output_checks.hpp"

namespace {

namespace catalog = ccm::sdk::catalog;

// The struct name each table has in the header.
template <typename Table>
constexpr std::string_view kTableName = "";
template <>
constexpr std::string_view kTableName<ccm_instances_v1> = "ccm_instances_v1";
template <>
constexpr std::string_view kTableName<ccm_instances_batch_v1> = "ccm_instances_batch_v1";
template <>
constexpr std::string_view kTableName<ccm_loadbalancer_v1> = "ccm_loadbalancer_v1";
template <>
constexpr std::string_view kTableName<ccm_routes_v1> = "ccm_routes_v1";

// The emit_* service a call of this output kind uses ("none": it emits nothing).
const char* emitService(ccm::sdk::OutputKind kind) {
  switch (kind) {
    case ccm::sdk::OutputKind::None:
      return "none";
    case ccm::sdk::OutputKind::Metadata:
      return "emit_instance_metadata";
    case ccm::sdk::OutputKind::LbStatus:
      return "emit_lb_status";
    case ccm::sdk::OutputKind::Routes:
      return "emit_route";
    case ccm::sdk::OutputKind::String:
      return "emit_string";
  }
  return "?";
}

template <typename Table, typename Fn>
size_t offsetOf(Fn Table::*member) {
  Table t{};
  return static_cast<size_t>(reinterpret_cast<const char*>(&(t.*member)) -
                             reinterpret_cast<const char*>(&t));
}

}  // namespace

int main() {
  catalog::forEachCapability([](auto table) {
    using Table = decltype(table);
    static_assert(!kTableName<Table>.empty(), "catalog_dump.cpp lacks this table's name");
    catalog::forEachSlot<Table>([](auto slot) {
      using Slot = decltype(slot);
      std::printf("%s %s %s %zu %s %u %s\n", std::string(kTableName<Table>).c_str(),
                  std::string(catalog::Capability<Table>::kId).c_str(),
                  std::string(Slot::kName).c_str(), offsetOf(Slot::kSlot),
                  emitService(Slot::kOutput), static_cast<unsigned>(Slot::kSinceMinor),
                  Slot::kRequired ? "required" : "optional");
    });
  });
  return 0;
}
