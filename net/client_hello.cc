#include "net/client_hello.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>

#include <algorithm>

#include "net/host_name.h"

namespace ae::net {
namespace {

// What the client-hello callback saw, read by Feed once SSL_do_handshake returns.
struct HelloSeen {
  bool called = false;
  bool valid = false;  // the server_name extension, if any, is a well-formed ServerNameList
  bool named = false;  // it holds a host_name entry (possibly an empty, hence invalid, one)
  std::string name;
};

// The server_name extension's body (RFC 6066 section 3): a 2-byte list length, then entries of
// a 1-byte name_type, a 2-byte length and the bytes. Every length is checked against the
// buffer; an empty list or two host_name entries are malformed, since servers disagree on
// which of two names they would take. Entries of other types are skipped, as Go's server does.
void ReadServerNameList(const unsigned char* p, size_t len, HelloSeen* seen) {
  if (len < 2) return;
  const size_t list = static_cast<size_t>(p[0]) << 8 | p[1];
  if (list == 0 || list + 2 != len) return;
  for (size_t at = 2; at < len;) {
    if (len - at < 3) return;
    const unsigned type = p[at];
    const size_t n = static_cast<size_t>(p[at + 1]) << 8 | p[at + 2];
    at += 3;
    if (len - at < n) return;
    if (type == TLSEXT_NAMETYPE_host_name) {
      if (seen->named) return;
      seen->name.assign(reinterpret_cast<const char*>(p + at), n);
      seen->named = true;
    }
    at += n;
  }
  seen->valid = true;
}

// Runs once OpenSSL has a whole, well-formed ClientHello and before it chooses a version, a
// cipher or a certificate, so no server configuration is needed.
int OnClientHello(SSL* ssl, int* alert, void*) {
  auto* seen = static_cast<HelloSeen*>(SSL_get_app_data(ssl));
  if (seen == nullptr) {
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  seen->called = true;
  const unsigned char* ext = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &len) == 0) {
    seen->valid = true;  // no server_name at all
  } else {
    ReadServerNameList(ext, len, seen);
  }
  // Stop here: SSL_do_handshake returns with SSL_ERROR_WANT_CLIENT_HELLO_CB having written
  // nothing; the handshake is the upstream server's.
  return SSL_CLIENT_HELLO_RETRY;
}

// One context for every reader (a function-local static is initialised once, thread-safely);
// parsing needs no certificate, only the callback. It is never freed: readers may live until
// exit.
SSL_CTX* Context() {
  // OpenSSL takes the context as non-const; made once, never changed after.
  static SSL_CTX* const ctx = [] {  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)
    SSL_CTX* c = SSL_CTX_new(TLS_server_method());
    if (c == nullptr) return c;
    // TLS 1.0 and 1.1 clients are parsed too, whatever the system configuration's MinProtocol
    // says: the callback runs before a version is chosen, but that should not be relied on.
    SSL_CTX_set_min_proto_version(c, TLS1_VERSION);
    SSL_CTX_set_client_hello_cb(c, OnClientHello, nullptr);
    ERR_clear_error();
    return c;
  }();
  return ctx;
}

bool StartsTls(std::string_view head) {
  // A handshake record (22) of major version 3, as every TLS 1.0-1.3 ClientHello is sent.
  if (!head.empty() && static_cast<unsigned char>(head[0]) != 0x16) return false;
  if (head.size() >= 2 && static_cast<unsigned char>(head[1]) != 0x03) return false;
  return true;
}

}  // namespace

