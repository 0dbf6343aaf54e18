// ProcessMetrics: reading the process's resource usage from Linux.
#include "host/server/process_metrics.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "host/log/log.hpp"

namespace ccm::server {
namespace {

metrics::Gauge* gauge(metrics::Registry& r, const char* name, const char* help) {
  auto* family = r.gauge(name, help);
  if (family == nullptr) {
    log::warning("Metric name already used with another type; not exported", {{"metric", name}});
    return nullptr;
  }
  return &family->noLabels();
}

// Field 22 of /proc/self/stat (starttime, in clock ticks after boot).
bool readStartTicks(unsigned long long* ticks) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) {
    return false;
  }
  // The command (field 2) is in parentheses and may contain spaces: continue after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return false;
  }
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) {
      return false;
    }
  }
  try {
    *ticks = std::stoull(field);
  } catch (...) {
    return false;
  }
  return true;
}

bool readBootTime(unsigned long long* btime) {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      return static_cast<bool>(in >> *btime);
    }
    in.ignore(1 << 20, '\n');
  }
  return false;
}

}  // namespace

double processStartTimeSeconds() {
  unsigned long long ticks = 0;
  unsigned long long btime = 0;
  long hz = sysconf(_SC_CLK_TCK);
  if (!readStartTicks(&ticks) || !readBootTime(&btime) || hz <= 0) {
    return 0;
  }
  return static_cast<double>(btime) + static_cast<double>(ticks) / static_cast<double>(hz);
}

ProcessMetrics::ProcessMetrics(metrics::Registry& registry) {
  if (auto* f = registry.counter("process_cpu_seconds_total",
                                 "Total user and system CPU time spent in seconds.")) {
    cpu_ = &f->noLabels();
  } else {
    log::warning("Metric name already used with another type; not exported",
                 {{"metric", "process_cpu_seconds_total"}});
  }
  resident_ = gauge(registry, "process_resident_memory_bytes", "Resident memory size in bytes.");
  virtual_ = gauge(registry, "process_virtual_memory_bytes", "Virtual memory size in bytes.");
  open_fds_ = gauge(registry, "process_open_fds", "Number of open file descriptors.");
  max_fds_ = gauge(registry, "process_max_fds", "Maximum number of open file descriptors.");
  start_time_ = gauge(registry, "process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.");
  if (start_time_ != nullptr) {
    start_time_->set(processStartTimeSeconds());
  }
  update();
}

void ProcessMetrics::update() {
  std::lock_guard lock(mu_);
  rusage usage{};
  if (cpu_ != nullptr && getrusage(RUSAGE_SELF, &usage) == 0) {
    auto seconds = [](const timeval& tv) {
      return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
    };
    double total = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    if (total > cpu_reported_) {
      cpu_->inc(total - cpu_reported_);
      cpu_reported_ = total;
    }
  }
  {
    std::ifstream statm("/proc/self/statm");
    unsigned long long size_pages = 0;
    unsigned long long resident_pages = 0;
    long page = sysconf(_SC_PAGESIZE);
    if (statm >> size_pages >> resident_pages && page > 0) {
      if (virtual_ != nullptr) {
        virtual_->set(static_cast<double>(size_pages * page));
      }
      if (resident_ != nullptr) {
        resident_->set(static_cast<double>(resident_pages * page));
      }
    }
  }
  if (open_fds_ != nullptr) {
    if (DIR* dir = opendir("/proc/self/fd")) {
      int count = 0;
      while (dirent* e = readdir(dir)) {
        if (e->d_name[0] != '.') {
          ++count;
        }
      }
      closedir(dir);
      open_fds_->set(count - 1);  // not the descriptor opendir just used
    }
  }
  rlimit limit{};
  if (max_fds_ != nullptr && getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    max_fds_->set(limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace ccm::server
