// The proxy's request reader (llhttp): the head as a proxy needs it however the bytes are
// split, exactly one request per connection (a pipelined second request and a CONNECT's tunnel
// bytes are left unread), and every target and head a proxy must not take.
#include "net/http_request.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ae::net {
namespace {

using namespace std::string_literals;
using State = HttpRequestReader::State;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Feeds `in` in pieces of `step` bytes (0: all at once) as the proxy does: each Feed gets what
// the previous one left. Returns the bytes consumed in all.
// Feeds `in` in pieces of `step` bytes (0: all at once) as the proxy does: what a call did not
// read is offered again while the request is still open (Feed stops at the head's end).
size_t FeedInSteps(HttpRequestReader& r, const std::string& in, size_t step) {
  size_t at = 0;
  while (at < in.size()) {
    const size_t len = step == 0 ? in.size() - at : std::min(step, in.size() - at);
    const size_t got = r.Feed(in.data() + at, len);
    EXPECT_LE(got, len);
    at += got;
    const bool open = r.state() == State::kHead || r.state() == State::kBody;
    if (!open || (got == 0 && len > 0)) break;  // the rest is not this request's
  }
  return at;
}

void ExpectHead(const HttpRequestHead& h, const HttpRequestHead& want) {
  EXPECT_EQ(h.method, want.method);
  EXPECT_EQ(h.target, want.target);
  EXPECT_EQ(h.host, want.host);
  EXPECT_EQ(h.port, want.port);
  EXPECT_EQ(h.scheme, want.scheme);
  EXPECT_EQ(h.origin_form, want.origin_form);
  EXPECT_EQ(h.headers, want.headers);
  EXPECT_EQ(h.http_major, want.http_major);
  EXPECT_EQ(h.http_minor, want.http_minor);
}

const std::string kGet =
    "GET http://Example.COM.:8080/a/b?q=1#frag HTTP/1.1\r\n"
    "Host: example.com:8080\r\n"
    "User-Agent: t/1.0 \r\n"
    "X-Empty:\r\n"
    "Proxy-Connection: keep-alive\r\n"
    "\r\n";

HttpRequestHead GetHead() {
  HttpRequestHead want;
  want.method = "GET";
  want.target = "http://Example.COM.:8080/a/b?q=1#frag";
  want.host = "example.com";
  want.port = 8080;
  want.scheme = "http";
  want.origin_form = "/a/b?q=1";
  want.headers = {{"Host", "example.com:8080"},
                  {"User-Agent", "t/1.0"},
                  {"X-Empty", ""},
                  {"Proxy-Connection", "keep-alive"}};
  return want;
}

TEST(HttpRequestTest, AbsoluteFormGetInOnePieceAndByteByByte) {
  for (size_t step : {0, 1, 2, 3, 7}) {
    SCOPED_TRACE(step);
    HttpRequestReader r;
    EXPECT_EQ(FeedInSteps(r, kGet, step), kGet.size());
    EXPECT_EQ(r.state(), State::kComplete);
    ExpectHead(r.head(), GetHead());
    EXPECT_EQ(r.error(), "");
  }
}

TEST(HttpRequestTest, SplitAtEveryPositionGivesTheSameHead) {
  for (size_t at = 0; at <= kGet.size(); ++at) {
    SCOPED_TRACE(at);
    HttpRequestReader r;
    EXPECT_EQ(r.Feed(kGet.data(), at), at);
    EXPECT_EQ(r.state(), at == kGet.size() ? State::kComplete : State::kHead);
    EXPECT_EQ(r.Feed(kGet.data() + at, kGet.size() - at), kGet.size() - at);
    EXPECT_EQ(r.state(), State::kComplete);
    ExpectHead(r.head(), GetHead());
  }
}

TEST(HttpRequestTest, FindHeaderIgnoresCaseAndTakesTheFirst) {
  HttpRequestHead h;
  h.headers = {{"X-A", "1"}, {"Content-Type", "text/plain"}, {"x-a", "2"}};
  ASSERT_NE(FindHeader(h, "content-type"), nullptr);
  EXPECT_EQ(*FindHeader(h, "content-type"), "text/plain");
  EXPECT_EQ(*FindHeader(h, "CONTENT-TYPE"), "text/plain");
  EXPECT_EQ(*FindHeader(h, "x-A"), "1");
  EXPECT_EQ(FindHeader(h, "content-typ"), nullptr);
  EXPECT_EQ(FindHeader(h, "host"), nullptr);
}

TEST(HttpRequestTest, APipelinedRequestIsNeverRead) {
  const std::string first =
      "POST http://a.test/up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello";
  const std::string second = "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n";
  const std::string in = first + second;
  for (size_t step : {0, 1, 5}) {
    SCOPED_TRACE(step);
    HttpRequestReader r;
    EXPECT_EQ(FeedInSteps(r, in, step), first.size());
    EXPECT_EQ(r.state(), State::kComplete);
    EXPECT_EQ(r.head().host, "a.test");
    EXPECT_EQ(r.head().origin_form, "/up");
    // Whatever comes next is not read: the proxy closes after one request.
    EXPECT_EQ(r.Feed(second.data(), second.size()), 0u);
    EXPECT_EQ(r.state(), State::kComplete);
    EXPECT_EQ(r.head().host, "a.test");
  }
}

TEST(HttpRequestTest, HeadThenBodyInPieces) {
  const std::string head =
      "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\n";
  HttpRequestReader r;
  EXPECT_EQ(r.Feed(head.data(), head.size()), head.size());
  EXPECT_EQ(r.state(), State::kBody);
  EXPECT_EQ(r.head().method, "POST");
  EXPECT_EQ(r.Feed("hello", 5), 5u);
  EXPECT_EQ(r.state(), State::kBody);
  EXPECT_EQ(r.Feed("worldGET /", 10), 5u);
  EXPECT_EQ(r.state(), State::kComplete);
}

TEST(HttpRequestTest, ChunkedBodyToItsEndTrailersIncluded) {
  const std::string head =
      "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = "5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n";
  const std::string next = "GET http://b.test/ HTTP/1.1\r\n\r\n";
  for (size_t step : {0, 1, 4}) {
    SCOPED_TRACE(step);
    HttpRequestReader r;
    EXPECT_EQ(FeedInSteps(r, head + body + next, step), head.size() + body.size());
    EXPECT_EQ(r.state(), State::kComplete);
    // A trailer is body bytes for the proxy, not a header of the head.
    const Headers want = {{"Host", "a.test"}, {"Transfer-Encoding", "chunked"}};
    EXPECT_EQ(r.head().headers, want);
  }
  HttpRequestReader r;
  EXPECT_EQ(r.Feed(head.data(), head.size()), head.size());
  EXPECT_EQ(r.state(), State::kBody);
  const std::string bad = "zz\r\n";
  r.Feed(bad.data(), bad.size());
  EXPECT_EQ(r.state(), State::kMalformed);
  EXPECT_NE(r.error(), "");
  EXPECT_EQ(r.Feed(body.data(), body.size()), 0u);
}

TEST(HttpRequestTest, ABodyLongerThanAHeadMayBe) {
  const std::string body(3 * HttpRequestReader::kMaxHeadBytes, 'b');
  const std::string in =
      "PUT http://a.test/f HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  HttpRequestReader r;
  EXPECT_EQ(FeedInSteps(r, in, 0), in.size());
  EXPECT_EQ(r.state(), State::kComplete);
}

TEST(HttpRequestTest, ConnectLeavesTheTunnelsBytes) {
  struct Case {
    std::string head;
    std::string host;
    uint16_t port;
  } cases[] = {
      {"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n", "a.test", 443},
      {"CONNECT [2001:DB8::1]:8443 HTTP/1.1\r\n\r\n", "2001:db8::1", 8443},
      {"CONNECT 192.0.2.1:22 HTTP/1.0\r\n\r\n", "192.0.2.1", 22},
      // llhttp ends a CONNECT at its head: a Content-Length does not make tunnel bytes a body.
      {"CONNECT a.test:443 HTTP/1.1\r\nContent-Length: 3\r\n\r\n", "a.test", 443},
  };
  const std::string tls = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc"s;
  for (const Case& c : cases) {
    for (size_t step : {0, 1}) {
      SCOPED_TRACE(c.head + " step " + std::to_string(step));
      HttpRequestReader r;
      EXPECT_EQ(FeedInSteps(r, c.head + tls, step), c.head.size());
      EXPECT_EQ(r.state(), State::kComplete);
      EXPECT_EQ(r.head().method, "CONNECT");
      EXPECT_EQ(r.head().host, c.host);
      EXPECT_EQ(r.head().port, c.port);
      EXPECT_EQ(r.head().scheme, "");
      EXPECT_EQ(r.head().origin_form, "");
      EXPECT_EQ(r.Feed(tls.data(), tls.size()), 0u);
    }
  }
}

TEST(HttpRequestTest, Targets) {
  struct Case {
    std::string line;  // the request line without " HTTP/1.1"
    std::string host;
    uint16_t port;
    std::string origin_form;
  } cases[] = {
      {"GET http://a.test", "a.test", 80, "/"},
      {"GET HTTP://A.Test/", "a.test", 80, "/"},
      {"GET http://A.TEST./x", "a.test", 80, "/x"},
      {"GET http://a.test?q=1", "a.test", 80, "/?q=1"},
      {"GET http://a.test/p?q#f", "a.test", 80, "/p?q"},
      {"GET http://a.test:65535/", "a.test", 65535, "/"},
      {"GET http://a.test:00080/", "a.test", 80, "/"},
      {"GET http://my_host-1.a.test/", "my_host-1.a.test", 80, "/"},
      {"GET http://192.0.2.1:81/", "192.0.2.1", 81, "/"},
      {"GET http://[::1]:8080/x", "::1", 8080, "/x"},
      {"GET http://[2001:DB8::A]/", "2001:db8::a", 80, "/"},
      {"POST http://a.test/form", "a.test", 80, "/form"},
      {"CONNECT a.test:443", "a.test", 443, ""},
      {"CONNECT [::1]:8080", "::1", 8080, ""},
      {"CONNECT A.Test.:443", "a.test", 443, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string in = c.line + " HTTP/1.1\r\nHost: h\r\n\r\n";
    HttpRequestReader r;
    EXPECT_EQ(r.Feed(in.data(), in.size()), in.size());
    EXPECT_EQ(r.state(), State::kComplete) << r.error();
    EXPECT_EQ(r.head().host, c.host);
    EXPECT_EQ(r.head().port, c.port);
    EXPECT_EQ(r.head().origin_form, c.origin_form);
    EXPECT_EQ(r.head().scheme, c.line.starts_with("CONNECT") ? "" : "http");
  }

  // The request lines refused, by the reason they are given.
  const std::string kLlhttp = "(llhttp)";  // llhttp's own reason, whatever its words
  const struct {
    std::string error;
    std::vector<std::string> lines;
  } refused[] = {
      {"an https:// target is not sent to a proxy in the clear",
       {"GET https://a.test/", "GET HTTPS://a.test/"}},
      {"the request is for a server, not a proxy", {"GET /x", "OPTIONS *"}},
      {"a user name in the URL is refused",
       {"GET http://user@a.test/", "GET http://user:pw@a.test/", "GET http://a.test@evil.test/"}},
      {"the target is not an http:// URL", {"GET ftp://a.test/"}},
      {kLlhttp,
       {"GET a.test:80", "GET http://a.test#top", "GET http:a.test", "GET http://a\\b.test/"}},
      {"the host is missing", {"GET http:///x", "GET http://:80/"}},
      {"the port is not a number from 1 to 65535",
       {"GET http://a.test:0/", "GET http://a.test:65536/", "GET http://a.test:99999999999/",
        "GET http://a.test:8o/", "GET http://a.test:-1/", "GET http://a.test:/",
        "CONNECT a.test:0"}},
      {"the host is not a name",
       {"GET http://a%2etest/", "GET http://a..test/", "GET http://.a.test/", "GET http://./",
        "GET http://::1/", "CONNECT 2001:db8::1:443", "CONNECT http://a.test:443",
        "CONNECT user@a.test:443"}},
      {"an IPv6 literal's ']' is missing", {"GET http://[::1/"}},
      {"the host is not followed by ':port'", {"GET http://[::1]x/"}},
      {"the host is not an IPv6 address",
       {"GET http://[127.0.0.1]/", "GET http://[fe80::1%25eth0]/", "GET http://[]/"}},
      {"CONNECT needs host:port", {"CONNECT a.test", "CONNECT [::1]"}},
  };
  for (const auto& [error, lines] : refused) {
    for (const std::string& line : lines) {
      SCOPED_TRACE(line);
      const std::string in = line + " HTTP/1.1\r\nHost: h\r\n\r\n";
      HttpRequestReader r;
      r.Feed(in.data(), in.size());
      EXPECT_EQ(r.state(), State::kMalformed);
      if (error == kLlhttp) {
        EXPECT_NE(r.error(), "");
      } else {
        EXPECT_EQ(r.error(), error);
      }
      EXPECT_EQ(r.Feed(in.data(), in.size()), 0u);
    }
  }
}

TEST(HttpRequestTest, NoBodyByteIsReadBeforeTheHeadIsFoundFit) {
  const std::string head = "POST /upload HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\n";
  const std::string in = head + "body";
  HttpRequestReader r;
  EXPECT_EQ(r.Feed(in.data(), in.size()), head.size());
  EXPECT_EQ(r.state(), State::kMalformed);
  EXPECT_EQ(r.error(), "the request is for a server, not a proxy");
}

TEST(HttpRequestTest, HeadsAProxyMustNotForward) {
  struct Case {
    std::string in;
    std::string error;  // empty: llhttp's own reason, whatever its words
  } cases[] = {
      // Request smuggling: two ways to find the body's end.
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
       ""},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
       ""},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", ""},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: +3\r\n\r\n", ""},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", ""},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", ""},
      {"POST http://a.test/ HTTP/1.1\r\n Content-Length: 3\r\n\r\n", ""},
      {"GET http://a.test/ HTTP/1.1\r\nX : a\r\n\r\n", "a header name is not a token"},
      {"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nhost: evil.test\r\n\r\n",
       "more than one Host header"},
      // NUL and bare CR, which servers split headers at differently.
      {"GET http://a.test/ HTTP/1.1\r\nX: a\0b\r\n\r\n"s, ""},
      {"GET http://a.test/ HTTP/1.1\r\nX\0Y: a\r\n\r\n"s, ""},
      {"GET http://a.test/ HTTP/1.1\r\nX: a\rb\r\n\r\n", ""},
      {"GET http://a.test/ HTTP/1.1\r\nX: a\rHost: evil.test\r\n\r\n", ""},
      // Not HTTP/1.x.
      {"FOO http://a.test/ HTTP/1.1\r\n\r\n", ""},
      {"get http://a.test/ HTTP/1.1\r\n\r\n", ""},
      {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s, ""},
      {"SSH-2.0-OpenSSH_9.2\r\n", ""},
      {"GET http://a.test/ HTTP/2.0\r\n\r\n", "the HTTP version is not 1.x"},
      {"GET http://a.test/ HTTP/1.1 \r\n\r\n", ""},
      {"GET http://a.test/\x7f HTTP/1.1\r\n\r\n", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    for (size_t step : {0, 1}) {
      HttpRequestReader r;
      FeedInSteps(r, c.in, step);
      EXPECT_EQ(r.state(), State::kMalformed);
      if (c.error.empty()) {
        EXPECT_NE(r.error(), "");
      } else {
        EXPECT_EQ(r.error(), c.error);
      }
      EXPECT_EQ(r.Feed(c.in.data(), c.in.size()), 0u);
    }
  }
}

