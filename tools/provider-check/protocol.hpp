// What a check process tells the supervising ccm-provider-check process, one line per
// write(2) on a pipe (each shorter than PIPE_BUF, so lines from several threads never mix):
//   CALL <capability> <call>        a plugin call is about to start
//   PASS contract <name>: <detail>
//   FAIL contract <name>: <reason>
//   STOP                            the group ended normally (no more calls are coming)
// The supervisor prints PASS/FAIL lines as they come; when the process dies before STOP, it
// prints a FAIL line naming the last call (a crash in the plugin).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

namespace ccm::check {

class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}

  void call(std::string_view capability, std::string_view call) const;
  void pass(std::string_view contract, std::string_view detail) const;
  void fail(std::string_view contract, std::string_view reason) const;
  void stop() const;

  // The number of FAIL lines sent so far.
  int failures() const { return failures_.load(); }

 private:
  void send(std::string line) const;

  int fd_;
  mutable std::atomic<int> failures_{0};
};

// One line of plain text: control characters become spaces and anything past max_bytes is
// cut with "...".
std::string oneLine(std::string_view text, size_t max_bytes = 1000);

}  // namespace ccm::check
