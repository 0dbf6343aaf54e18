#include "tools/provider-check/protocol.hpp"

#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace ccm::check {

std::string oneLine(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes + 3));
  for (char c : text) {
    if (out.size() >= max_bytes) {
      // Never leave half a UTF-8 sequence before the marker.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) {
        out.pop_back();
      }
      if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) {
        out.pop_back();
      }
      out += "...";
      return out;
    }
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7F) ? ' ' : c;
  }
  return out;
}

void Channel::send(std::string line) const {
  line += '\n';
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // the supervisor is gone: nothing left to tell
    }
    done += static_cast<size_t>(n);
  }
}

void Channel::call(std::string_view capability, std::string_view call) const {
  send(fmt::format("CALL {} {}", capability, call));
}

void Channel::pass(std::string_view contract, std::string_view detail) const {
  send(fmt::format("PASS contract {}: {}", oneLine(contract, 200), oneLine(detail)));
}

void Channel::fail(std::string_view contract, std::string_view reason) const {
  ++failures_;
  send(fmt::format("FAIL contract {}: {}", oneLine(contract, 200), oneLine(reason)));
}

void Channel::stop() const { send("STOP"); }

}  // namespace ccm::check
