// Http2Session: nghttp2 driven from the connection's strand.
#include "kubesim/http2_session.hpp"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <vector>

#include "host/log/log.hpp"
#include "kubesim/api_error.hpp"
#include "kubesim/http_connection.hpp"

namespace ccm::kubesim {

namespace net = boost::asio;
namespace beast = boost::beast;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(90);        // the API server's HTTP/2 idle
constexpr auto kGoAwayDeadline = std::chrono::seconds(5);      // then streams are cut
constexpr uint32_t kMaxHeaderListSize = 1048896;               // Go's default header limit
constexpr size_t kWriteBatch = size_t{256} * 1024;

bool connectionSpecific(const std::string& lname) {
  return lname == "connection" || lname == "keep-alive" || lname == "transfer-encoding" ||
         lname == "upgrade" || lname == "proxy-connection" || lname == "content-length";
}

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

nghttp2_nv header(const std::string& name, const std::string& value) {
  // nghttp2 copies names and values when the response is submitted.
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

struct Http2Session::H2Stream {
  int32_t id = 0;
  HttpRequest request;
  std::string method;
  std::string path;
  std::string authority;
  bool too_large = false;
  bool closed = false;
  // The answer: a body, or a streamed source.
  std::string body;
  size_t offset = 0;
  std::shared_ptr<StreamSource> source;
  std::string pending;
  size_t pending_offset = 0;
  bool source_done = false;
  bool armed = false;
  bool end_now = false;  // goAway(end_streams): end cleanly after what is pending
  bool counted_watch = false;
  bool goaway_after = false;  // GOAWAY once this stream is done (faults)
};

Http2Session::Http2Session(Stream& stream, HttpHandler& handler, const ConnectionLimits& limits,
                           CertificateIdentity identity, std::string peer, TransportStats& stats,
                           std::weak_ptr<void> owner, std::function<void()> on_closed)
    : stream_(stream),
      handler_(handler),
      limits_(limits),
      identity_(std::move(identity)),
      peer_(std::move(peer)),
      stats_(stats),
      owner_(std::move(owner)),
      on_closed_(std::move(on_closed)),
      idle_timer_(stream.get_executor()) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &Http2Session::onBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Http2Session::onHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Http2Session::onDataChunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Http2Session::onFrameRecv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Http2Session::onStreamClose);
  nghttp2_session_server_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);
  stats_.http2_connections_open.fetch_add(1);
}

Http2Session::~Http2Session() {
  abandon();
  nghttp2_session_del(session_);
}

void Http2Session::start() {
  std::array<nghttp2_settings_entry, 4> settings{{
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kMaxConcurrentStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, kMaxFrameSize},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, kMaxHeaderListSize},
  }};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                        kStreamWindow * static_cast<int32_t>(kMaxConcurrentStreams));
  flush();
  readMore();
  armIdleTimer();
}

void Http2Session::abandon() {
  if (finished_) {
    return;
  }
  finished_ = true;
  idle_timer_.cancel();
  for (auto& [id, st] : streams_) {
    if (st->source) {
      st->source->stop();
    }
    if (st->counted_watch) {
      stats_.http2_watch_streams_open.fetch_sub(1);
    }
    stats_.http2_streams_open.fetch_sub(1);
  }
  streams_.clear();
  stats_.http2_connections_open.fetch_sub(1);
}

void Http2Session::finish() {
  if (finished_) {
    return;
  }
  abandon();
  if (on_closed_) {
    on_closed_();
  }
}

void Http2Session::readMore() {
  if (finished_) {
    return;
  }
  stream_.async_read_some(
      net::buffer(in_), [keep = owner_.lock(), this](beast::error_code ec, size_t n) {
        if (finished_) {
          return;
        }
        if (ec) {
          finish();
          return;
        }
        in_recv_ = true;
        ssize_t used = nghttp2_session_mem_recv(session_, in_.data(), n);
        in_recv_ = false;
        if (used < 0) {
          ccm::log::infoV(4, "HTTP/2 protocol error",
                          {{"peer", peer_}, {"error", nghttp2_strerror(static_cast<int>(used))}});
          flush();
          finish();
          return;
        }
        flush();
        readMore();
      });
}

void Http2Session::flush() {
  if (writing_ || finished_ || in_recv_) {
    return;
  }
  out_.clear();
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      finish();
      return;
    }
    if (n == 0) {
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    if (out_.size() >= kWriteBatch) {
      break;
    }
  }
  if (out_.empty()) {
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      finish();
    }
    return;
  }
  writing_ = true;
  net::async_write(stream_, net::buffer(out_),
                   [keep = owner_.lock(), this](beast::error_code ec, size_t) {
                     writing_ = false;
                     if (finished_) {
                       return;
                     }
                     if (ec) {
                       finish();
                       return;
                     }
                     flush();
                   });
}

