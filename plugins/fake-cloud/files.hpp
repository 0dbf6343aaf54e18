// File primitives under the fake cloud's two files, the cloud file and the state file: whole
// reads, the stamp that tells whether a file changed, and an exclusive lock between processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ccm::fakecloud {

// The whole content of a file; nothing when it cannot be read.
std::optional<std::string> readFile(const std::string& path);

// What tells a rewritten file from the one read before.
struct FileStamp {
  int64_t mtime_ns = -1;  // modification time, nanoseconds since the epoch
  int64_t size = -1;
  bool operator==(const FileStamp&) const = default;
};

// The file's stamp; nothing when it does not exist (or cannot be examined).
std::optional<FileStamp> stampOf(const std::string& path);

// Creates the file when it does not exist yet; false when that is not possible.
bool createFile(const std::string& path);

// An exclusive flock on a file (created when missing), held for the object's lifetime. When
// the file cannot be opened the object holds nothing: the caller goes on unlocked.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace ccm::fakecloud
