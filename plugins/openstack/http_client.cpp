// HttpClient over libcurl.
#include "plugins/openstack/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>

#include "plugins/openstack/text.hpp"

namespace ccm::openstack {
namespace {

constexpr size_t kMaxIdleHandles = 16;

size_t onBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

size_t onHeader(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<std::vector<std::pair<std::string, std::string>>*>(user);
  std::string_view line(data, size * count);
  if (startsWith(line, "HTTP/")) {
    headers->clear();  // a new response (after 100-continue)
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    headers->emplace_back(toLower(trim(line.substr(0, colon))),
                          std::string(trim(line.substr(colon + 1))));
  }
  return size * count;
}

struct Progress {
  const std::function<bool()>* cancelled;
  std::chrono::steady_clock::time_point last_check;
};

int onProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* p = static_cast<Progress*>(user);
  if (p->cancelled == nullptr || !*p->cancelled) {
    return 0;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - p->last_check < std::chrono::milliseconds(100)) {
    return 0;
  }
  p->last_check = now;
  return (*p->cancelled)() ? 1 : 0;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  for (const auto& [k, v] : headers) {
    if (k == lower_name) {
      return v;
    }
  }
  return {};
}

HttpClient::HttpClient(TlsOptions tls, std::string user_agent)
    : tls_(std::move(tls)), user_agent_(std::move(user_agent)) {}

HttpClient::~HttpClient() {
  for (void* h : idle_) {
    curl_easy_cleanup(static_cast<CURL*>(h));
  }
}

void* HttpClient::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void HttpClient::release(void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kMaxIdleHandles) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

sdk::Result<HttpResponse> HttpClient::send(const HttpRequest& request) {
  CURL* curl = static_cast<CURL*>(acquire());
  if (curl == nullptr) {
    return sdk::Status(CCM_STATUS_INTERNAL, "curl_easy_init failed");
  }
  curl_easy_reset(curl);

  HttpResponse response;
  char error_buf[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    std::string line = k;
    line += ": ";
    line += v;
    headers = curl_slist_append(headers, line.c_str());
  }
  // libcurl adds "Expect: 100-continue" to large bodies; OpenStack services do not need it.
  headers = curl_slist_append(headers, "Expect:");
  Progress progress{request.cancelled ? &request.cancelled : nullptr, {}};

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buf);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, user_agent_.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response.headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(std::max<int64_t>(1, request.timeout.count())));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::clamp<int64_t>(request.timeout.count(), 1, 10000)));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, onProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &progress);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (request.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
  }
  if (!tls_.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, tls_.ca_file.c_str());
  }
  if (!tls_.cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, tls_.cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, tls_.key_file.c_str());
  }
  if (tls_.insecure) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  // Drop the pointers into this stack frame before the handle goes back to the pool.
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  release(curl);

  if (rc != CURLE_OK) {
    std::string detail = error_buf[0] != '\0' ? error_buf : curl_easy_strerror(rc);
    std::string what = request.method + " " + request.url + ": " + detail;
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return sdk::Status(CCM_STATUS_DEADLINE_EXCEEDED, what);
      case CURLE_ABORTED_BY_CALLBACK:
        return sdk::Status(CCM_STATUS_CANCELLED, what);
      default:
        return sdk::Status(CCM_STATUS_UNAVAILABLE, what);
    }
  }
  response.status = status;
  return response;
}

}  // namespace ccm::openstack
