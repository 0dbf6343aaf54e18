// Logger implementation: formatting (klog text / JSON), redaction and the single write.
#include "host/log/log.hpp"

#include "host/log/json_string.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace ccm::log {
namespace {

struct State {
  std::atomic<int> verbosity{0};
  std::atomic<int> format{static_cast<int>(Format::Text)};
  std::atomic<int> fd{2};
  std::shared_mutex secrets_mu;
  std::vector<std::string> secrets;  // guarded by secrets_mu
  std::mutex sink_mu;
  std::function<void(std::string_view)> sink;  // guarded by sink_mu
  std::atomic<bool> has_sink{false};           // lets a line skip sink_mu when none is set
};

State& state() {
  static State* s = new State();  // never destroyed: logging works during exit
  return *s;
}

// The kernel's id of the calling thread, asked once per thread (klog prints it on every line).
long threadId() {
  thread_local const long tid = static_cast<long>(::syscall(SYS_gettid));
  return tid;
}

std::string_view baseName(std::string_view path) {
  auto pos = path.rfind('/');
  return pos == std::string_view::npos ? path : path.substr(pos + 1);
}

char severityLetter(Severity s) {
  switch (s) {
    case Severity::Info: return 'I';
    case Severity::Warning: return 'W';
    case Severity::Error: return 'E';
    case Severity::Fatal: return 'F';
  }
  return 'I';
}

}  // namespace

std::string Field::formatDuration(std::chrono::microseconds d) {
  double s = static_cast<double>(d.count()) / 1e6;
  if (d.count() % 1000000 == 0) {
    return fmt::format("{}s", d.count() / 1000000);
  }
  if (s >= 1.0) {
    return fmt::format("{:.3f}s", s);
  }
  return fmt::format("{:.3f}ms", static_cast<double>(d.count()) / 1e3);
}

void configure(const Config& config) {
  state().verbosity = config.verbosity;
  state().format = static_cast<int>(config.format);
  state().fd = config.fd;
}

Config currentConfig() {
  return Config{static_cast<Format>(state().format.load()), state().verbosity.load(),
                state().fd.load()};
}

bool enabled(int v) { return v <= state().verbosity.load(std::memory_order_relaxed); }

void registerSecret(std::string_view value) {
  if (value.size() < 4) {
    return;
  }
  std::unique_lock lock(state().secrets_mu);
  for (const auto& s : state().secrets) {
    if (s == value) {
      return;
    }
  }
  state().secrets.emplace_back(value);
}

namespace {

void redactInPlace(std::string& text) {
  std::shared_lock lock(state().secrets_mu);
  for (const auto& secret : state().secrets) {
    size_t pos = 0;
    while ((pos = text.find(secret, pos)) != std::string::npos) {
      text.replace(pos, secret.size(), "<redacted>");
      pos += 10;
    }
  }
}

}  // namespace

std::string redact(std::string_view text) {
  std::string out(text);
  redactInPlace(out);
  return out;
}

void setSinkForTest(std::function<void(std::string_view line)> sink) {
  std::lock_guard lock(state().sink_mu);
  state().has_sink.store(static_cast<bool>(sink), std::memory_order_release);
  state().sink = std::move(sink);
}

void write(Severity severity, int v, std::string_view message, FieldSpan fields,
           const Where& where) {
  auto now = std::chrono::system_clock::now();
  auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::string line;
  line.reserve(160);
  if (static_cast<Format>(state().format.load()) == Format::Json) {
    fmt::format_to(std::back_inserter(line), "{{\"ts\":{}.{:06d},\"caller\":", micros / 1000000,
                   micros % 1000000);
    json::appendString(line, fmt::format("{}:{}", baseName(where.file), where.line));
    line += ",\"msg\":";
    json::appendString(line, message);
    if (severity == Severity::Info) {
      fmt::format_to(std::back_inserter(line), ",\"v\":{}", v);
    } else {
      line += ",\"level\":";
      json::appendString(line, severity == Severity::Warning ? "warning" : "error");
    }
    for (const auto& f : fields) {
      line.push_back(',');
      json::appendString(line, f.key());
      line.push_back(':');
      if (f.quoted()) {
        json::appendString(line, f.value());
      } else {
        line += f.value();
      }
    }
    line += "}\n";
  } else {
    time_t secs = static_cast<time_t>(micros / 1000000);
    struct tm tm_utc {};
    gmtime_r(&secs, &tm_utc);
    fmt::format_to(std::back_inserter(line),
                   "{}{:02d}{:02d} {:02d}:{:02d}:{:02d}.{:06d} {:>7} {}:{}] ",
                   severityLetter(severity), tm_utc.tm_mon + 1, tm_utc.tm_mday, tm_utc.tm_hour,
                   tm_utc.tm_min, tm_utc.tm_sec, micros % 1000000, threadId(),
                   baseName(where.file), where.line);
    json::appendString(line, message);
    for (const auto& f : fields) {
      line.push_back(' ');
      line += f.key();
      line.push_back('=');
      if (f.quoted()) {
        json::appendString(line, f.value());
      } else {
        line += f.value();
      }
    }
    line.push_back('\n');
  }
  redactInPlace(line);
  if (state().has_sink.load(std::memory_order_acquire)) {
    std::lock_guard lock(state().sink_mu);
    if (state().sink) {
      state().sink(line);
      return;
    }
  }
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(state().fd.load(), p, left);
    if (n <= 0) {
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace ccm::log
