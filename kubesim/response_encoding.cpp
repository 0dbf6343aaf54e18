// gzip for large answers.
#include "kubesim/response_encoding.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace ccm::kubesim {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool acceptsGzip(std::string_view header) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view entry = header.substr(0, comma);
    size_t semi = entry.find(';');
    std::string_view coding = trimmed(entry.substr(0, semi));
    if (equalsIgnoreCase(coding, "gzip")) {
      if (semi == std::string_view::npos) {
        return true;
      }
      std::string_view param = trimmed(entry.substr(semi + 1));
      // "q=0" (or 0.0, 0.000) refuses it.
      bool refused = param.size() >= 3 && (param[0] == 'q' || param[0] == 'Q') &&
                     param[1] == '=' &&
                     param.substr(2).find_first_not_of("0.") == std::string_view::npos;
      return !refused;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    header.remove_prefix(comma + 1);
  }
  return false;
}

std::optional<std::string> gzipCompress(std::string_view data) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip wrapper; level 1 as the API server's gzip writer.
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return std::nullopt;
  }
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = out.size() - zs.avail_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return std::nullopt;
  }
  out.resize(produced);
  return out;
}

bool compressResponse(HttpResponse& response, std::string_view accept_encoding) {
  if (response.stream || response.abort || response.reset ||
      response.body.size() <= kGzipThresholdBytes || !acceptsGzip(accept_encoding)) {
    return false;
  }
  auto packed = gzipCompress(response.body);
  if (!packed) {
    return false;
  }
  response.body = std::move(*packed);
  response.headers.emplace_back("Content-Encoding", "gzip");
  response.headers.emplace_back("Vary", "Accept-Encoding");
  return true;
}

}  // namespace ccm::kubesim