int Http2Session::onBeginHeaders(nghttp2_session* /*s*/, const nghttp2_frame* frame,
                                 void* user) {
  auto* self = static_cast<Http2Session*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
    return 0;
  }
  auto st = std::make_shared<H2Stream>();
  st->id = frame->hd.stream_id;
  self->streams_[st->id] = st;
  self->stats_.http2_streams_open.fetch_add(1);
  self->idle_timer_.cancel();
  return 0;
}

int Http2Session::onHeader(nghttp2_session* /*s*/, const nghttp2_frame* frame,
                           const uint8_t* name, size_t namelen, const uint8_t* value,
                           size_t valuelen, uint8_t /*flags*/, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  auto it = self->streams_.find(frame->hd.stream_id);
  if (it == self->streams_.end()) {
    return 0;
  }
  H2Stream& st = *it->second;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":method") {
    st.method = v;
  } else if (n == ":path") {
    st.path = v;
  } else if (n == ":authority") {
    st.authority = v;
  } else if (!n.empty() && n[0] != ':') {
    st.request.message.insert(beast::string_view(n.data(), n.size()),
                              beast::string_view(v.data(), v.size()));
  }
  return 0;
}

int Http2Session::onDataChunk(nghttp2_session* /*s*/, uint8_t /*flags*/, int32_t stream_id,
                              const uint8_t* data, size_t len, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end() || it->second->too_large) {
    return 0;
  }
  std::string& body = it->second->request.message.body();
  if (body.size() + len > self->limits_.max_body_bytes) {
    it->second->too_large = true;
    std::string().swap(body);
    return 0;
  }
  body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int Http2Session::onFrameRecv(nghttp2_session* /*s*/, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<Http2Session*>(user);
  if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
    return 0;
  }
  auto it = self->streams_.find(frame->hd.stream_id);
  if (it != self->streams_.end()) {
    self->dispatch(it->second);
  }
  return 0;
}

int Http2Session::onStreamClose(nghttp2_session* /*s*/, int32_t stream_id, uint32_t /*error*/,
                                void* user) {
  auto* self = static_cast<Http2Session*>(user);
  auto it = self->streams_.find(stream_id);
  if (it == self->streams_.end()) {
    return 0;
  }
  auto st = it->second;
  self->streams_.erase(it);
  st->closed = true;
  if (st->source) {
    st->source->stop();
  }
  if (st->counted_watch) {
    self->stats_.http2_watch_streams_open.fetch_sub(1);
  }
  self->stats_.http2_streams_open.fetch_sub(1);
  if (st->goaway_after) {
    self->submitGoAway();
  }
  if (self->streams_.empty() && !self->going_away_) {
    self->armIdleTimer();
  }
  return 0;
}

void Http2Session::dispatch(const std::shared_ptr<H2Stream>& st) {
  if (st->too_large) {
    ApiError e =
        ApiError::requestEntityTooLarge("limit is " + std::to_string(limits_.max_body_bytes));
    submitError(st, 413, e.toJson(), "application/json");
    return;
  }
  auto& msg = st->request.message;
  msg.method_string(st->method);
  msg.target(st->path);
  msg.version(11);
  if (!st->authority.empty() && msg.find(beast::http::field::host) == msg.end()) {
    msg.set(beast::http::field::host, st->authority);
  }
  st->request.certificate = identity_;
  st->request.peer = peer_;
  st->request.http2 = true;
  stats_.http2_streams.fetch_add(1);
  auto keep = owner_.lock();
  auto executor = stream_.get_executor();
  handler_.handle(st->request, [keep, this, st, executor](HttpResponse response) {
    net::dispatch(executor, [keep, this, st, response = std::move(response)]() mutable {
      respond(st, std::move(response));
    });
  });
}

void Http2Session::submitError(const std::shared_ptr<H2Stream>& st, unsigned status,
                               std::string body, const std::string& content_type) {
  HttpResponse r;
  r.status = status;
  r.content_type = content_type;
  r.body = std::move(body);
  respond(st, std::move(r));
}

