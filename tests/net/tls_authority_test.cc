#include "net/tls_authority.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

namespace ae::net {
namespace {

// The leaf a server context presents verifies against the run's CA for its host, and only it.
TEST(TlsAuthority, ALeafForAHostVerifiesAgainstTheRunsCa) {
  Result<std::unique_ptr<TlsAuthority>> ca = TlsAuthority::Create("ROOTS\n");
  ASSERT_TRUE(ca.ok()) << ca.message();
  EXPECT_EQ((*ca)->BundlePem(), (*ca)->ca_pem() + "ROOTS\n");
  EXPECT_EQ((*ca)->ca_pem().rfind("-----BEGIN CERTIFICATE-----\n", 0), 0u);
  EXPECT_EQ((*ca)->ca_pem().find("PRIVATE KEY"), std::string::npos);
  for (const std::string host : {"git.example.com", "192.0.2.7"}) {
    Result<SSL_CTX*> ctx = (*ca)->ServerContext(host);
    ASSERT_TRUE(ctx.ok()) << ctx.message();
    X509* leaf = SSL_CTX_get0_certificate(*ctx);
    ASSERT_NE(leaf, nullptr);
    BIO* bio = BIO_new_mem_buf((*ca)->ca_pem().data(), static_cast<int>((*ca)->ca_pem().size()));
    X509* root = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, root);
    X509_STORE_CTX* verify = X509_STORE_CTX_new();
    X509_STORE_CTX_init(verify, store, leaf, nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(verify);
    if (host == "192.0.2.7") {
      X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    } else {
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    }
    EXPECT_EQ(X509_verify_cert(verify), 1)
        << X509_verify_cert_error_string(X509_STORE_CTX_get_error(verify));
    X509_STORE_CTX_cleanup(verify);
    X509_STORE_CTX_init(verify, store, leaf, nullptr);
    X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(verify), "other.example.com", 0);
    EXPECT_NE(X509_verify_cert(verify), 1) << host;
    X509_STORE_CTX_free(verify);
    X509_STORE_free(store);
    X509_free(root);
    // Made once per host.
    EXPECT_EQ(*(*ca)->ServerContext(host), *ctx);
  }
}

}  // namespace
}  // namespace ae::net
