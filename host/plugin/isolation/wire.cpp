#include "host/plugin/isolation/wire.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ccm::plugin::isolation {

void Writer::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    u8(static_cast<uint8_t>(v >> (8 * i)));
  }
}

void Writer::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    u8(static_cast<uint8_t>(v >> (8 * i)));
  }
}

void Writer::str(std::string_view v) {
  u32(static_cast<uint32_t>(v.size()));
  if (counting_) {
    counted_ += v.size();
  } else {
    out_.append(v);
  }
}

void Writer::status(const Status& s) {
  i32(static_cast<int32_t>(s.code()));
  str(s.message());
  u64(static_cast<uint64_t>(s.retryAfter().count()));
}

void Reader::fail(std::string_view why) {
  if (error_.empty()) {
    error_ = fmt::format("{} at byte {} of {}", why, at_, in_.size());
  }
}

uint8_t Reader::u8() {
  if (!ok()) {
    return 0;
  }
  if (at_ >= in_.size()) {
    fail("message ends early");
    return 0;
  }
  return static_cast<uint8_t>(in_[at_++]);
}

uint32_t Reader::u32() {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(u8()) << (8 * i);
  }
  return v;
}

uint64_t Reader::u64() {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(u8()) << (8 * i);
  }
  return v;
}

bool Reader::boolean() {
  uint8_t v = u8();
  if (v > 1) {
    fail(fmt::format("boolean of {}", v));
    return false;
  }
  return v == 1;
}

std::string_view Reader::str() {
  uint32_t n = u32();
  if (!ok()) {
    return {};
  }
  if (n > in_.size() - at_) {
    fail(fmt::format("string of {} bytes with {} left", n, in_.size() - at_));
    return {};
  }
  std::string_view v = in_.substr(at_, n);
  at_ += n;
  return v;
}

uint32_t Reader::count(size_t min_item_size) {
  uint32_t n = u32();
  if (!ok()) {
    return 0;
  }
  size_t left = in_.size() - at_;
  if (min_item_size > 0 && n > left / min_item_size) {
    fail(fmt::format("list of {} items with {} bytes left", n, left));
    return 0;
  }
  return n;
}

Status Reader::status() {
  int32_t code = i32();
  std::string message(str());
  uint64_t retry_ms = u64();
  if (!ok()) {
    return Status(Code::Internal, "malformed status");
  }
  if (retry_ms > uint64_t{24} * 3600 * 1000) {
    fail("retry-after over a day");
    return Status(Code::Internal, "malformed status");
  }
  Code c = codeFromInt(code);
  if (c == Code::Ok) {
    return okStatus();
  }
  return Status(c, std::move(message), std::chrono::milliseconds(retry_ms));
}

Status Reader::finish() const {
  if (!ok()) {
    return Status(Code::InvalidArgument, "malformed message: " + error_);
  }
  if (at_ != in_.size()) {
    return Status(Code::InvalidArgument,
                  fmt::format("malformed message: {} bytes left over", in_.size() - at_));
  }
  return okStatus();
}

namespace {

// Reads exactly size bytes; false on end of stream or error (errno_out says which).
bool readAll(int fd, char* data, size_t size, int* errno_out) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      *errno_out = n < 0 ? errno : 0;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

Status closedStatus(int err, bool mid_frame) {
  std::string what = err != 0 ? std::strerror(err) : "end of stream";
  return Status(Code::Unavailable, fmt::format("connection to the provider process lost ({}{})",
                                               what, mid_frame ? " in the middle of a frame" : ""));
}

}  // namespace

StatusOr<std::string> readFrame(int fd) {
  std::array<char, 4> header{};
  int err = 0;
  if (!readAll(fd, header.data(), header.size(), &err)) {
    return closedStatus(err, false);
  }
  uint32_t size = 0;
  for (int i = 0; i < 4; ++i) {
    size |= static_cast<uint32_t>(static_cast<uint8_t>(header[i])) << (8 * i);
  }
  if (size == 0 || size > kMaxFrame) {
    return Status(Code::InvalidArgument,
                  fmt::format("frame of {} bytes refused (1 to {} allowed)", size, kMaxFrame));
  }
  std::string payload(size, '\0');
  if (!readAll(fd, payload.data(), payload.size(), &err)) {
    return closedStatus(err, true);
  }
  return payload;
}

Status writeFrame(int fd, std::string_view payload, std::chrono::milliseconds bound,
                  std::string_view tail) {
  const size_t frame = payload.size() + tail.size();
  if (payload.empty() || frame > kMaxFrame) {
    return Status(Code::InvalidArgument,
                  fmt::format("frame of {} bytes not sent (1 to {} allowed)", frame, kMaxFrame));
  }
  // The length header, the payload and the tail go out from their own buffers (one sendmsg
  // with up to three pieces): a load-balancer call's frame holds every host, and a copy of it
  // behind a header would double what each call in flight keeps.
  std::array<char, 4> header{};
  auto size = static_cast<uint32_t>(frame);
  for (size_t i = 0; i < header.size(); ++i) {
    header[i] = static_cast<char>(static_cast<uint8_t>(size >> (8 * i)));
  }
  const std::array<std::string_view, 3> parts{std::string_view(header.data(), header.size()),
                                              payload, tail};
  const size_t total = header.size() + frame;
  const bool bounded = bound.count() > 0;
  const auto give_up = std::chrono::steady_clock::now() + bound;
  size_t done = 0;
  while (done < total) {
    std::array<iovec, 3> pieces{};
    size_t count = 0;
    size_t skip = done;  // bytes already sent, counted from the first part
    for (std::string_view part : parts) {
      if (skip >= part.size()) {
        skip -= part.size();
        continue;
      }
      // sendmsg does not write through iov_base; the cast only fits the C struct.
      pieces[count++] = {const_cast<char*>(part.data()) + skip,  // NOLINT
                         part.size() - skip};
      skip = 0;
    }
    msghdr msg{};
    msg.msg_iov = pieces.data();
    msg.msg_iovlen = count;
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | (bounded ? MSG_DONTWAIT : 0));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && bounded && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return Status(Code::DeadlineExceeded,
                      fmt::format("the provider process took {} of {} bytes within {}ms",
                                  done, total, bound.count()));
      }
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 60000)));
      continue;
    }
    if (n < 0) {
      return closedStatus(errno, done > 0);
    }
    done += static_cast<size_t>(n);
  }
  return okStatus();
}

std::optional<FrameKind> frameKind(std::string_view payload) {
  if (payload.empty()) {
    return std::nullopt;
  }
  auto k = static_cast<uint8_t>(payload[0]);
  if (k < static_cast<uint8_t>(FrameKind::Create) || k > static_cast<uint8_t>(FrameKind::Metrics)) {
    return std::nullopt;
  }
  return static_cast<FrameKind>(k);
}

}  // namespace ccm::plugin::isolation
