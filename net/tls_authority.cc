#include "net/tls_authority.h"

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "base/tls_roots.h"
#include "net/address.h"

namespace ae::net {
namespace {

Error OpensslError(const char* what) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  return MakeError(fmt::format("credential broker: {}: {}", what, text));
}

EVP_PKEY* NewKey() {
  return EVP_EC_gen("P-256");
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool added = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return added;
}

// An unsigned certificate for `subject_cn` with `key`'s public half, issued by `issuer` (null:
// by itself). Valid from an hour ago (clocks in containers drift) for seven days.
X509* NewCertificate(EVP_PKEY* key, const std::string& subject_cn, X509* issuer) {
  X509* cert = X509_new();
  if (cert == nullptr) return nullptr;
  unsigned char serial[16];
  bool ok = X509_set_version(cert, 2) == 1 && RAND_bytes(serial, sizeof serial) == 1;
  if (ok) {
    serial[0] &= 0x7f;  // positive
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    ok = bn != nullptr && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
    BN_free(bn);
  }
  ok = ok && X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nullptr &&
       X509_gmtime_adj(X509_getm_notAfter(cert), 7L * 24 * 3600) != nullptr &&
       X509_set_pubkey(cert, key) == 1;
  X509_NAME* name = X509_get_subject_name(cert);
  ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                        reinterpret_cast<const unsigned char*>(subject_cn.c_str()),
                                        -1, -1, 0) == 1;
  ok = ok &&
       X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name) == 1;
  if (!ok) {
    X509_free(cert);
    return nullptr;
  }
  return cert;
}

bool Sign(X509* cert, EVP_PKEY* key) {
  return X509_sign(cert, key, EVP_sha256()) > 0;
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  std::string pem;
  if (PEM_write_bio_X509(bio, cert) == 1) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    if (n > 0) pem.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  return pem;
}

int SelectHttp11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                 unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // e.g. h2 only: the proxy speaks HTTP/1.1
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

Result<std::unique_ptr<TlsAuthority>> TlsAuthority::Create(std::string roots_pem) {
  std::unique_ptr<TlsAuthority> ca(new TlsAuthority());
  ca->roots_pem_ = std::move(roots_pem);
  if (!ca->roots_pem_.empty() && ca->roots_pem_.back() != '\n') ca->roots_pem_ += '\n';
  ca->key_ = NewKey();
  if (ca->key_ == nullptr) return OpensslError("cannot make the run's CA key");
  unsigned char id[4];
  if (RAND_bytes(id, sizeof id) != 1) return OpensslError("no random bytes");
  const std::string cn =
      fmt::format("agentexec run CA {:02x}{:02x}{:02x}{:02x}", id[0], id[1], id[2], id[3]);
  ca->cert_ = NewCertificate(ca->key_, cn, nullptr);
  if (ca->cert_ == nullptr ||
      !AddExtension(ca->cert_, ca->cert_, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(ca->cert_, ca->cert_, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(ca->cert_, ca->cert_, NID_subject_key_identifier, "hash") ||
      !Sign(ca->cert_, ca->key_)) {
    return OpensslError("cannot make the run's CA certificate");
  }
  ca->ca_pem_ = ToPem(ca->cert_);
  if (ca->ca_pem_.empty()) return OpensslError("cannot write the run's CA certificate");
  return ca;
}

TlsAuthority::~TlsAuthority() {
  for (auto& [host, ctx] : contexts_) SSL_CTX_free(ctx);
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

Result<SSL_CTX*> TlsAuthority::ServerContext(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = contexts_.find(host); it != contexts_.end()) return it->second;
  EVP_PKEY* key = NewKey();
  if (key == nullptr) return OpensslError("cannot make a key");
  X509* leaf = NewCertificate(key, host, cert_);
  const std::string san = ParseIpLiteral(host).has_value() ? "IP:" + host : "DNS:" + host;
  SSL_CTX* ctx = nullptr;
  const bool made =
      leaf != nullptr && AddExtension(leaf, cert_, NID_subject_alt_name, san.c_str()) &&
      AddExtension(leaf, cert_, NID_basic_constraints, "critical,CA:FALSE") &&
      AddExtension(leaf, cert_, NID_ext_key_usage, "serverAuth") &&
      AddExtension(leaf, cert_, NID_authority_key_identifier, "keyid") && Sign(leaf, key_) &&
      (ctx = SSL_CTX_new(TLS_server_method())) != nullptr &&
      SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
      SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
  X509_free(leaf);
  EVP_PKEY_free(key);
  if (!made) {
    SSL_CTX_free(ctx);
    return OpensslError(("cannot make a certificate for " + host).c_str());
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectHttp11, nullptr);
  contexts_.emplace(host, ctx);
  return ctx;
}

Result<SSL_CTX*> UpstreamContext() {
  static const Result<SSL_CTX*> made = []() -> Result<SSL_CTX*> {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) return OpensslError("cannot make the upstream TLS context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    const TlsRoots roots = HostTlsRoots();
    if (SSL_CTX_load_verify_locations(ctx, roots.file.empty() ? nullptr : roots.file.c_str(),
                                      roots.dir.empty() ? nullptr : roots.dir.c_str()) != 1) {
      SSL_CTX_free(ctx);
      return OpensslError("cannot load the host's trust roots");
    }
    static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(ctx, kHttp11, sizeof kHttp11);
    return ctx;
  }();
  return made;
}

}  // namespace ae::net
