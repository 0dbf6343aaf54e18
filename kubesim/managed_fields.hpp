// metadata.managedFields bookkeeping for Update operations (create, update, patch), as the API
// server's field manager keeps it: one entry per (manager, operation, subresource) with the set
// of fields that manager last set or changed, in the FieldsV1 format.
//
//  - a write's field set is the leaves it added or changed (compared with the stored object),
//    plus removed paths; the writer's entry gains what it set, every other entry loses what the
//    write changed or removed, empty entries are dropped;
//  - maps (labels, annotations, capacity, ...) and list items carry "." (the path itself);
//    lists that merge by key are keyed `k:{"type":"Ready"}`, lists of scalars that merge as sets
//    `v:"value"`, other lists and atomic maps are one leaf;
//  - managedFields sent by the client are kept when they are a valid list, `[]` resets them,
//    anything else (and every write to a subresource) keeps the stored ones;
//  - a Node's create attributes the status it carries to the creator's `status` entry, as a
//    registering kubelet's first status update does (the main resource never owns status).
//
// THREAD: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

// The longest field manager name the API server accepts (FieldManagerMaxLength).
constexpr size_t kFieldManagerMaxLength = 128;

// The manager the API server names after a User-Agent: the text before the first '/', without
// non-printable characters, cut to kFieldManagerMaxLength bytes.
std::string managerFromUserAgent(std::string_view user_agent);

// Updates doc's metadata.managedFields for a write by manager. old: the stored object the
// write replaces (nullptr on create); subresource: "" or "status".
void recordManagedFields(const ResourceType& type, JsonValue& doc, const JsonValue* old,
                         std::string_view manager, std::string_view subresource,
                         JsonAllocator& alloc);

}  // namespace ccm::kubesim
