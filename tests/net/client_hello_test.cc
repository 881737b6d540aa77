// The ClientHello reader, fed what a real OpenSSL client sends: whole, a byte at a time,
// re-framed into many small records, from TLS 1.0 to 1.3 clients; with and without a server
// name, with server_name extensions edited by hand; what is not TLS; and what is too large.
#include "net/client_hello.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ae::net {
namespace {

using State = ClientHelloReader::State;

struct Client {
  int min_version = 0;
  int max_version = 0;
  bool legacy = false;  // security level 0, which OpenSSL 3 needs for TLS 1.0 and 1.1
};

// The bytes an OpenSSL client's first flight is, naming `sni` (nullptr for no server_name).
std::string Hello(const char* sni, Client client = {}) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return "";
  if (client.legacy) SSL_CTX_set_security_level(ctx, 0);
  if (client.min_version != 0) SSL_CTX_set_min_proto_version(ctx, client.min_version);
  if (client.max_version != 0) SSL_CTX_set_max_proto_version(ctx, client.max_version);
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (sni != nullptr) SSL_set_tlsext_host_name(ssl, sni);
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);  // wants the server's answer: all it wrote is the ClientHello
  std::string bytes;
  char buf[4096];
  int n = 0;
  while ((n = BIO_read(out, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ERR_clear_error();
  return bytes;
}

std::string Be16(size_t v) {
  return {static_cast<char>(v >> 8 & 0xff), static_cast<char>(v & 0xff)};
}

std::string Be24(size_t v) {
  return static_cast<char>(v >> 16 & 0xff) + Be16(v);
}

size_t U8(const std::string& s, size_t at) {
  return static_cast<unsigned char>(s[at]);
}
size_t U16(const std::string& s, size_t at) {
  return U8(s, at) << 8 | U8(s, at + 1);
}

// The same handshake message (a hello of one record, as OpenSSL sends it) in records of at most
// `size` bytes each.
std::string Reframe(const std::string& hello, size_t size) {
  const std::string body = hello.substr(5);
  std::string out;
  for (size_t at = 0; at < body.size(); at += size) {
    const std::string part = body.substr(at, size);
    out += hello.substr(0, 3) + Be16(part.size()) + part;
  }
  return out;
}

// The hello (one record) with its server_name extension's body replaced by `body`, every
// enclosing length fixed up; "" when it has no server_name extension.
std::string WithServerName(const std::string& hello, const std::string& body) {
  size_t at = 5 + 4 + 2 + 32;  // record header, handshake header, legacy_version, random
  at += 1 + U8(hello, at);     // legacy_session_id
  at += 2 + U16(hello, at);    // cipher_suites
  at += 1 + U8(hello, at);     // legacy_compression_methods
  const size_t extensions = at;
  std::string edited;
  bool found = false;
  for (size_t e = extensions + 2; e + 4 <= hello.size();) {
    const size_t type = U16(hello, e), len = U16(hello, e + 2);
    if (type == 0) {
      edited += hello.substr(e, 2) + Be16(body.size()) + body;
      found = true;
    } else {
      edited += hello.substr(e, 4 + len);
    }
    e += 4 + len;
  }
  if (!found) return "";
  const std::string message = hello.substr(9, extensions - 9) + Be16(edited.size()) + edited;
  const std::string handshake = "\x01" + Be24(message.size()) + message;
  return hello.substr(0, 3) + Be16(handshake.size()) + handshake;
}

// A ServerNameList of (name_type, name) entries.
std::string NameList(const std::vector<std::pair<int, std::string>>& entries) {
  std::string list;
  for (const auto& [type, name] : entries) {
    list += static_cast<char>(type) + Be16(name.size()) + name;
  }
  return Be16(list.size()) + list;
}

// Four labels of at most 63 bytes, 253 in all.
std::string Name253() {
  const std::string label(63, 'a');
  return label + "." + label + "." + label + "." + std::string(61, 'b');
}

State FeedAll(ClientHelloReader& r, const std::string& in) {
  return r.Feed(in.data(), in.size());
}

TEST(ClientHelloTest, AWholeHelloInOneFeed) {
  const std::string hello = Hello("Example.COM.");
  ASSERT_GT(hello.size(), 5u);
  ClientHelloReader r;
  EXPECT_EQ(r.state(), State::kNeedMore);
  EXPECT_EQ(FeedAll(r, hello), State::kDone);
  EXPECT_EQ(r.state(), State::kDone);
  EXPECT_EQ(r.server_name(), "example.com");
  EXPECT_EQ(r.buffered(), hello);
  EXPECT_EQ(r.error(), "");
}

TEST(ClientHelloTest, AByteAtATimeWholeAndReframed) {
  const std::string hello = Hello("Example.COM.");
  for (const std::string& in : {hello, Reframe(hello, 50), Reframe(hello, 1)}) {
    ClientHelloReader r;
    for (size_t i = 0; i < in.size(); ++i) {
      const State want = i + 1 < in.size() ? State::kNeedMore : State::kDone;
      ASSERT_EQ(r.Feed(&in[i], 1), want) << "byte " << i << " of " << in.size();
      ASSERT_EQ(r.buffered(), in.substr(0, i + 1));
    }
    EXPECT_EQ(r.server_name(), "example.com");
    // Once done, more bytes are neither read nor kept: they are the caller's to forward.
    EXPECT_EQ(r.Feed("x", 1), State::kDone);
    EXPECT_EQ(r.buffered(), in);
  }
}

TEST(ClientHelloTest, ManySmallRecordsInOneFeed) {
  const std::string hello = Hello("Example.COM.");
  const std::string in = Reframe(hello, 50);
  ASSERT_GT(in.size(), hello.size() + 5 * 4);  // at least five records
  ClientHelloReader r;
  EXPECT_EQ(FeedAll(r, in), State::kDone);
  EXPECT_EQ(r.server_name(), "example.com");
  EXPECT_EQ(r.buffered(), in);
}

TEST(ClientHelloTest, Tls10To13Clients) {
  const struct {
    Client client;
    size_t legacy_version;  // what the ClientHello says, after its two headers
  } cases[] = {
      {{TLS1_3_VERSION, TLS1_3_VERSION, false}, 0x0303},  // 1.3 says 1.2, and more in an extension
      {{0, TLS1_2_VERSION, false}, 0x0303},
      {{TLS1_1_VERSION, TLS1_1_VERSION, true}, 0x0302},
      {{TLS1_VERSION, TLS1_VERSION, true}, 0x0301},
  };
  for (const auto& c : cases) {
    const std::string hello = Hello("A.Test", c.client);
    ASSERT_GT(hello.size(), 11u) << c.legacy_version;
    EXPECT_EQ(U16(hello, 9), c.legacy_version);
    ClientHelloReader r;
    EXPECT_EQ(FeedAll(r, hello), State::kDone) << c.legacy_version << ": " << r.error();
    EXPECT_EQ(r.server_name(), "a.test");
  }
}

TEST(ClientHelloTest, NoServerName) {
  const std::string hello = Hello(nullptr);
  ClientHelloReader r;
  EXPECT_EQ(FeedAll(r, hello), State::kDone);
  EXPECT_EQ(r.server_name(), "");
  EXPECT_EQ(r.buffered(), hello);
}

TEST(ClientHelloTest, BytesAfterTheHelloAreKept) {
  const std::string hello = Hello("example.com");
  for (size_t extra : {size_t{10}, ClientHelloReader::kMaxBytes + 10}) {
    // What a client sends right behind its hello (TLS 1.3 early data): forwarded, not read.
    const std::string in = hello + std::string(extra, '\x17');
    ClientHelloReader r;
    EXPECT_EQ(FeedAll(r, in), State::kDone) << extra;
    EXPECT_EQ(r.server_name(), "example.com");
    EXPECT_EQ(r.buffered(), in);
  }
}

TEST(ClientHelloTest, WhatIsNotTls) {
  const std::string cases[] = {
      "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
      "SSH-2.0-OpenSSH_9.2\r\n",
      std::string("\x15\x03\x03\x00\x02\x02\x28", 7),  // an alert record
      std::string("\x16\x02", 2),                      // not major version 3
      std::string("\x80\x2e\x01\x03\x01", 5),          // an SSLv2-framed hello
      "G",
      // Not TLS is decided on the first bytes, however many arrive with them.
      "POST / HTTP/1.1\r\n\r\n" + std::string(ClientHelloReader::kMaxBytes + 1, 'a'),
  };
  for (const std::string& in : cases) {
    ClientHelloReader r;
    EXPECT_EQ(FeedAll(r, in), State::kNotTls) << in.substr(0, 20);
    // They go on as they are when TLS is not required: every byte is kept.
    EXPECT_EQ(r.buffered(), in);
    EXPECT_EQ(r.Feed("more", 4), State::kNotTls);
    EXPECT_EQ(r.buffered(), in);
  }

  ClientHelloReader split;
  EXPECT_EQ(split.Feed("\x16", 1), State::kNeedMore);
  EXPECT_EQ(split.Feed("\x03", 1), State::kNeedMore);
  EXPECT_EQ(split.buffered(), "\x16\x03");

  ClientHelloReader split_not;
  EXPECT_EQ(split_not.Feed("\x16", 1), State::kNeedMore);
  EXPECT_EQ(split_not.Feed("\x01rest", 5), State::kNotTls);
  EXPECT_EQ(split_not.buffered(), "\x16\x01rest");
}

TEST(ClientHelloTest, TlsButNoClientHello) {
  // OpenSSL's own reasons: its parser, not ours, read these.
  const struct {
    std::string in;
    std::string error;
  } cases[] = {
      // A ClientHello of one byte.
      {std::string("\x16\x03\x01\x00\x05\x01\x00\x00\x01\x00", 10), "length too short"},
      // A ServerHello where the client's hello belongs.
      {std::string("\x16\x03\x03\x00\x05\x02\x00\x00\x01\x00", 10), "unexpected message"},
      // A record longer than TLS allows, refused on its header.
      {std::string("\x16\x03\x01\xff\xff", 5), "packet length too long"},
      // A ClientHello claiming 16 MiB, refused on its header.
      {std::string("\x16\x03\x01\x00\x04\x01\xff\xff\xff", 9), "excessive message size"},
  };
  for (const auto& c : cases) {
    ClientHelloReader r;
    EXPECT_EQ(FeedAll(r, c.in), State::kMalformed) << c.error;
    EXPECT_EQ(r.error(), c.error);
    EXPECT_EQ(r.buffered(), c.in);
    EXPECT_EQ(r.Feed("\x16", 1), State::kMalformed);
    EXPECT_EQ(r.buffered(), c.in);
  }
}

TEST(ClientHelloTest, NeverHoldsMoreThanTheLimit) {
  // A ClientHello claiming 70 KiB (OpenSSL would take up to 128 KiB), in records of 16 KiB.
  const size_t claimed = 70 * 1024;
  std::string message = "\x01" + Be24(claimed) + std::string(claimed, '\0');
  std::string stream;
  for (size_t at = 0; at < message.size(); at += 16384) {
    const std::string part = message.substr(at, 16384);
    stream += "\x16\x03\x01" + Be16(part.size()) + part;
  }

  ClientHelloReader r;
  size_t fed = 0;
  State s = State::kNeedMore;
  while (s == State::kNeedMore && fed < stream.size()) {
    const size_t n = std::min<size_t>(4096, stream.size() - fed);
    s = r.Feed(stream.data() + fed, n);
    if (s == State::kNeedMore) fed += n;
    ASSERT_LE(r.buffered().size(), ClientHelloReader::kMaxBytes);
    ASSERT_EQ(r.buffered(), stream.substr(0, fed));
  }
  EXPECT_EQ(s, State::kTooLarge);
  EXPECT_EQ(r.error(), "the ClientHello is larger than 64 KiB");
  EXPECT_EQ(fed, ClientHelloReader::kMaxBytes);
  EXPECT_EQ(r.Feed("x", 1), State::kTooLarge);
  EXPECT_EQ(r.buffered().size(), ClientHelloReader::kMaxBytes);

  // All at once: none of it is kept.
  ClientHelloReader whole;
  EXPECT_EQ(FeedAll(whole, stream), State::kTooLarge);
  EXPECT_EQ(whole.buffered(), "");
}

TEST(ClientHelloTest, ServerNameExtensionsByHand) {
  const std::string hello = Hello("placeholder.test");
  ASSERT_NE(WithServerName(hello, NameList({{0, "x.test"}})), "");
  const struct {
    std::string body;
    State want;
    std::string name_or_error;
  } cases[] = {
      {NameList({{0, "Ok.Test."}}), State::kDone, "ok.test"},
      {NameList({{0, "_Service.example.com"}}), State::kDone, "_service.example.com"},
      {NameList({{0, std::string(63, 'a') + ".test"}}), State::kDone,
       std::string(63, 'a') + ".test"},
      // Other name types are skipped; with no host_name there is no name.
      {NameList({{1, "whatever"}, {0, "ok.test"}}), State::kDone, "ok.test"},
      {NameList({{1, "whatever"}}), State::kDone, ""},
      // Which of two would the server take?
      {NameList({{0, "allowed.test"}, {0, "evil.test"}}), State::kMalformed,
       "the server_name extension is malformed"},
      {NameList({}), State::kMalformed, "the server_name extension is malformed"},
      {"", State::kMalformed, "the server_name extension is malformed"},
      {std::string(1, '\0'), State::kMalformed, "the server_name extension is malformed"},
      // The list's length says one byte more than there is.
      {Be16(10) + static_cast<char>(0) + Be16(6) + "a.test", State::kMalformed,
       "the server_name extension is malformed"},
      // The name's length runs past the list.
      {Be16(9) + static_cast<char>(0) + Be16(7) + "a.test", State::kMalformed,
       "the server_name extension is malformed"},
      // An entry cut short before its length.
      {Be16(11) + static_cast<char>(0) + Be16(6) + "a.test" + std::string(2, '\0'),
       State::kMalformed, "the server_name extension is malformed"},
      {NameList({{0, ""}}), State::kMalformed, "the server name is not a host name"},
      {NameList({{0, "."}}), State::kMalformed, "the server name is not a host name"},
      {NameList({{0, "a..test"}}), State::kMalformed, "the server name is not a host name"},
      {NameList({{0, "a b.test"}}), State::kMalformed, "the server name is not a host name"},
      {NameList({{0, std::string("evil.test\0.ok.test", 18)}}), State::kMalformed,
       "the server name is not a host name"},
      {NameList({{0, "evil.test/ok.test"}}), State::kMalformed,
       "the server name is not a host name"},
      {NameList({{0, "ok.test.."}}), State::kMalformed, "the server name is not a host name"},
      {NameList({{0, std::string(64, 'a') + ".test"}}), State::kMalformed,
       "the server name is not a host name"},
      // 253 bytes is the longest a name may be, with or without a trailing dot.
      {NameList({{0, Name253()}}), State::kDone, Name253()},
      {NameList({{0, Name253() + "."}}), State::kDone, Name253()},
      {NameList({{0, Name253() + "b"}}), State::kMalformed, "the server name is not a host name"},
  };
  for (const auto& c : cases) {
    const std::string in = WithServerName(hello, c.body);
    ClientHelloReader r;
    EXPECT_EQ(FeedAll(r, in), c.want) << c.body.size() << ": " << r.error();
    EXPECT_EQ(c.want == State::kDone ? r.server_name() : r.error(), c.name_or_error);
    EXPECT_EQ(r.buffered(), in);
  }
}

TEST(ClientHelloTest, LeavesNoOpenSslErrorsBehind) {
  const std::string hello = Hello("example.com");
  // An error someone else left in this thread's queue is not taken for the reader's.
  ERR_raise(ERR_LIB_USER, 1);
  ClientHelloReader good;
  EXPECT_EQ(FeedAll(good, hello), State::kDone);
  EXPECT_EQ(ERR_peek_error(), 0u);

  // Nor in a Feed after the first.
  ClientHelloReader bad;
  EXPECT_EQ(bad.Feed("\x16\x03", 2), State::kNeedMore);
  ERR_raise(ERR_LIB_USER, 1);
  EXPECT_EQ(bad.Feed("\x01\xff\xff", 3), State::kMalformed);
  EXPECT_EQ(bad.error(), "packet length too long");
  EXPECT_EQ(ERR_peek_error(), 0u);
}

TEST(ClientHelloTest, DroppedHalfWay) {
  // A reader destroyed in the middle of a hello frees what OpenSSL holds (LeakSanitizer checks).
  const std::string hello = Hello("example.com");
  ClientHelloReader r;
  EXPECT_EQ(r.Feed(hello.data(), hello.size() / 2), State::kNeedMore);
}

TEST(ClientHelloTest, ReadersOnManyThreads) {
  const std::string hello = Reframe(Hello("Example.COM"), 100);
  std::vector<std::thread> threads;
  std::vector<int> done(4, 0);
  for (int& count : done) {
    threads.emplace_back([&hello, &count] {
      for (int i = 0; i < 50; ++i) {
        ClientHelloReader r;
        if (FeedAll(r, hello) == State::kDone && r.server_name() == "example.com") ++count;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int count : done) EXPECT_EQ(count, 50);
}

}  // namespace
}  // namespace ae::net
