// OpenSslPki: CAs and client certificates made with the openssl command in a temporary
// directory, for the client-certificate tests (independent of ccm's own certificate code).
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ccm::server::testing {

namespace pki_fs = std::filesystem;

inline std::string readPkiFile(const pki_fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writePkiFile(const pki_fs::path& p, const std::string& data) {
  std::ofstream out(p);
  out << data;
}

// A directory of CAs and certificates made with the openssl command.
struct OpenSslPki {
  pki_fs::path dir;

  OpenSslPki() {
    std::string tmpl = (pki_fs::temp_directory_path() / "ccm-client-cert-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    writePkiFile(dir / "openssl.cnf",
                 "[req]\ndistinguished_name = dn\n[dn]\n"
                 "[ca]\nbasicConstraints = critical,CA:TRUE\n"
                 "keyUsage = critical,keyCertSign,cRLSign\n"
                 "[client]\nbasicConstraints = CA:FALSE\n"
                 "keyUsage = critical,digitalSignature\nextendedKeyUsage = clientAuth\n"
                 "[server_only]\nbasicConstraints = CA:FALSE\n"
                 "keyUsage = critical,digitalSignature\nextendedKeyUsage = serverAuth\n");
  }
  ~OpenSslPki() {
    std::error_code ec;
    pki_fs::remove_all(dir, ec);
  }

  void run(const std::string& command) {
    std::string full = command + " >" + (dir / "openssl.log").string() + " 2>&1";
    int rc = std::system(full.c_str());
    REQUIRE_MESSAGE(rc == 0, command, "\n", readPkiFile(dir / "openssl.log"));
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }

  // A self-signed CA <name>.crt / <name>.key.
  void ca(const std::string& name) {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-config " +
        path("openssl.cnf") + " -extensions ca -subj '/CN=" + name + "' -keyout " +
        path(name + ".key") + " -out " + path(name + ".crt"));
  }
  // A certificate <name>.crt / <name>.key for `subject` ("/CN=alice/O=dev"), signed by `ca`.
  void issue(const std::string& name, const std::string& subject, const std::string& ca,
             const std::string& extensions = "client") {
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -config " +
        path("openssl.cnf") + " -subj '" + subject + "' -keyout " + path(name + ".key") + " -out " +
        path(name + ".csr"));
    run("openssl x509 -req -in " + path(name + ".csr") + " -CA " + path(ca + ".crt") + " -CAkey " +
        path(ca + ".key") + " -CAcreateserial -days 1 -extfile " + path("openssl.cnf") +
        " -extensions " + extensions + " -out " + path(name + ".crt"));
  }
};

}  // namespace ccm::server::testing
