// File primitives of the fake cloud: reads, change stamps, and the flock between processes.
#include "plugins/fake-cloud/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace ccm::fakecloud {
namespace {

int openForLocking(const std::string& path) {
  return ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
}

}  // namespace

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<FileStamp> stampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return std::nullopt;
  }
  return FileStamp{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_size)};
}

bool createFile(const std::string& path) {
  int fd = openForLocking(path);
  if (fd < 0) {
    return false;
  }
  ::close(fd);
  return true;
}

FileLock::FileLock(const std::string& path) : fd_(openForLocking(path)) {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_EX);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace ccm::fakecloud
