#include "net/tls_stream.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "net/address.h"
#include "net/socket_io.h"

namespace ae::net {
namespace {

std::string LastError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "the connection ended";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

}  // namespace

TlsStream::~TlsStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ERR_clear_error();
}

bool TlsStream::Flush() {
  char* data = nullptr;
  const long n = BIO_get_mem_data(out_, &data);
  if (n <= 0) return true;
  const bool sent = SendAll(fd_, std::string_view(data, static_cast<size_t>(n)));
  (void)BIO_reset(out_);
  return sent;
}

bool TlsStream::Fill(int timeout_ms) {
  char buf[16384];
  const ssize_t n = ReadSome(fd_, buf, sizeof buf, timeout_ms);
  if (n <= 0) return false;
  return BIO_write(in_, buf, static_cast<int>(n)) == n;
}

Status TlsStream::Handshake(int timeout_ms, const char* side) {
  for (;;) {
    const int rc = SSL_do_handshake(ssl_);
    const int err = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, rc);
    if (!Flush()) return MakeError(fmt::format("TLS with the {}: the connection ended", side));
    if (rc == 1) return {};
    if (err != SSL_ERROR_WANT_READ || !Fill(timeout_ms)) {
      std::string why = LastError();
      if (SSL_get_verify_result(ssl_) != X509_V_OK) {
        why = X509_verify_cert_error_string(SSL_get_verify_result(ssl_));
      }
      return MakeError(fmt::format("TLS with the {}: {}", side, why));
    }
  }
}

bool TlsStream::Start(SSL_CTX* ctx, int fd) {
  fd_ = fd;
  ssl_ = SSL_new(ctx);
  in_ = BIO_new(BIO_s_mem());
  out_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || in_ == nullptr || out_ == nullptr) {
    BIO_free(in_);
    BIO_free(out_);
    in_ = out_ = nullptr;
    return false;
  }
  SSL_set_bio(ssl_, in_, out_);
  return true;
}

Status TlsStream::Accept(SSL_CTX* ctx, int fd, std::string_view already_read, int timeout_ms) {
  if (!Start(ctx, fd)) return MakeError("TLS with the client: " + LastError());
  SSL_set_accept_state(ssl_);
  if (!already_read.empty() &&
      BIO_write(in_, already_read.data(), static_cast<int>(already_read.size())) !=
          static_cast<int>(already_read.size())) {
    return MakeError("TLS with the client: " + LastError());
  }
  return Handshake(timeout_ms, "client");
}

Status TlsStream::Connect(SSL_CTX* ctx, int fd, const std::string& host, int timeout_ms) {
  if (!Start(ctx, fd)) return MakeError("TLS with the server: " + LastError());
  SSL_set_connect_state(ssl_);
  if (ParseIpLiteral(host).has_value()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
  }
  return Handshake(timeout_ms, "server");
}

long TlsStream::Read(char* buf, size_t size, int timeout_ms) {
  for (;;) {
    const int n = SSL_read(ssl_, buf, static_cast<int>(size));
    if (n > 0) return n;
    const int err = SSL_get_error(ssl_, n);
    if (!Flush()) return -1;  // a key update or a ticket may want to go out
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err != SSL_ERROR_WANT_READ) return err == SSL_ERROR_SYSCALL ? 0 : -1;
    if (!Fill(timeout_ms)) return BIO_ctrl_pending(in_) == 0 ? 0 : -1;
  }
}

bool TlsStream::Write(std::string_view data) {
  while (!data.empty()) {
    const int n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
    if (n <= 0) return false;
    if (!Flush()) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void TlsStream::Shutdown() {
  if (ssl_ == nullptr) return;
  SSL_shutdown(ssl_);
  Flush();
}

}  // namespace ae::net
