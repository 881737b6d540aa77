// One side of a terminated TLS connection, over a blocking socket the proxy's connection thread
// owns: the client's (the proxy presents the run CA's certificate) or the upstream server's
// (the proxy verifies the real one). OpenSSL reads and writes through memory buffers this
// class fills from and drains to the socket, so the bytes the proxy already read while it
// checked the ClientHello go first.
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <string_view>

#include "base/result.h"

namespace ae::net {

class TlsStream {
 public:
  TlsStream() = default;
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // The server side on `fd`, `already_read` being the client's first bytes (its ClientHello).
  Status Accept(SSL_CTX* ctx, int fd, std::string_view already_read, int timeout_ms);
  // The client side on `fd`, to `host` (its name is sent and checked against the certificate;
  // an IP literal is checked as an address).
  Status Connect(SSL_CTX* ctx, int fd, const std::string& host, int timeout_ms);

  // Up to `size` bytes of plaintext: the count, 0 at a clean or unclean end, -1 on an error or
  // after `timeout_ms` (-1: none) with nothing.
  long Read(char* buf, size_t size, int timeout_ms);
  bool Write(std::string_view data);
  // close_notify, best effort.
  void Shutdown();

 private:
  // The SSL object on memory buffers for `fd`; false when OpenSSL cannot make one.
  bool Start(SSL_CTX* ctx, int fd);
  bool Flush();
  bool Fill(int timeout_ms);
  Status Handshake(int timeout_ms, const char* side);

  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // owned by ssl_
  BIO* out_ = nullptr;  // owned by ssl_
  int fd_ = -1;
};

}  // namespace ae::net
