// The first bytes of a tunnel the proxy opened (CONNECT, or SOCKS5 to a TLS port): they must be
// a TLS ClientHello whose server name (SNI) is the host the tunnel was opened to, or an
// allowed name could front for another (domain fronting) or carry plain HTTP for any Host.
// The ClientHello is parsed by OpenSSL's own parser (a server-side SSL object over a memory
// BIO, stopped in its client-hello callback), so records split across reads, handshake
// messages split across records and every extension are read as a TLS server reads them.
// Nothing is terminated: the bytes fed are forwarded upstream unchanged once the name checks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ae::net {

class ClientHelloReader {
 public:
  enum class State {
    kNeedMore,   // feed more bytes
    kDone,       // a whole ClientHello: server_name() says what it names ("" for none)
    kNotTls,     // the bytes do not start a TLS handshake record (plain HTTP, SSH, ...)
    kMalformed,  // a TLS record, but no valid ClientHello (error() says why)
    kTooLarge,   // more than kMaxBytes without a whole ClientHello
  };
  // A ClientHello with post-quantum key shares and padding stays far below this.
  static constexpr size_t kMaxBytes = 64 * 1024;

  ClientHelloReader();
  ~ClientHelloReader();
  ClientHelloReader(const ClientHelloReader&) = delete;
  ClientHelloReader& operator=(const ClientHelloReader&) = delete;

  // Adds the next bytes from the client. Once the state is not kNeedMore, further calls
  // return it again and add nothing.
  State Feed(const char* data, size_t n);
  State state() const { return state_; }
  // The host_name entry of the server_name extension, lower-cased, without a trailing dot;
  // "" when the ClientHello has no server_name (e.g. a client dialling an IP literal).
  const std::string& server_name() const { return server_name_; }
  // Every byte fed so far, to be sent upstream unchanged.
  std::string_view buffered() const { return buffered_; }
  // Why kMalformed or kTooLarge, e.g. "the TLS record is not a handshake".
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  State state_ = State::kNeedMore;
  std::string buffered_;
  std::string server_name_;
  std::string error_;
};

}  // namespace ae::net
