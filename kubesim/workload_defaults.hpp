// Workload defaults: what the API server's defaulting functions fill in for the workload kinds
// kubesim stores without running their controllers — apps/v1 DaemonSets and Deployments,
// policy/v1 PodDisruptionBudgets — and for the pod specs inside them (and Pods): spec
// defaults, metadata.generation, an empty status as the registry strategies leave it on
// create. No controller ever fills those statuses in kubesim.
//
// THREAD: pure functions.
#pragma once

#include "kubesim/json_util.hpp"
#include "kubesim/resource_registry.hpp"

namespace ccm::kubesim {

// True for the kinds whose metadata.generation the API server keeps (1 on create, +1 on
// every spec change).
bool tracksGeneration(const ResourceType& type);

// A pod spec's defaults (SetDefaults_PodSpec and its containers, probes, volumes).
void defaultPodSpec(JsonValue& spec, JsonAllocator& alloc);

// Spec defaults of a DaemonSet, Deployment or PodDisruptionBudget (the template's pod spec
// too), applied to every create and update body as the API server decodes them.
void defaultWorkloadSpec(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc);

// On create of a DaemonSet, Deployment or PodDisruptionBudget: spec defaults (the template's
// pod spec too), generation 1, status as the strategy resets it. Other kinds: untouched.
void defaultWorkloadOnCreate(const ResourceType& type, JsonValue& doc, JsonAllocator& alloc);

}  // namespace ccm::kubesim
