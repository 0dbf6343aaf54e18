// Fuzz target: fake-cloud's configuration parser (plugins/fake-cloud/config.cpp): the provider
// config and the re-read cloud file. Bad input must be a ConfigError naming the key (the
// provider turns it into a refused configuration), never a crash or another exception — an
// exception escaping create() would be a contract violation, and one escaping the cloud-file
// reload would kill the host's worker.
#include <cstdint>
#include <string>
#include <string_view>

#include "plugins/fake-cloud/config.hpp"
#include "test/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (data[0] & 1) {
      ccm::fakecloud::World world =
          ccm::fakecloud::parseWorld(text, ccm::fakecloud::World{}, "cloud.yaml");
      ccm::fuzz::touch(world.region);
    } else {
      ccm::fakecloud::Config config = ccm::fakecloud::parseConfig(text);
      ccm::fuzz::touch(config.state_file);
    }
  } catch (const ccm::fakecloud::ConfigError& e) {
    ccm::fuzz::require(std::string_view(e.what()).size() > 0, "the error says something");
  }
  // Any other exception escapes and is reported by libFuzzer as a crash.
  return 0;
}
