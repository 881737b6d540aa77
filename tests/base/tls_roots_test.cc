#include "base/tls_roots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <map>
#include <set>
#include <string>

namespace ae {
namespace {

struct FakeHost {
  std::map<std::string, std::string> env;
  std::set<std::string> files, dirs;
  TlsRoots Find() const {
    return FindTlsRoots(
        [this](const char* n) {
          auto it = env.find(n);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        [this](const std::string& p) { return files.count(p) > 0; },
        [this](const std::string& p) { return dirs.count(p) > 0; });
  }
};

TEST(TlsRoots, EnvironmentWinsEvenOverExistingBundles) {
  FakeHost h;
  h.files = {"/etc/ssl/certs/ca-certificates.crt"};
  h.env = {{"SSL_CERT_FILE", "/my/ca.pem"}};
  EXPECT_EQ(h.Find().file, "/my/ca.pem");
  EXPECT_EQ(h.Find().dir, "");
  h.env = {{"SSL_CERT_DIR", "/my/certs"}};
  EXPECT_EQ(h.Find().file, "");
  EXPECT_EQ(h.Find().dir, "/my/certs");
}

TEST(TlsRoots, EmptyVariablesAreIgnored) {
  FakeHost h;
  h.env = {{"SSL_CERT_FILE", ""}, {"SSL_CERT_DIR", ""}};
  h.files = {"/etc/ssl/ca-bundle.pem"};
  EXPECT_EQ(h.Find().file, "/etc/ssl/ca-bundle.pem");
}

TEST(TlsRoots, FirstBundleInProbeOrder) {
  FakeHost h;
  h.files = {"/etc/ssl/cert.pem", "/etc/pki/tls/certs/ca-bundle.crt"};
  EXPECT_EQ(h.Find().file, "/etc/pki/tls/certs/ca-bundle.crt");
}

TEST(TlsRoots, HashedDirectoryWhenNoBundle) {
  FakeHost h;
  h.dirs = {"/etc/ssl/certs"};
  EXPECT_EQ(h.Find().file, "");
  EXPECT_EQ(h.Find().dir, "/etc/ssl/certs");
}

TEST(TlsRoots, NothingFoundLeavesLibcurlDefaults) {
  FakeHost h;
  EXPECT_EQ(h.Find().file, "");
  EXPECT_EQ(h.Find().dir, "");
}

TEST(TlsRoots, HostProbeFindsAReadableBundleHere) {
  // This machine is a Debian 12 with ca-certificates: the first probe path is expected once
  // the variables are out of the way (this process's own environment; restored after).
  if (::access("/etc/ssl/certs/ca-certificates.crt", R_OK) != 0)
    GTEST_SKIP() << "no /etc/ssl/certs/ca-certificates.crt here (ca-certificates not installed)";
  std::map<std::string, std::string> saved;
  for (const char* name : {"SSL_CERT_FILE", "SSL_CERT_DIR"}) {
    if (const char* v = std::getenv(name)) saved[name] = v;
    ::unsetenv(name);
  }
  TlsRoots roots = HostTlsRoots();
  for (const auto& [name, value] : saved) ::setenv(name.c_str(), value.c_str(), 1);
  EXPECT_EQ(roots.file, "/etc/ssl/certs/ca-certificates.crt");
  EXPECT_EQ(roots.dir, "");
  ::setenv("SSL_CERT_FILE", "/nonexistent/ca.pem", 1);
  EXPECT_EQ(HostTlsRoots().file, "/nonexistent/ca.pem");
  if (saved.count("SSL_CERT_FILE")) {
    ::setenv("SSL_CERT_FILE", saved["SSL_CERT_FILE"].c_str(), 1);
  } else {
    ::unsetenv("SSL_CERT_FILE");
  }
}

}  // namespace
}  // namespace ae
