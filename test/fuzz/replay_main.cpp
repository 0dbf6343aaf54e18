// The main() of a fuzz target when it is not built for libFuzzer: replays files (or every file
// in the given directories, recursively) through LLVMFuzzerTestOneInput once each. The normal
// test run uses it to replay the committed seed corpora and every input a fuzzer ever crashed
// on, under gcc and under the sanitizer build; `./dev fuzz` runs the real fuzzers (clang).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::filesystem::path> inputs(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(root)) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
        out.push_back(e.path());
      }
    }
  } else {
    out.push_back(root);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  size_t replayed = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      return 2;
    }
    for (const auto& path : inputs(argv[i])) {
      std::ifstream in(path, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
      // A copy of exactly the input's size, so a read past the end is caught by ASan.
      std::vector<uint8_t> copy(bytes.begin(), bytes.end());
      LLVMFuzzerTestOneInput(copy.data(), copy.size());
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "replay: no inputs\n");
    return 2;
  }
  std::fprintf(stderr, "replay: %zu inputs, no crash\n", replayed);
  return 0;
}
