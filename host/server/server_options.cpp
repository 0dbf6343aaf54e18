// serverOptionsFrom: the command line's secure-serving, authentication and authorization
// flags mapped onto ServerOptions.
#include "host/server/server_options.hpp"

#include "host/server/configz.hpp"

namespace ccm::server {

ServerOptions serverOptionsFrom(const options::Options& o) {
  ServerOptions s;
  s.bind_address = o.bind_address.empty() ? "0.0.0.0" : o.bind_address;
  s.secure_port = o.secure_port;
  s.reuse_port = o.permit_port_sharing;
  s.tls_cert_file = o.tls_cert_file;
  s.tls_private_key_file = o.tls_private_key_file;
  s.cert_dir = o.cert_dir;
  s.always_allow_paths.clear();
  for (const auto& p : o.authorization_always_allow_paths) {
    if (!p.empty()) {
      s.always_allow_paths.push_back(p);
    }
  }
  s.client_ca_file = o.client_ca_file;
  s.request_header.client_ca_file = o.requestheader_client_ca_file;
  s.request_header.username_headers = o.requestheader_username_headers;
  s.request_header.group_headers = o.requestheader_group_headers;
  s.request_header.extra_headers_prefixes = o.requestheader_extra_headers_prefix;
  s.request_header.allowed_names = o.requestheader_allowed_names;
  s.token_cache_ttl = o.authentication_token_webhook_cache_ttl;
  s.authorized_cache_ttl = o.authorization_webhook_cache_authorized_ttl;
  s.unauthorized_cache_ttl = o.authorization_webhook_cache_unauthorized_ttl;
  s.configz = configzJson(o);
  return s;
}

}  // namespace ccm::server
