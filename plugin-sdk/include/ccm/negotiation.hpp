// ccm/negotiation.hpp — the checks the host makes on the table a plugin's entry point returns
// and on each capability table it hands out (header-only). The host and the fake host
// (ccm/testing/fake_host.hpp) both run them, so a plugin the fake host negotiates with is one
// the host loads, and what it refuses carries the host's message.
//
// Each returns an empty string when the table is acceptable, else one sentence saying what is
// wrong (the caller adds which file or provider it came from).
//
// THREAD: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ccm/catalog.hpp"
#include "ccm/provider_abi.h"
#include "ccm/types.hpp"
#include "ccm/validation.hpp"

namespace ccm::sdk {
inline namespace v1 {

// The required part of ccm_plugin for ABI 1.0 ends with get_capability.
inline constexpr size_t kMinPluginTableSize = offsetof(ccm_plugin, get_capability) + sizeof(void*);

// Checks what an entry point returned with OK: a table long enough for ABI 1.0, of this
// major, of a minor the host offers (host_minor: the highest it offers), with create, destroy
// and get_capability set and name/version pointer/length pairs consistent. On success copies
// the table into *table (the plugin's fields, zero past its struct_size).
inline std::string checkPluginTable(const ccm_plugin* raw, uint32_t host_minor,
                                    ccm_plugin* table) {
  if (raw == nullptr) {
    return "its entry point returned OK but no ccm_plugin table";
  }
  if (raw->struct_size < kMinPluginTableSize) {
    return "its ccm_plugin struct_size is " + std::to_string(raw->struct_size) +
           " bytes, smaller than the " + std::to_string(kMinPluginTableSize) + " bytes ABI " +
           std::to_string(CCM_ABI_MAJOR) + ".0 requires";
  }
  ccm_plugin t = copyStruct(raw);
  std::string host_abi = std::to_string(CCM_ABI_MAJOR) + "." + std::to_string(host_minor);
  if (t.abi_major != CCM_ABI_MAJOR) {
    return "it speaks plugin ABI " + std::to_string(t.abi_major) + "." +
           std::to_string(t.abi_minor) + ", this host speaks ABI " + host_abi;
  }
  if (t.abi_minor > host_minor) {
    return "it chose ABI minor " + std::to_string(t.abi_minor) + " but this host offers at most " +
           host_abi;
  }
  for (auto [slot, present] : {std::pair{"create", t.create != nullptr},
                               std::pair{"destroy", t.destroy != nullptr},
                               std::pair{"get_capability", t.get_capability != nullptr}}) {
    if (!present) {
      return std::string("its required ccm_plugin.") + slot + " slot is NULL";
    }
  }
  for (auto [field, value] : {std::pair{"name", t.name}, std::pair{"version", t.version}}) {
    if (value.data == nullptr && value.size != 0) {
      return std::string("its ccm_plugin.") + field + " has data NULL with size " +
             std::to_string(value.size);
    }
  }
  *table = t;
  return {};
}

// What a plugin declared in ABI 1.1 (all empty for a 1.0 plugin).
struct PluginDeclarations {
  std::string provider_id_prefix;
  std::string annotation_domain;
  std::string metric_namespace;
};

// Reads the 1.1 declarations of a checked table (only from a plugin that chose minor 1 or
// later and whose struct covers them) into *declared and checks them (ccm/validation.hpp).
// The message: "provider <name> declares a malformed ccm_plugin.<problem>".
inline std::string checkDeclarations(const ccm_plugin& table, PluginDeclarations* declared) {
  PluginDeclarations d;
  ccm_plugin t = table;  // CCM_SDK_HAS_FIELD wants a value, not a reference
  if (t.abi_minor >= 1) {
    if (CCM_SDK_HAS_FIELD(t, provider_id_prefix)) {
      d.provider_id_prefix = std::string(view(t.provider_id_prefix));
    }
    if (CCM_SDK_HAS_FIELD(t, annotation_domain)) {
      d.annotation_domain = std::string(view(t.annotation_domain));
    }
    if (CCM_SDK_HAS_FIELD(t, metric_namespace)) {
      d.metric_namespace = std::string(view(t.metric_namespace));
    }
  }
  for (const std::string& problem :
       {checkProviderIdPrefix(d.provider_id_prefix), checkAnnotationDomain(d.annotation_domain),
        checkMetricNamespace(d.metric_namespace)}) {
    if (!problem.empty()) {
      return "provider " + std::string(view(table.name)) + " declares a malformed ccm_plugin." +
             problem;
    }
  }
  *declared = std::move(d);
  return {};
}

namespace detail {

struct Slot {
  std::string_view name;
  size_t offset;  // in bytes from the start of the table
  bool set;
};

template <typename Table, typename Fn>
Slot slot(const Table& t, std::string_view name, Fn Table::*member) {
  return Slot{name,
              static_cast<size_t>(reinterpret_cast<const char*>(&(t.*member)) -
                                  reinterpret_cast<const char*>(&t)),
              t.*member != nullptr};
}

}  // namespace detail

// The required function slots of capability table t, in order (from ccm/catalog.hpp).
template <typename Table>
std::vector<detail::Slot> requiredSlots(const Table& t) {
  std::vector<detail::Slot> out;
  catalog::forEachSlot<Table>([&](auto entry) {
    using Entry = decltype(entry);
    if constexpr (Entry::kRequired) {
      out.push_back(detail::slot(t, Entry::kName, Entry::kSlot));
    }
  });
  return out;
}

// Checks a capability table get_capability returned (not NULL): long enough for its header,
// and for every required slot, none of them NULL. On success copies it into *table. The
// message: "capability <id> has its required slot <name> set to NULL".
template <typename Table>
std::string checkCapabilityTable(std::string_view id, const Table* raw, Table* table) {
  if (raw->struct_size < sizeof(uint32_t) * 3) {
    return "capability " + std::string(id) + " has struct_size " +
           std::to_string(raw->struct_size) + ", too short";
  }
  Table t = copyStruct(raw);
  for (const detail::Slot& s : requiredSlots(t)) {
    if (s.offset + sizeof(void*) > t.struct_size) {
      return "capability " + std::string(id) + " struct_size " + std::to_string(t.struct_size) +
             " ends before its required slot " + std::string(s.name);
    }
    if (!s.set) {
      return "capability " + std::string(id) + " has its required slot " + std::string(s.name) +
             " set to NULL";
    }
  }
  *table = t;
  return {};
}

}  // namespace v1
}  // namespace ccm::sdk