TEST(HttpRequestTest, AHeadLongerThanTheLimitIsTooLarge) {
  constexpr size_t kMax = HttpRequestReader::kMaxHeadBytes;
  const std::string start = "GET http://a.test/ HTTP/1.1\r\nX: ";
  const std::string end = "\r\n\r\n";
  // A head of exactly kMaxHeadBytes is read; one byte more is not, however it is fed.
  const std::string fits = start + std::string(kMax - start.size() - end.size(), 'a') + end;
  ASSERT_EQ(fits.size(), kMax);
  const std::string over = start + std::string(kMax - start.size() - end.size() + 1, 'a') + end;
  for (size_t step : {0, 1000, 4096}) {
    SCOPED_TRACE(step);
    HttpRequestReader ok;
    EXPECT_EQ(FeedInSteps(ok, fits, step), fits.size());
    EXPECT_EQ(ok.state(), State::kComplete);
    EXPECT_EQ(ok.head().headers.at(0).second.size(), kMax - start.size() - end.size());

    HttpRequestReader big;
    FeedInSteps(big, over, step);
    EXPECT_EQ(big.state(), State::kTooLarge);
    EXPECT_EQ(big.Feed(over.data(), over.size()), 0u);
  }
  // The limit is the head's alone: a body in the same feed does not count.
  const std::string post = "POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nX: ";
  const std::string post_fits =
      post + std::string(kMax - post.size() - end.size(), 'a') + end + "abcGET";
  HttpRequestReader with_body;
  EXPECT_EQ(with_body.Feed(post_fits.data(), post_fits.size()), kMax);  // the head, then
  EXPECT_EQ(with_body.state(), State::kBody);
  EXPECT_EQ(with_body.Feed(post_fits.data() + kMax, post_fits.size() - kMax), 3u);  // the body
  EXPECT_EQ(with_body.state(), State::kComplete);

  // A head that never ends: no more than the limit is taken from one large feed.
  const std::string endless = start + std::string(4 * kMax, 'a');
  HttpRequestReader r;
  EXPECT_EQ(r.Feed(endless.data(), endless.size()), kMax);
  EXPECT_EQ(r.state(), State::kTooLarge);
  EXPECT_EQ(r.error(), "the head is longer than 65536 bytes");
}

}  // namespace
}  // namespace ae::net
