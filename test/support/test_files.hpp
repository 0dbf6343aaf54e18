// Test helpers for doctest programs run by a wrapper script: a required environment
// variable (failing the test with the wrapper's name when unset) and a whole file's text.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ccm::testing {

inline std::string requiredEnv(const char* name, const char* runner) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, "run this test through ", runner, " (", name, " unset)");
  return v;
}

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ccm::testing
