// Media type parsing and output negotiation.
#include "kubesim/media_type.hpp"

#include <algorithm>
#include <cctype>

#include "host/runtime/text.hpp"

namespace ccm::kubesim {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::string MediaType::param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

MediaType parseMediaType(std::string_view text) {
  MediaType mt;
  size_t semi = text.find(';');
  std::string_view essence = text::trimBlanks(text.substr(0, semi));
  size_t slash = essence.find('/');
  mt.type = lower(text::trimBlanks(essence.substr(0, slash)));
  mt.subtype = slash == std::string_view::npos ? "" : lower(text::trimBlanks(essence.substr(slash + 1)));
  while (semi != std::string_view::npos) {
    text = text.substr(semi + 1);
    semi = text.find(';');
    std::string_view p = text::trimBlanks(text.substr(0, semi));
    size_t eq = p.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    std::string v(text::trimBlanks(p.substr(eq + 1)));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
      v = v.substr(1, v.size() - 2);
    }
    mt.params[lower(text::trimBlanks(p.substr(0, eq)))] = v;
  }
  return mt;
}

std::vector<MediaType> parseAccept(std::string_view header) {
  std::vector<MediaType> out;
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view part = text::trimBlanks(header.substr(0, comma));
    if (!part.empty()) {
      out.push_back(parseMediaType(part));
    }
    if (comma == std::string_view::npos) {
      break;
    }
    header = header.substr(comma + 1);
  }
  return out;
}

OutputFormat negotiateOutput(std::string_view accept_header, bool table_ok, bool list) {
  if (text::trimBlanks(accept_header).empty()) {
    return OutputFormat::Json;
  }
  for (const auto& mt : parseAccept(accept_header)) {
    bool json_like = (mt.type == "application" && (mt.subtype == "json" || mt.subtype == "*")) ||
                     (mt.type == "*" && mt.subtype == "*");
    if (!json_like) {
      continue;
    }
    std::string as = mt.param("as");
    if (as.empty()) {
      return OutputFormat::Json;
    }
    bool meta_group =
        mt.param("g") == "meta.k8s.io" && (mt.param("v") == "v1" || mt.param("v") == "v1beta1");
    if (as == "Table" && table_ok && meta_group) {
      return OutputFormat::Table;
    }
    if (meta_group && as == (list ? "PartialObjectMetadataList" : "PartialObjectMetadata")) {
      return OutputFormat::PartialObjectMetadata;
    }
    // Other transformations are not offered: try the next one.
  }
  return OutputFormat::NotAcceptable;
}

}  // namespace ccm::kubesim
