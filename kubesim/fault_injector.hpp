// FaultInjector: makes kubesim misbehave on purpose, for client robustness tests. Rules match
// requests by API verb (or HTTP method) and path glob ('*' matches anything, also '/'), fire
// a limited number of times and/or with a probability, and then add latency, answer with an
// error (500, 503, 429 with Retry-After — as a Status or as APF's plain text —, 409, 410,
// 504, ...), drop the connection, send GOAWAY on the request's HTTP/2 connection once it is
// answered (`goaway`; HTTP/1.1: `Connection: close`), or reset the request's stream instead of
// answering (`reset`: RST_STREAM INTERNAL_ERROR; a watch with `afterEvents=N` is reset after
// its first N events; HTTP/1.1 drops the connection). A global latency (with jitter) can be
// set as well.
// Admin requests (/admin/...) are never affected.
//
// Rules are written as JSON (admin API) or as "key=value,..." text (--fault flag):
//   verb=patch,path=/api/v1/nodes/*,status=503,count=3,retryAfter=2,probability=0.5
//   path=/api/v1/nodes,latency=200ms            action=drop,verb=watch
//
// THREAD: all methods may be called from any thread; mu_ guards the rules.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kubesim/http_types.hpp"
#include "kubesim/json_util.hpp"
#include "kubesim/request_info.hpp"

namespace ccm::kubesim {

struct FaultRule {
  int id = 0;
  std::string verb;  // "" / "*": any; an API verb (get, list, watch, patch, ...) or HTTP method
  std::string path = "*";
  enum class Action { Error, Latency, Drop, GoAway, Reset } action = Action::Error;
  int status = 500;
  int retry_after_seconds = 0;
  bool apf_style = false;  // 429 as plain text with the APF headers
  std::string message;
  std::chrono::milliseconds latency{0};
  int64_t after_events = 0;  // Reset on a watch: events (bookmarks too) sent first
  int64_t count = -1;        // times left to fire; -1 = unlimited
  double probability = 1.0;
  int64_t fired = 0;

  std::string toJson() const;
  // From the admin API's JSON object or the flag's text; *error on bad input.
  static std::optional<FaultRule> fromJson(const JsonValue& v, std::string* error);
  static std::optional<FaultRule> fromText(std::string_view text, std::string* error);
};

// A watch body that ends abruptly (StreamSource::resetAtEnd) after `events` events.
class ResetAfterEvents : public StreamSource {
 public:
  ResetAfterEvents(std::shared_ptr<StreamSource> inner, int64_t events);
  void start(const boost::asio::any_io_executor& strand) override;
  bool poll(std::string& out) override;
  void arm(std::function<void()> wake) override;
  void stop() override;
  bool resetAtEnd() const override { return tripped_; }

 private:
  std::shared_ptr<StreamSource> inner_;
  int64_t left_;
  bool tripped_ = false;
};

class FaultInjector {
 public:
  struct Decision {
    std::chrono::milliseconds delay{0};
    std::optional<HttpResponse> response;  // answer this instead of serving the request
    bool drop = false;                     // close the connection without answering
    bool goaway = false;                   // serve, then GOAWAY on the connection
    bool reset = false;                    // reset the stream (see reset_after_events)
    int64_t reset_after_events = -1;       // watches: after this many events; -1: at once
  };

  int add(FaultRule rule);
  bool remove(int id);
  void clear();
  std::vector<FaultRule> rules() const;
  void setLatency(std::chrono::milliseconds base, std::chrono::milliseconds jitter);

  // Decides what happens to a request (counts the rules that fire).
  Decision evaluate(std::string_view method, const RequestInfo& info);

  static bool globMatch(std::string_view pattern, std::string_view text);

 private:
  HttpResponse errorFor(const FaultRule& rule, const RequestInfo& info) const;

  mutable std::mutex mu_;
  std::vector<FaultRule> rules_;          // guarded by mu_
  int next_id_ = 1;                       // guarded by mu_
  std::chrono::milliseconds latency_{0};  // guarded by mu_
  std::chrono::milliseconds jitter_{0};   // guarded by mu_
};

}  // namespace ccm::kubesim
