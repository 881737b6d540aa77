// Where the host keeps its TLS trust roots. The portable (static) binary carries no CA path
// of its own, because the bundle lives in different places on Debian, RHEL, SUSE and Alpine;
// it probes them at run time instead. SSL_CERT_FILE / SSL_CERT_DIR win, as with OpenSSL.
#pragma once

#include <functional>
#include <string>

namespace ae {

struct TlsRoots {
  std::string file;  // a PEM bundle, or "" (libcurl's default)
  std::string dir;   // an OpenSSL hashed directory, or ""
};

using EnvLookup = std::function<const char*(const char*)>;
using FileProbe = std::function<bool(const std::string&)>;  // exists and is readable

// The bundle paths tried, in order, when SSL_CERT_FILE is not set.
extern const char* const kTlsBundlePaths[];

TlsRoots FindTlsRoots(const EnvLookup& env, const FileProbe& readable_file,
                      const FileProbe& readable_dir);

// The host's roots, from the real environment and file system.
TlsRoots HostTlsRoots();

}  // namespace ae
