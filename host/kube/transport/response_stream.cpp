// ResponseStream: pulling a response body from libcurl's multi interface on demand.
#include "host/kube/transport/response_stream.hpp"

#include <algorithm>
#include <cstring>

#include "host/kube/transport/curl_transfer.hpp"
#include "host/kube/transport/raw_skipper.hpp"
#include "host/kube/transport/rest_client.hpp"
#include "host/runtime/rate_limiter.hpp"

namespace ccm::kube {
namespace {

// At most this much body is buffered; libcurl is paused beyond it.
constexpr size_t kBufferLimit = size_t{256} * 1024;

}  // namespace

ResponseStream::ResponseStream(RestClient* owner, std::unique_ptr<detail::CurlTransfer> transfer,
                               std::stop_token stop, StreamOptions options)
    : owner_(owner),
      transfer_(std::move(transfer)),
      stop_(std::move(stop)),
      options_(std::move(options)) {
  multi_ = curl_multi_init();
  transfer_->begin(&buffer_, kBufferLimit, true);
  curl_multi_add_handle(multi_, transfer_->easy);
  CURLM* multi = multi_;
  stop_callback_.emplace(stop_, std::function<void()>([multi] { curl_multi_wakeup(multi); }));
  last_idle_call_ = std::chrono::steady_clock::now();
  if (options_.idle_interval.count() <= 0) {
    options_.idle_interval = std::chrono::milliseconds(1000);
  }
  options_.gather_max = std::max(options_.gather_max, options_.gather);
  gather_wait_ = options_.gather;
}

ResponseStream::~ResponseStream() {
  stop_callback_.reset();
  curl_multi_remove_handle(multi_, transfer_->easy);
  curl_multi_cleanup(multi_);
  transfer_->body = nullptr;
  if (done_ && result_ == CURLE_OK) {
    owner_->release(std::move(transfer_));
  } else {
    RestClient::destroy(std::move(transfer_));
  }
}

void ResponseStream::perform() {
  int running = 0;
  curl_multi_perform(multi_, &running);
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
    if (msg->msg == CURLMSG_DONE) {
      done_ = true;
      result_ = msg->data.result;
      curl_easy_getinfo(transfer_->easy, CURLINFO_RESPONSE_CODE, &http_code_);
      if (result_ == CURLE_OK) {
        end_state_ = End::Clean;
      } else {
        end_state_ = result_ == CURLE_OPERATION_TIMEDOUT ? End::TimedOut : End::Failed;
        error_ = transfer_->error[0] != '\0' ? std::string(transfer_->error)
                                             : std::string(curl_easy_strerror(result_));
      }
    }
  }
}

void ResponseStream::waitForActivity() {
  auto now = std::chrono::steady_clock::now();
  auto next_idle = last_idle_call_ + options_.idle_interval;
  if (now >= next_idle) {
    if (options_.on_idle) {
      options_.on_idle();
    }
    last_idle_call_ = now;
    next_idle = now + options_.idle_interval;
  }
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_idle - now);
  int ms = static_cast<int>(std::max<int64_t>(1, wait.count()));
  int numfds = 0;
  curl_multi_poll(multi_, nullptr, 0, ms, &numfds);
}

bool ResponseStream::open() {
  while (true) {
    if (stop_.stop_requested()) {
      end_state_ = End::Cancelled;
      return false;
    }
    perform();
    if (transfer_->headers_done) {
      curl_easy_getinfo(transfer_->easy, CURLINFO_RESPONSE_CODE, &http_code_);
      break;
    }
    if (done_) {
      if (result_ != CURLE_OK) {
        return false;
      }
      curl_easy_getinfo(transfer_->easy, CURLINFO_RESPONSE_CODE, &http_code_);
      break;
    }
    waitForActivity();
  }
  if (!buffer_.empty()) {
    pos_ = buffer_.data();
    end_ = pos_ + buffer_.size();
  }
  return true;
}

