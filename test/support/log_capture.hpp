// LogCapture: collects the host's log lines (text format, verbosity 2) for the lifetime of the
// object, for tests that check what an operator would read. One at a time per process.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

#include "host/log/log.hpp"

namespace ccm::testing {

class LogCapture {
 public:
  LogCapture() {
    log::configure({log::Format::Text, 10, 2});
    log::setSinkForTest([this](std::string_view line) {
      std::lock_guard lock(mu_);
      text_ += line;
    });
  }
  ~LogCapture() {
    log::setSinkForTest(nullptr);
    log::configure({});
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string get() {
    std::lock_guard lock(mu_);
    return text_;
  }
  // How many times `needle` occurs in what was logged so far.
  size_t count(std::string_view needle) {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (size_t at = text_.find(needle); at != std::string::npos;
         at = text_.find(needle, at + needle.size())) {
      ++n;
    }
    return n;
  }

 private:
  std::mutex mu_;
  std::string text_;
};

}  // namespace ccm::testing
