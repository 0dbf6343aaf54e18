// Logger: klog text format, JSON format, verbosity, secret redaction.
#include <doctest/doctest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "host/log/json_string.hpp"
#include "host/log/log.hpp"

using namespace ccm;

namespace {
struct Capture {
  std::vector<std::string> lines;
  explicit Capture(log::Format format, int v = 0) {
    log::configure({format, v, 2});
    log::setSinkForTest([this](std::string_view l) { lines.emplace_back(l); });
  }
  ~Capture() {
    log::setSinkForTest(nullptr);
    log::configure({});
  }
};
}  // namespace

TEST_CASE("klog text format with structured fields") {
  Capture cap(log::Format::Text);
  log::info("Initializing node", {{"node", "node-1"}, {"attempt", 3}, {"ok", true}});
  const int info_line = __LINE__ - 1;
  log::warning("Slow", {{"elapsed", std::chrono::milliseconds(1500)}});
  log::error("Quoted \"text\"\nnext");
  REQUIRE(cap.lines.size() == 3);
  const std::string& l = cap.lines[0];
  CHECK(l[0] == 'I');
  // The caller's file and line, not the logger's.
  CHECK(l.find(" log_test.cpp:" + std::to_string(info_line) + "] ") != std::string::npos);
  CHECK(cap.lines[1].find(" log_test.cpp:" + std::to_string(info_line + 2) + "] ") !=
        std::string::npos);
  CHECK(l.find("] \"Initializing node\" node=\"node-1\" attempt=3 ok=true\n") !=
        std::string::npos);
  CHECK(cap.lines[1][0] == 'W');
  CHECK(cap.lines[1].find("elapsed=\"1.500s\"") != std::string::npos);
  CHECK(cap.lines[2][0] == 'E');
  CHECK(cap.lines[2].find("\"Quoted \\\"text\\\"\\nnext\"") != std::string::npos);
}

TEST_CASE("each klog line carries the id of the thread that wrote it") {
  Capture cap(log::Format::Text);
  auto idOf = [](const std::string& line) {
    // "I1122 07:16:04.854805    9180 file.cpp:12] ...": the third field.
    std::istringstream in(line);
    std::string date, time;
    long id = -1;
    in >> date >> time >> id;
    return id;
  };
  const long main_tid = static_cast<long>(::syscall(SYS_gettid));
  long other_tid = 0;
  log::info("from the test thread");
  std::thread([&] {
    other_tid = static_cast<long>(::syscall(SYS_gettid));
    log::info("from another thread");
    log::info("again from it");
  }).join();
  log::info("from the test thread again");
  REQUIRE(cap.lines.size() == 4);
  CHECK(idOf(cap.lines[0]) == main_tid);
  CHECK(idOf(cap.lines[1]) == other_tid);
  CHECK(idOf(cap.lines[2]) == other_tid);
  CHECK(idOf(cap.lines[3]) == main_tid);
  CHECK(main_tid != other_tid);
}

TEST_CASE("JSON format") {
  Capture cap(log::Format::Json, 2);
  log::infoV(2, "Synced", {{"node", "n1"}, {"count", 7}});
  log::error("Failed", {{"err", "boom"}});
  REQUIRE(cap.lines.size() == 2);
  CHECK(cap.lines[0].find("{\"ts\":") == 0);
  CHECK(cap.lines[0].find("\"msg\":\"Synced\",\"v\":2,\"node\":\"n1\",\"count\":7}") !=
        std::string::npos);
  CHECK(cap.lines[1].find("\"level\":\"error\",\"err\":\"boom\"") != std::string::npos);
}

TEST_CASE("verbosity gates infoV") {
  Capture cap(log::Format::Text, 1);
  log::infoV(1, "shown");
  log::infoV(2, "hidden");
  CHECK(cap.lines.size() == 1);
  CHECK(log::enabled(1));
  CHECK_FALSE(log::enabled(2));
}

TEST_CASE("registered secrets never reach a line") {
  Capture cap(log::Format::Text);
  log::registerSecret("s3cr3t-password");
  log::registerSecret("abc");  // too short to redact safely: ignored
  log::info("auth", {{"body", "{\"password\":\"s3cr3t-password\"}"}});
  log::info("s3cr3t-password in the message too");
  REQUIRE(cap.lines.size() == 2);
  for (const auto& l : cap.lines) {
    CHECK(l.find("s3cr3t-password") == std::string::npos);
    CHECK(l.find("<redacted>") != std::string::npos);
  }
  CHECK(log::redact("x s3cr3t-password y") == "x <redacted> y");
  CHECK(log::redact("abc") == "abc");
}

TEST_CASE("JSON string literals escape quotes, backslashes and control characters only") {
  CHECK(ccm::json::quoted("") == "\"\"");
  CHECK(ccm::json::quoted("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(ccm::json::quoted("\n\r\t\b\f") == "\"\\n\\r\\t\\b\\f\"");
  CHECK(ccm::json::quoted(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(ccm::json::quoted(std::string("nul\0!", 5)) == "\"nul\\u0000!\"");
  CHECK(ccm::json::quoted("zone é, 東京") == "\"zone é, 東京\"");  // UTF-8 as it is
  std::string out = "x=";
  ccm::json::appendString(out, "y");
  CHECK(out == "x=\"y\"");
}
