#include "base/tls_roots.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace ae {

const char* const kTlsBundlePaths[] = {
    "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Alpine, Arch
    "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Fedora, CentOS
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7+
    "/etc/ssl/ca-bundle.pem",                             // openSUSE, SLES
    "/etc/ssl/cert.pem",                                  // Alpine, macOS-style layouts
    "/usr/lib/ssl/cert.pem",                              // OpenSSL's own default
    nullptr,
};

TlsRoots FindTlsRoots(const EnvLookup& env, const FileProbe& readable_file,
                      const FileProbe& readable_dir) {
  TlsRoots roots;
  // An explicit choice is taken as given, even if it is wrong: the TLS error then names it,
  // which is better than silently trusting some other bundle.
  const char* file = env("SSL_CERT_FILE");
  const char* dir = env("SSL_CERT_DIR");
  if (file && *file) roots.file = file;
  if (dir && *dir) roots.dir = dir;
  if (!roots.file.empty() || !roots.dir.empty()) return roots;
  for (const char* const* p = kTlsBundlePaths; *p; ++p) {
    if (readable_file(*p)) {
      roots.file = *p;
      return roots;
    }
  }
  if (readable_dir("/etc/ssl/certs")) roots.dir = "/etc/ssl/certs";
  return roots;
}

TlsRoots HostTlsRoots() {
  auto is = [](const std::string& path, bool want_dir) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    if (want_dir != S_ISDIR(st.st_mode)) return false;
    return ::access(path.c_str(), R_OK | (want_dir ? X_OK : 0)) == 0;
  };
  return FindTlsRoots([](const char* name) { return std::getenv(name); },
                      [&](const std::string& p) { return is(p, false); },
                      [&](const std::string& p) { return is(p, true); });
}

}  // namespace ae
