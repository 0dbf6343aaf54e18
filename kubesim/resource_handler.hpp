// ResourceHandler: the REST semantics of stored resources — get, list (selectors, limit /
// continue paging, resourceVersion / resourceVersionMatch), watch (history replay, initial
// events, watch-list with the initial-events-end bookmark, bookmarks, timeouts, 410 as an
// ERROR event), create, update, patch (JSON, merge, strategic; 415 for apply), delete
// (preconditions, finalizers, propagation), deletecollection, and the /status subresource.
// Objects are answered whole, as a Table (reads) or as PartialObjectMetadata(List) per the
// negotiated format.
// Request decoding follows the API server: body size, content type, Go-style decode errors,
// unknown and duplicate fields per fieldValidation (Ignore/Warn/Strict), kind/apiVersion and
// namespace/name consistency with the URL.
//
// THREAD: handle() may be called from any thread.
#pragma once

#include <chrono>
#include <optional>

#include "kubesim/api_request.hpp"
#include "kubesim/object_store.hpp"
#include "kubesim/object_writer.hpp"
#include "kubesim/served_surface.hpp"

namespace ccm::kubesim {

class ResourceHandler {
 public:
  struct Options {
    std::chrono::milliseconds bookmark_interval{60000};
    std::chrono::seconds min_request_timeout{1800};
    size_t watch_queue_limit = 200000;
    bool watch_list = true;  // serve sendInitialEvents (false: reject it with 422)
    ServedSurface surface = ServedSurface::newest();  // the emulated version's API
  };

  ResourceHandler(ObjectStore& store, ObjectWriter& writer, Options options)
      : store_(store), writer_(writer), options_(options) {}

  HttpResponse handle(const ApiRequest& request);

 private:
  HttpResponse get(const ApiRequest& r);
  HttpResponse list(const ApiRequest& r);
  HttpResponse watch(const ApiRequest& r);
  HttpResponse create(const ApiRequest& r);
  HttpResponse update(const ApiRequest& r);
  HttpResponse patch(const ApiRequest& r);
  HttpResponse remove(const ApiRequest& r);
  HttpResponse removeNamespace(const ApiRequest& r);
  HttpResponse removeCollection(const ApiRequest& r);

  // The stored type behind a served type (events.k8s.io Events are stored as core Events).
  const ResourceType& storageType(const ResourceType& type) const;
  // The JSON clients of `type` see for a stored object.
  std::string view(const ResourceType& type, const StoredObject& obj) const;
  // The same in the request's negotiated format: the object, or its PartialObjectMetadata.
  std::string answer(const ApiRequest& r, const StoredObject& obj) const;
  // A list's kind and apiVersion members in the request's format ("kind":...,"apiVersion":...).
  static std::string listHead(const ApiRequest& r);
  HttpResponse objectResponse(const ApiRequest& r, unsigned status, const StoredObject& obj);

  ObjectStore& store_;
  ObjectWriter& writer_;
  const Options options_;
};

}  // namespace ccm::kubesim