void ResponseStream::drain(size_t limit) {
  // Keep what was already received, then read to the end (storing at most `limit` bytes).
  std::string kept(pos_ == nullptr ? std::string_view() : std::string_view(pos_, end_ - pos_));
  buffer_.clear();
  transfer_->begin(&buffer_, limit, false);
  buffer_ = std::move(kept);
  if (transfer_->paused) {
    transfer_->paused = false;
  }
  curl_easy_pause(transfer_->easy, CURLPAUSE_CONT);
  while (!done_ && !stop_.stop_requested()) {
    perform();
    if (!done_) {
      waitForActivity();
    }
  }
  pos_ = end_ = nullptr;
}

bool ResponseStream::fill() {
  // Called once everything buffered has been read: readMore() keeps nothing and waits.
  if (readMore()) {
    return true;
  }
  if (!done_ && stop_.stop_requested()) {
    end_state_ = End::Cancelled;
    done_ = true;
    result_ = CURLE_ABORTED_BY_CALLBACK;
  }
  return false;
}

bool ResponseStream::readMore() {
  // Without a read position (before the first byte, after drain()) nothing is kept.
  buffer_.erase(0, pos_ == nullptr ? buffer_.size() : static_cast<size_t>(pos_ - buffer_.data()));
  size_t had = buffer_.size();
  if (transfer_->paused && had < kBufferLimit) {
    // There is room again: the held-back bytes are delivered right away (or it pauses again).
    transfer_->paused = false;
    curl_easy_pause(transfer_->easy, CURLPAUSE_CONT);
  }
  // Everything read so far is handled: let what comes meanwhile gather (StreamOptions::gather).
  bool gathered = had == 0 && options_.gather.count() > 0 && !done_ && !transfer_->paused;
  if (gathered) {
    sleepFor(gather_wait_, stop_);
  }
  bool waited = false;
  while (buffer_.size() == had && !done_ && !transfer_->paused && !stop_.stop_requested()) {
    perform();
    if (buffer_.size() > had) {
      break;
    }
    if (!done_) {
      waitForActivity();
      waited = true;
    }
  }
  if (gathered) {
    // Bytes were waiting after the gathering sleep: the burst goes on, wait longer next time
    // (up to gather_max). Nothing was: a quiet spell, back to the short wait.
    gather_wait_ = waited || buffer_.size() == had ? options_.gather
                                                   : std::min(options_.gather_max, 2 * gather_wait_);
  }
  pos_ = buffer_.data();
  end_ = pos_ + buffer_.size();
  if (buffer_.size() == had) {
    return false;
  }
  ++reads_;
  return true;
}

std::optional<std::string_view> ResponseStream::bufferLine() {
  size_t scanned = 0;
  while (true) {
    std::string_view have = buffered();
    if (have.size() > scanned) {
      if (const void* nl = std::memchr(have.data() + scanned, '\n', have.size() - scanned)) {
        return have.substr(0, static_cast<size_t>(static_cast<const char*>(nl) - have.data()));
      }
      scanned = have.size();
    }
    // No line end yet. Bytes ending in '}' may be a whole object whose newline has not come
    // (or never will): the caller reads it through the stream, which waits only if it is
    // incomplete. Otherwise the value is certainly incomplete and waiting here is the same.
    size_t last = have.find_last_not_of(" \t\r");
    if (last != std::string_view::npos && have[last] == '}') {
      return std::nullopt;
    }
    if (!readMore()) {
      return std::nullopt;
    }
  }
}

bool ResponseStream::atEnd() {
  while (true) {
    char c = Peek();
    if (c == '\0') {
      return true;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      Take();
      continue;
    }
    return false;
  }
}

bool ResponseStream::skipRaw(detail::RawSkipper& skipper, bool array) {
  skipper.start(array);
  while (true) {
    if (pos_ == end_ && !fill()) {
      return false;
    }
    size_t avail = static_cast<size_t>(end_ - pos_);
    size_t n = skipper.feed(pos_, avail);
    pos_ += n;
    consumed_ += n;
    if (n < avail) {
      return !skipper.failed();
    }
  }
}

}  // namespace ccm::kube
