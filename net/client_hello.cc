#include "net/client_hello.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>

#include "net/host_name.h"

namespace ae::net {
namespace {

// The host_name of a server_name extension's body (RFC 6066 section 3): "" with *ok when it
// names none; *ok false when the bytes are not a valid ServerNameList.
std::string HostName(const unsigned char* p, size_t len, bool* ok) {
  *ok = false;
  if (len < 2) return "";
  const size_t list = static_cast<size_t>(p[0]) << 8 | p[1];
  if (list + 2 != len) return "";
  std::string found;
  bool have = false;
  for (size_t at = 2; at < len;) {
    if (at + 3 > len) return "";
    const unsigned type = p[at];
    const size_t n = static_cast<size_t>(p[at + 1]) << 8 | p[at + 2];
    at += 3;
    if (at + n > len) return "";
    if (type == 0) {
      if (have) return "";  // two host names: which would the server take?
      found.assign(reinterpret_cast<const char*>(p + at), n);
      have = true;
    }
    at += n;
  }
  *ok = true;
  return found;
}

struct HelloSeen {
  bool called = false;
  bool valid = false;
  std::string name;
};

int OnClientHello(SSL* ssl, int* alert, void*) {
  auto* seen = static_cast<HelloSeen*>(SSL_get_app_data(ssl));
  seen->called = true;
  const unsigned char* ext = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &len) == 0) {
    seen->valid = true;  // no server_name at all
  } else {
    seen->name = HostName(ext, len, &seen->valid);
  }
  *alert = SSL_AD_INTERNAL_ERROR;
  // Stop here: nothing is answered, the handshake is the upstream server's.
  return SSL_CLIENT_HELLO_RETRY;
}

// One context for every reader: parsing needs no certificate, only the callback.
SSL_CTX* Context() {
  static SSL_CTX* ctx = [] {
    SSL_CTX* c = SSL_CTX_new(TLS_server_method());
    if (c != nullptr) {
      SSL_CTX_set_min_proto_version(c, 0);
      SSL_CTX_set_client_hello_cb(c, OnClientHello, nullptr);
    }
    return c;
  }();
  return ctx;
}

}  // namespace

struct ClientHelloReader::Impl {
  SSL* ssl = nullptr;
  BIO* in = nullptr;  // owned by ssl once set
  HelloSeen seen;
  ~Impl() {
    if (ssl != nullptr) SSL_free(ssl);
  }
};

ClientHelloReader::ClientHelloReader() : impl_(std::make_unique<Impl>()) {}
ClientHelloReader::~ClientHelloReader() = default;

ClientHelloReader::State ClientHelloReader::Feed(const char* data, size_t n) {
  if (state_ != State::kNeedMore) return state_;
  if (buffered_.size() + n > kMaxBytes) {
    state_ = State::kTooLarge;
    error_ = "the ClientHello is larger than 64 KiB";
    return state_;
  }
  buffered_.append(data, n);
  // A TLS handshake record (22) of major version 3; anything else is not TLS at all.
  if (!buffered_.empty() && static_cast<unsigned char>(buffered_[0]) != 0x16) {
    state_ = State::kNotTls;
    return state_;
  }
  if (buffered_.size() < 2) return state_;
  if (static_cast<unsigned char>(buffered_[1]) != 0x03) {
    state_ = State::kNotTls;
    return state_;
  }
  Impl& impl = *impl_;
  ERR_clear_error();
  if (impl.ssl == nullptr) {
    SSL_CTX* ctx = Context();
    impl.ssl = ctx != nullptr ? SSL_new(ctx) : nullptr;
    impl.in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    if (impl.ssl == nullptr || impl.in == nullptr || out == nullptr) {
      if (impl.in != nullptr) BIO_free(impl.in);
      if (out != nullptr) BIO_free(out);
      impl.in = nullptr;
      state_ = State::kMalformed;
      error_ = "OpenSSL could not be set up";
      return state_;
    }
    SSL_set_bio(impl.ssl, impl.in, out);
    SSL_set_app_data(impl.ssl, &impl.seen);
    SSL_set_accept_state(impl.ssl);
    if (BIO_write(impl.in, buffered_.data(), static_cast<int>(buffered_.size())) <= 0) {
      state_ = State::kMalformed;
      error_ = "OpenSSL could not take the bytes";
      return state_;
    }
  } else if (n > 0 && BIO_write(impl.in, data, static_cast<int>(n)) <= 0) {
    state_ = State::kMalformed;
    error_ = "OpenSSL could not take the bytes";
    return state_;
  }
  const int rc = SSL_do_handshake(impl.ssl);
  const int why = SSL_get_error(impl.ssl, rc);
  if (impl.seen.called) {
    if (!impl.seen.valid) {
      state_ = State::kMalformed;
      error_ = "the server_name extension is malformed";
    } else {
      std::string name = NormalizeHostName(impl.seen.name);
      if (!impl.seen.name.empty() && name.empty()) {
        state_ = State::kMalformed;
        error_ = "the server name is not a host name";
      } else {
        server_name_ = std::move(name);
        state_ = State::kDone;
      }
    }
  } else if (why != SSL_ERROR_WANT_READ) {
    state_ = State::kMalformed;
    const unsigned long err = ERR_peek_error();
    const char* reason = err != 0 ? ERR_reason_error_string(err) : nullptr;
    error_ = reason != nullptr ? reason : "not a TLS ClientHello";
  }
  ERR_clear_error();
  return state_;
}

}  // namespace ae::net
