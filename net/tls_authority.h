// The run's own certificate authority, for the hosts whose TLS the egress proxy terminates (a
// brokered credential's hosts, net/credentials.h) and no other. Its key is made when the run
// starts and lives only in this process's memory: it is never written anywhere, so nothing a
// command can read (a file, another process's memory) holds it, and it dies with the run.
// Commands trust it through a bundle holding only certificates (BundlePem).
#pragma once

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"

namespace ae::net {

class TlsAuthority {
 public:
  // A P-256 CA certificate valid from an hour ago for a week, named "agentexec run CA <hex>",
  // limited (name constraints are not used: the hosts are only known as patterns) by being
  // trusted only by the run's commands. `roots_pem`: the host's trust roots, appended to the
  // bundle so commands that replace their roots with it still reach every other host.
  static Result<std::unique_ptr<TlsAuthority>> Create(std::string roots_pem);
  ~TlsAuthority();
  TlsAuthority(const TlsAuthority&) = delete;
  TlsAuthority& operator=(const TlsAuthority&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }
  // The CA's certificate, then the host's roots: for SSL_CERT_FILE and the like.
  std::string BundlePem() const { return ca_pem_ + roots_pem_; }

  // A server context presenting a certificate for `host` (a DNS name or an IP literal) that
  // this CA signed, made once per host; it offers HTTP/1.1 by ALPN and nothing else. Owned
  // by the authority.
  Result<SSL_CTX*> ServerContext(const std::string& host);

 private:
  TlsAuthority() = default;
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string ca_pem_, roots_pem_;
  std::mutex mu_;
  std::map<std::string, SSL_CTX*> contexts_;
};

// The context for the proxy's own connections to a terminated host: TLS 1.2 or later,
// verifying the server's chain against the host's roots (base/tls_roots.h: SSL_CERT_FILE and
// SSL_CERT_DIR as OpenSSL reads them, else the distribution's bundle) and, per connection,
// its name (TlsStream::Connect). Made once; never freed.
Result<SSL_CTX*> UpstreamContext();

}  // namespace ae::net
