// ServerOptions: everything the secure port is configured with — the upstream flags
// (--bind-address, --secure-port, --cert-dir, --tls-*, --authorization-always-allow-paths,
// the webhook cache TTLs) plus limits that are not flags. serverOptionsFrom() fills it from
// the parsed command line.
//
// THREAD: a plain value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "host/options/options.hpp"
#include "host/server/build_info.hpp"
#include "host/server/client_certificates.hpp"

namespace ccm::server {

struct ServerOptions {
  // --bind-address / --secure-port. Port 0 means "do not serve" (as upstream), unless
  // pick_free_port is set: then the kernel picks a free port (tests; see port()).
  std::string bind_address = "0.0.0.0";
  int32_t secure_port = 10258;
  bool pick_free_port = false;
  bool reuse_port = false;  // --permit-port-sharing (SO_REUSEPORT)

  // --tls-cert-file / --tls-private-key-file / --cert-dir (see serving_certificate.hpp).
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::string cert_dir;

  // --client-ca-file and --requestheader-* (client_certificates.hpp); empty files: off.
  std::string client_ca_file;
  RequestHeaderOptions request_header;

  // --authorization-always-allow-paths (exact paths; empty: nothing is always allowed).
  std::vector<std::string> always_allow_paths = {"/healthz", "/readyz", "/livez"};
  // --authentication-token-webhook-cache-ttl and the two authorization cache TTLs.
  std::chrono::milliseconds token_cache_ttl{10000};
  std::chrono::milliseconds authorized_cache_ttl{10000};
  std::chrono::milliseconds unauthorized_cache_ttl{10000};
  // Deadline of one TokenReview / SubjectAccessReview call.
  std::chrono::milliseconds review_timeout{10000};

  // Threads: io threads do TLS and HTTP; workers run authentication, authorization and the
  // handlers that may block. Both stay asleep while no request arrives.
  int io_threads = 1;
  int worker_threads = 2;
  size_t max_pending_requests = 64;  // waiting for a worker; beyond: 503

  // Connection limits: a slow or idle client cannot hold a connection for longer than these.
  size_t max_connections = 256;                 // more are closed at accept
  size_t max_header_bytes = size_t{16} * 1024;  // request line + headers (431 above)
  size_t max_body_bytes = size_t{64} * 1024;    // request body (413 above)
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds read_timeout{30000};   // one whole request, incl. keep-alive idle
  std::chrono::milliseconds write_timeout{30000};  // one whole response

  // The /configz body (configz.hpp); "" answers 404 there.
  std::string configz;

  // ccm_build_info's labels.
  BuildInfo build_info = BuildInfo::current();
};

// The server's options from the command line (the non-flag fields keep their defaults).
ServerOptions serverOptionsFrom(const options::Options& options);

}  // namespace ccm::server
