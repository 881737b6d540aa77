// The ClientHello reader, fed what a real OpenSSL client sends: whole, a byte at a time,
// re-framed into many small records; with and without a server name; and what is not TLS.
#include "net/client_hello.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <string>

namespace ae::net {
namespace {

// The bytes an OpenSSL client's first flight is, naming `sni` ("" for none).
std::string Hello(const char* sni, int max_version = 0) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (max_version != 0) SSL_CTX_set_max_proto_version(ctx, max_version);
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (*sni != '\0') SSL_set_tlsext_host_name(ssl, sni);
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);
  std::string bytes;
  char buf[4096];
  int n = 0;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return bytes;
}

// The same handshake message in records of at most `size` bytes each.
std::string Reframe(const std::string& hello, size_t size) {
  const std::string body = hello.substr(5);
  std::string out;
  for (size_t at = 0; at < body.size(); at += size) {
    const std::string part = body.substr(at, size);
    out += hello.substr(0, 3);
    out.push_back(static_cast<char>(part.size() >> 8));
    out.push_back(static_cast<char>(part.size() & 0xff));
    out += part;
  }
  return out;
}

TEST(ClientHelloTest, TheServerNameWholeByteByByteAndReframed) {
  const std::string hello = Hello("Example.COM.");
  for (const std::string& in : {hello, Reframe(hello, 50)}) {
    ClientHelloReader whole;
    EXPECT_EQ(whole.Feed(in.data(), in.size()), ClientHelloReader::State::kDone);
    EXPECT_EQ(whole.server_name(), "example.com");
    EXPECT_EQ(whole.buffered(), in);

    ClientHelloReader bytes;
    for (size_t i = 0; i < in.size(); ++i) {
      ClientHelloReader::State s = bytes.Feed(&in[i], 1);
      EXPECT_EQ(s, i + 1 < in.size() ? ClientHelloReader::State::kNeedMore
                                     : ClientHelloReader::State::kDone)
          << i;
    }
    EXPECT_EQ(bytes.server_name(), "example.com");
    EXPECT_EQ(bytes.Feed("x", 1), ClientHelloReader::State::kDone);
    EXPECT_EQ(bytes.buffered(), in);
  }
}

TEST(ClientHelloTest, Tls12AndNoServerName) {
  ClientHelloReader tls12;
  const std::string hello12 = Hello("a.test", TLS1_2_VERSION);
  EXPECT_EQ(tls12.Feed(hello12.data(), hello12.size()), ClientHelloReader::State::kDone);
  EXPECT_EQ(tls12.server_name(), "a.test");

  ClientHelloReader none;
  const std::string bare = Hello("");
  EXPECT_EQ(none.Feed(bare.data(), bare.size()), ClientHelloReader::State::kDone);
  EXPECT_EQ(none.server_name(), "");
}

TEST(ClientHelloTest, WhatIsNotAClientHello) {
  struct Case {
    std::string in;
    ClientHelloReader::State want;
  } cases[] = {
      {"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", ClientHelloReader::State::kNotTls},
      {"SSH-2.0-OpenSSH_9.2\r\n", ClientHelloReader::State::kNotTls},
      {std::string("\x15\x03\x03\x00\x02\x02\x28", 7), ClientHelloReader::State::kNotTls},
      {std::string("\x16\x02", 2), ClientHelloReader::State::kNotTls},
      {std::string("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00", 10),
       ClientHelloReader::State::kMalformed},
  };
  for (const Case& c : cases) {
    ClientHelloReader r;
    EXPECT_EQ(r.Feed(c.in.data(), c.in.size()), c.want) << c.in;
  }
  ClientHelloReader one;
  EXPECT_EQ(one.Feed("\x16", 1), ClientHelloReader::State::kNeedMore);
}

TEST(ClientHelloTest, NeverBuffersPastTheLimit) {
  ClientHelloReader r;
  // A handshake record announcing 16 KiB, then records that never complete a message.
  std::string record = std::string("\x16\x03\x01\x40\x00\x01\xff\xff\xff", 9);
  r.Feed(record.data(), record.size());
  const std::string filler(ClientHelloReader::kMaxBytes, '\0');
  EXPECT_EQ(r.Feed(filler.data(), filler.size()), ClientHelloReader::State::kTooLarge);
  EXPECT_EQ(r.error(), "the ClientHello is larger than 64 KiB");
  EXPECT_EQ(r.buffered().size(), record.size());
}

}  // namespace
}  // namespace ae::net
