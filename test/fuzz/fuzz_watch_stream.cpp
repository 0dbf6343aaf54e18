// Fuzz target: the informers' stream decoding (host/kube/envelope_decoder.hpp with the Node
// and Service decoders), fed exactly the way host/kube/informer.cpp feeds them: a watch body
// of concatenated events parsed one event at a time (kParseStopWhenDoneFlag), or a list
// body. The first byte picks watch/list and Node/Service. Every decoded object is read in
// full and checked (test/fuzz/object_checks.hpp).
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "host/kube/api/api_status.hpp"
#include "host/kube/objects/envelope_decoder.hpp"
#include "host/kube/objects/node_decoder.hpp"
#include "host/kube/objects/service_decoder.hpp"
#include "test/fuzz/object_checks.hpp"

namespace {

// A RapidJSON input stream over a buffer that, like ResponseStream, answers '\0' at the end.
class BufferStream {
 public:
  using Ch = char;
  explicit BufferStream(std::string_view b) : b_(b) {}
  Ch Peek() const { return pos_ < b_.size() ? b_[pos_] : '\0'; }
  Ch Take() { return pos_ < b_.size() ? b_[pos_++] : '\0'; }
  size_t Tell() const { return pos_; }
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }
  // ResponseStream::atEnd: skips whitespace; true when no byte is left.
  bool atEnd() {
    while (true) {
      char c = Peek();
      if (c == '\0')
        return true;
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
        return false;
      Take();
    }
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

uint64_t touchObject(const ccm::kube::Node& n) {
  return ccm::fuzz::touchNode(n);
}
uint64_t touchObject(const ccm::kube::Service& s) {
  return ccm::fuzz::touchService(s);
}

template <typename Decoder>
void watch(std::string_view body) {
  Decoder decoder;
  BufferStream stream(body);
  ccm::kube::WatchEventHandler<Decoder> handler(decoder);
  rapidjson::Reader reader;
  int events = 0;
  while (!stream.atEnd() && events < 10000) {
    handler.reset();
    rapidjson::ParseResult ok = reader.Parse<rapidjson::kParseStopWhenDoneFlag>(stream, handler);
    if (!ok) {
      rapidjson::GetParseError_En(ok.Code());
      return;  // the informer relists
    }
    ++events;
    switch (handler.type) {
      case ccm::kube::WatchEventType::Added:
      case ccm::kube::WatchEventType::Modified:
      case ccm::kube::WatchEventType::Deleted:
        if (handler.has_object) {
          auto obj = decoder.finish();
          touchObject(*obj);
          ccm::fuzz::touch(obj->key());
        }
        break;
      case ccm::kube::WatchEventType::Bookmark:
        ccm::fuzz::touch(decoder.resourceVersion());
        break;
      case ccm::kube::WatchEventType::Error: {
        auto st = ccm::kube::ApiStatus::fromStatusObject(handler.status_code, handler.status_reason,
                                                         handler.status_message);
        ccm::fuzz::touch(st.toString());
        break;
      }
      case ccm::kube::WatchEventType::Unknown:
        break;
    }
  }
}

template <typename Decoder>
void list(std::string_view body) {
  Decoder decoder;
  BufferStream stream(body);
  size_t items = 0;
  ccm::kube::ListHandler<Decoder> handler(decoder, [&]() {
    ccm::fuzz::touch(decoder.key());
    ccm::fuzz::touch(decoder.resourceVersion());
    auto obj = decoder.finish();
    touchObject(*obj);
    ++items;
    return true;
  });
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = reader.Parse(stream, handler);
  if (ok) {
    ccm::fuzz::touch(handler.resource_version);
    ccm::fuzz::touch(handler.continue_token);
    ccm::fuzz::require(handler.items == items, "every list item reached the callback");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      watch<ccm::kube::NodeDecoder>(body);
      break;
    case 1:
      watch<ccm::kube::ServiceDecoder>(body);
      break;
    case 2:
      list<ccm::kube::NodeDecoder>(body);
      break;
    default:
      list<ccm::kube::ServiceDecoder>(body);
      break;
  }
  return 0;
}