struct ClientHelloReader::Impl {
  SSL* ssl = nullptr;
  BIO* in = nullptr;  // owned by ssl once set
  HelloSeen seen;     // the SSL's app data: both die with this Impl
  Impl() = default;
  ~Impl() {
    if (ssl != nullptr) SSL_free(ssl);
    ERR_clear_error();
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  Impl(Impl&&) = delete;
  Impl& operator=(Impl&&) = delete;
  // The SSL object, made on the first TLS-looking bytes; false when OpenSSL cannot make one.
  bool Start() {
    SSL_CTX* ctx = Context();
    if (ctx == nullptr) return false;
    ssl = SSL_new(ctx);
    in = BIO_new(BIO_s_mem());
    // Whatever OpenSSL would send (an alert on a malformed hello) is discarded: the client
    // must only ever hear the upstream server.
    BIO* out = BIO_new(BIO_s_null());
    if (ssl == nullptr || in == nullptr || out == nullptr) {
      SSL_free(ssl);
      BIO_free(in);
      BIO_free(out);
      ssl = nullptr;
      in = nullptr;
      return false;
    }
    SSL_set_bio(ssl, in, out);
    SSL_set_app_data(ssl, &seen);
    SSL_set_accept_state(ssl);
    return true;
  }
  State Parse(const char* data, size_t n, std::string* name, std::string* error);
};

// Gives OpenSSL the next `n` bytes and says where the ClientHello stands: kNeedMore, kDone
// (with *name) or kMalformed (with *error).
ClientHelloReader::State ClientHelloReader::Impl::Parse(const char* data, size_t n,
                                                        std::string* name, std::string* error) {
  // OpenSSL's error queue is per thread: what others left must not be read as ours, and what
  // this call leaves must not be read by others.
  ERR_clear_error();
  if (ssl == nullptr && !Start()) {
    *error = "OpenSSL could not be set up";
    ERR_clear_error();
    return State::kMalformed;
  }
  if (n > 0 && BIO_write(in, data, static_cast<int>(n)) != static_cast<int>(n)) {
    *error = "OpenSSL could not take the bytes";
    ERR_clear_error();
    return State::kMalformed;
  }
  const int rc = SSL_do_handshake(ssl);
  const int why = SSL_get_error(ssl, rc);
  State state = State::kNeedMore;
  if (seen.called) {
    std::string host = seen.named ? NormalizeHostName(seen.name) : "";
    if (!seen.valid) {
      state = State::kMalformed;
      *error = "the server_name extension is malformed";
    } else if (seen.named && host.empty()) {
      state = State::kMalformed;
      *error = "the server name is not a host name";
    } else {
      *name = std::move(host);
      state = State::kDone;
    }
  } else if (why != SSL_ERROR_WANT_READ) {
    state = State::kMalformed;
    const unsigned long err = ERR_peek_error();
    const char* reason = err != 0 ? ERR_reason_error_string(err) : nullptr;
    *error = reason != nullptr ? reason : "not a TLS ClientHello";
  }
  ERR_clear_error();
  return state;
}

ClientHelloReader::ClientHelloReader() : impl_(std::make_unique<Impl>()) {}
ClientHelloReader::~ClientHelloReader() = default;

ClientHelloReader::State ClientHelloReader::Feed(const char* data, size_t n) {
  if (state_ != State::kNeedMore || n == 0) return state_;
  // The first two bytes decide whether this is TLS at all, however many come with them. Bytes
  // that are not TLS are all kept: the caller may forward them as they are.
  if (buffered_.size() < 2) {
    std::string head = buffered_;
    head.append(data, std::min<size_t>(n, 2));
    if (!StartsTls(head)) {
      buffered_.append(data, n);
      state_ = State::kNotTls;
      return state_;
    }
  }
  // OpenSSL sees at most kMaxBytes in all. Bytes past that are kept only when the ClientHello
  // ended before them (they are the client's next bytes, to be forwarded); otherwise none of
  // this call's are, so an unfinished ClientHello never holds more than kMaxBytes.
  const size_t take = std::min(n, kMaxBytes - buffered_.size());
  const State parsed = impl_->Parse(data, take, &server_name_, &error_);
  if (parsed == State::kDone || take == n) {
    buffered_.append(data, n);
    state_ = parsed;
  } else {
    state_ = parsed == State::kNeedMore ? State::kTooLarge : parsed;
    if (state_ == State::kTooLarge) error_ = "the ClientHello is larger than 64 KiB";
  }
  return state_;
}

}  // namespace ae::net
