// Escaping and bounding of plugin text: the SDK's (ccm/plugin_text.hpp), shared with the fake
// host.
#include "host/plugin/plugin_text.hpp"

#include "ccm/output_checks.hpp"
#include "ccm/plugin_text.hpp"

namespace ccm::plugin {

size_t utf8Sequence(std::string_view text, size_t i, char32_t* cp) {
  return sdk::utf8Sequence(text, i, cp);
}

std::string safeText(std::string_view text, size_t max_bytes) {
  return sdk::safeText(text, max_bytes);
}

std::string checkPrintable(std::string_view field, std::string_view text, size_t max_bytes) {
  return sdk::checkPrintable(field, text, max_bytes);
}

}  // namespace ccm::plugin