void Http2Session::respond(const std::shared_ptr<H2Stream>& st, HttpResponse response) {
  if (finished_ || st->closed) {
    if (response.stream) {
      response.stream->stop();
    }
    return;
  }
  if (response.abort) {
    finish();
    return;
  }
  if (response.reset) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
    stats_.streams_reset.fetch_add(1);
    flush();
    return;
  }
  std::vector<std::pair<std::string, std::string>> fields;
  fields.emplace_back(":status", std::to_string(response.status));
  fields.emplace_back("content-type", response.content_type);
  bool cache_control_set = false;
  for (auto& [k, v] : response.headers) {
    std::string lname = lowered(k);
    if (connectionSpecific(lname)) {
      continue;
    }
    cache_control_set = cache_control_set || lname == "cache-control";
    fields.emplace_back(std::move(lname), v);
  }
  if (!cache_control_set) {
    fields.emplace_back("cache-control", "no-cache, private");
  }
  bool head = st->method == "HEAD";
  if (!response.stream) {
    fields.emplace_back("content-length", std::to_string(response.body.size()));
    st->body = head ? std::string() : std::move(response.body);
  }
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size());
  for (const auto& [k, v] : fields) {
    nva.push_back(header(k, v));
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = st.get();
  provider.read_callback = &Http2Session::readBody;
  bool has_data = response.stream != nullptr || !st->body.empty();
  if (response.stream) {
    st->source = std::move(response.stream);
    st->counted_watch = true;
    stats_.http2_watch_streams_open.fetch_add(1);
  }
  int rc = nghttp2_submit_response(session_, st->id, nva.data(), nva.size(),
                                   has_data ? &provider : nullptr);
  if (rc != 0) {
    ccm::log::infoV(4, "HTTP/2 response not submitted", {{"error", nghttp2_strerror(rc)}});
  } else if (st->source) {
    st->source->start(stream_.get_executor());
  }
  if (response.goaway) {
    st->goaway_after = true;  // after the answer, as Go's server does for `Connection: close`
  }
  if (response.close) {
    goAway(true);
    return;
  }
  flush();
}

ssize_t Http2Session::readBody(nghttp2_session* /*s*/, int32_t /*stream_id*/, uint8_t* buf,
                               size_t length, uint32_t* data_flags, nghttp2_data_source* source,
                               void* user) {
  auto* self = static_cast<Http2Session*>(user);
  return self->produce(*static_cast<H2Stream*>(source->ptr), buf, length, data_flags);
}

ssize_t Http2Session::produce(H2Stream& st, uint8_t* buf, size_t length, uint32_t* data_flags) {
  if (!st.source) {
    size_t n = std::min(length, st.body.size() - st.offset);
    std::copy_n(st.body.data() + st.offset, n, reinterpret_cast<char*>(buf));
    st.offset += n;
    if (st.offset == st.body.size()) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      std::string().swap(st.body);
    }
    return static_cast<ssize_t>(n);
  }
  if (st.pending_offset == st.pending.size()) {
    st.pending.clear();
    st.pending_offset = 0;
    // After goAway(end_streams) nothing more is taken from the source.
    if (st.end_now || (!st.source_done && !st.source->poll(st.pending))) {
      st.source_done = true;
    }
  }
  if (st.pending_offset < st.pending.size()) {
    size_t n = std::min(length, st.pending.size() - st.pending_offset);
    std::copy_n(st.pending.data() + st.pending_offset, n, reinterpret_cast<char*>(buf));
    st.pending_offset += n;
    return static_cast<ssize_t>(n);
  }
  if (st.source_done) {
    st.source->stop();
    if (st.source->resetAtEnd() && !st.end_now) {
      stats_.streams_reset.fetch_add(1);
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // RST_STREAM INTERNAL_ERROR
    }
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  if (!st.armed) {
    st.armed = true;
    std::weak_ptr<void> weak = owner_;
    int32_t id = st.id;
    auto executor = stream_.get_executor();
    st.source->arm([weak, this, id, executor] {
      net::post(executor, [weak, this, id] {
        auto keep = weak.lock();
        if (!keep || finished_) {
          return;
        }
        auto it = streams_.find(id);
        if (it == streams_.end()) {
          return;
        }
        it->second->armed = false;
        nghttp2_session_resume_data(session_, id);
        flush();
      });
    });
  }
  return NGHTTP2_ERR_DEFERRED;
}

void Http2Session::submitGoAway() {
  if (going_away_ || finished_) {
    return;
  }
  going_away_ = true;
  idle_timer_.cancel();
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
  stats_.goaways_sent.fetch_add(1);
}

void Http2Session::goAway(bool end_streams) {
  if (finished_) {
    return;
  }
  submitGoAway();
  if (end_streams) {
    for (auto& [id, st] : streams_) {
      if (st->source) {
        st->end_now = true;
        nghttp2_session_resume_data(session_, id);
      }
    }
    // Answers still being computed get a few seconds; then the connection goes.
    idle_timer_.expires_after(kGoAwayDeadline);
    idle_timer_.async_wait([keep = owner_.lock(), this](beast::error_code ec) {
      if (!ec && !finished_) {
        finish();
      }
    });
  }
  flush();
}

void Http2Session::resetStreams() {
  if (finished_) {
    return;
  }
  std::vector<int32_t> ids;
  for (auto& [id, st] : streams_) {
    if (st->source) {
      ids.push_back(id);
    }
  }
  for (int32_t id : ids) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
    stats_.streams_reset.fetch_add(1);
  }
  flush();
}

void Http2Session::armIdleTimer() {
  if (finished_ || going_away_) {
    return;
  }
  idle_timer_.expires_after(kIdleTimeout);
  idle_timer_.async_wait([keep = owner_.lock(), this](beast::error_code ec) {
    if (!ec && !finished_ && streams_.empty()) {
      goAway(true);
    }
  });
}

}  // namespace ccm::kubesim
