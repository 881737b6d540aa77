#include "net/credentials.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>

#include "net/response_filter.h"

namespace ae::net {
namespace {

constexpr const char* kReal = "ghs_AbCdEf0123456789xyzXYZ0123456789ab";

std::unique_ptr<Broker> MakeBroker(std::vector<CredentialSpec> specs,
                                   std::map<std::string, std::string> env) {
  auto lookup = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Result<std::unique_ptr<TlsAuthority>> ca = TlsAuthority::Create("");
  EXPECT_TRUE(ca.ok());
  Result<std::unique_ptr<Broker>> broker = Broker::Create(specs, lookup, std::move(*ca));
  EXPECT_TRUE(broker.ok()) << (broker.ok() ? "" : broker.message());
  return broker.ok() ? std::move(*broker) : nullptr;
}

// The filter's whole output for one chunk. Feed must run before Finish, and the operands of
// `Feed(..) + Finish()` may be evaluated in either order (gcc runs Finish first).
std::string FedThenFinished(StreamFilter& filter, std::string_view chunk) {
  std::string out = filter.Feed(chunk);
  return out + filter.Finish();
}

std::string CreateError(std::vector<CredentialSpec> specs, std::map<std::string, std::string> env) {
  auto lookup = [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  Result<std::unique_ptr<TlsAuthority>> ca = TlsAuthority::Create("");
  Result<std::unique_ptr<Broker>> broker = Broker::Create(specs, lookup, std::move(ca.value()));
  return broker.ok() ? "" : broker.message();
}

HttpRequestHead Head(std::vector<std::pair<std::string, std::string>> headers,
                     std::string target = "/") {
  HttpRequestHead head;
  head.method = "GET";
  head.target = head.origin_form = std::move(target);
  head.headers = std::move(headers);
  return head;
}

TEST(Credentials, TheDummyHasTheValuesFormButNotItsValue) {
  const std::string dummy = MakeDummy(kReal);
  ASSERT_EQ(dummy.size(), std::string(kReal).size());
  EXPECT_NE(dummy, kReal);
  EXPECT_EQ(dummy.substr(0, 4), "ghs_");
  for (size_t i = 4; i < dummy.size(); ++i) EXPECT_NE(std::isalnum(dummy[i]), 0) << i;
  EXPECT_EQ(MakeDummy("glpat-abc123DEF456").substr(0, 6), "glpat-");
  // Only a vendor's public prefix is kept: a UUID's first group is the secret's own.
  const std::string uuid = MakeDummy("550e8400-e29b-41d4-a716-446655440000");
  EXPECT_NE(uuid.substr(0, 8), "550e8400");
  EXPECT_EQ(uuid[8], '-');
  EXPECT_EQ(uuid[13], '-');
  EXPECT_NE(MakeDummy("mytoken_abcdefghijklmnop").substr(0, 8), "mytoken_");
  // Hex stays hex: a tool that checks a 40-digit hex token accepts the dummy.
  const std::string hex = MakeDummy("0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(MakeDummy("00000000"), "00000000");
}

TEST(Credentials, OnlyTheFormsAClientSendsAreRewritten) {
  auto broker =
      MakeBroker({{"forge", {"git.example.com"}, "FORGE_TOKEN", ""}}, {{"FORGE_TOKEN", kReal}});
  ASSERT_TRUE(broker);
  const std::string dummy = broker->credentials()[0].dummy;
  std::string out;
  std::vector<std::string> used;
  ASSERT_TRUE(
      broker
          ->RewriteHeaders(Head({{"PRIVATE-TOKEN", dummy}, {"Authorization", "token " + dummy}}),
                           "git.example.com", 443, true, &out, &used)
          .ok());
  EXPECT_EQ(out,
            std::string("PRIVATE-TOKEN: ") + kReal + "\r\nAuthorization: token " + kReal + "\r\n");
  // Anywhere else a server could reflect it in a form the response filter does not know.
  const std::string odd =
      "in a form the broker does not rewrite (the whole value, \"Scheme DUMMY\", or Basic auth "
      "of user:DUMMY)";
  for (const std::string& value :
       {"Basic " + Base64Encode(dummy), "Basic " + Base64Encode("ab:" + dummy + "zz"),
        "Basic " + Base64Encode(dummy + ":x"), "x" + dummy, "Bearer " + dummy + " " + dummy}) {
    out.clear();
    EXPECT_EQ(broker
                  ->RewriteHeaders(Head({{"Authorization", value}}), "git.example.com", 443, true,
                                   &out, &used)
                  .message(),
              "the header Authorization carries the dummy of credential 'forge' " + odd)
        << value;
  }
  // Never in plain HTTP, not even to its own host.
  EXPECT_EQ(broker
                ->RewriteHeaders(Head({{"Authorization", "Bearer " + dummy}}), "git.example.com",
                                 80, false, &out, &used)
                .message(),
            "the header Authorization carries the dummy of credential 'forge' in plain HTTP; it "
            "goes to its hosts only over TLS");
}

TEST(Credentials, AStreamEndingInsideAValueGivesNoneOfIt) {
  // Named: a braced pair alone also reads as a vector's two iterators, which gcc calls
  // ambiguous.
  const std::pair<std::string, std::string> form{"SECRETVALUE", "DUMMYDUMMYX"};
  StreamFilter filter({form});
  EXPECT_EQ(FedThenFinished(filter, "body SECR"), "body DUMM");
}

TEST(Credentials, ValuesThatCannotBeBrokeredAreRefusedByName) {
  const CredentialSpec spec{"forge", {"git.example.com"}, "FORGE_TOKEN", ""};
  EXPECT_EQ(CreateError({spec}, {}),
            "network.credentials.forge: the variable FORGE_TOKEN is not set");
  EXPECT_EQ(CreateError({spec}, {{"FORGE_TOKEN", "short"}}),
            "network.credentials.forge: the value of FORGE_TOKEN is shorter than 8 characters; a "
            "dummy that short could be guessed");
  EXPECT_EQ(CreateError({spec}, {{"FORGE_TOKEN", "abc def ghi"}}),
            "network.credentials.forge: the value of FORGE_TOKEN holds a space or a control "
            "character; it cannot go into a header");
  EXPECT_EQ(CreateError({{"forge", {"bad host!"}, "FORGE_TOKEN", ""}}, {{"FORGE_TOKEN", kReal}})
                .substr(0, 33),
            "network.credentials.forge.hosts: ");
  EXPECT_EQ(CreateError({{"forge", {"git.example.com"}, "FORGE_TOKEN", "Authorization Bearer"}},
                        {{"FORGE_TOKEN", kReal}}),
            "network.credentials.forge.header: expected \"Name: text with {value} or "
            "{basic:USER}\", got \"Authorization Bearer\"");
}

TEST(Credentials, TheRealValueGoesOnlyIntoHeadersToItsHosts) {
  auto broker =
      MakeBroker({{"forge", {"git.example.com"}, "FORGE_TOKEN", ""}}, {{"FORGE_TOKEN", kReal}});
  ASSERT_TRUE(broker);
  const std::string dummy = broker->credentials()[0].dummy;
  EXPECT_TRUE(broker->Covers("git.example.com", 443));
  EXPECT_FALSE(broker->Covers("git.example.com", 22));
  EXPECT_FALSE(broker->Covers("example.com", 443));
  std::string out;
  std::vector<std::string> used;
  ASSERT_TRUE(broker
                  ->RewriteHeaders(Head({{"Host", "git.example.com"},
                                         {"Authorization", "Bearer " + dummy},
                                         {"Accept-Encoding", "gzip"},
                                         {"Proxy-Authorization", "x"}}),
                                   "git.example.com", 443, true, &out, &used)
                  .ok());
  EXPECT_EQ(out, std::string("Host: git.example.com\r\nAuthorization: Bearer ") + kReal + "\r\n");
  EXPECT_EQ(used, std::vector<std::string>{"forge"});
  // To any other host the dummy does not leave, in a header or in the target.
  out.clear();
  Status refused = broker->RewriteHeaders(Head({{"Authorization", "Bearer " + dummy}}),
                                          "evil.example", 443, true, &out, &used);
  EXPECT_EQ(refused.message(),
            "the header Authorization carries the dummy of credential 'forge', which goes only to "
            "its own hosts");
  EXPECT_EQ(broker->RewriteHeaders(Head({}, "/?t=" + dummy), "evil.example", 80, false, &out, &used)
                .message(),
            "the request's target carries the dummy of credential 'forge', which goes only to its "
            "own hosts");
}

TEST(Credentials, BasicAuthIsDecodedRewrittenAndReencoded) {
  auto broker =
      MakeBroker({{"forge", {"*.example.com"}, "FORGE_TOKEN", ""}}, {{"FORGE_TOKEN", kReal}});
  ASSERT_TRUE(broker);
  const std::string dummy = broker->credentials()[0].dummy;
  const HttpRequestHead head =
      Head({{"Authorization", "Basic " + Base64Encode("x-access-token:" + dummy)}});
  std::string out;
  std::vector<std::string> used;
  ASSERT_TRUE(broker->RewriteHeaders(head, "git.example.com", 443, true, &out, &used).ok());
  EXPECT_EQ(
      out, "Authorization: Basic " + Base64Encode(std::string("x-access-token:") + kReal) + "\r\n");
  // A response reflecting either form hands back the dummy's.
  StreamFilter filter(broker->ResponseForms("git.example.com", 443, head));
  const std::string reflected = std::string("auth=Basic ") +
                                Base64Encode(std::string("x-access-token:") + kReal) +
                                " token=" + kReal + "\n";
  std::string got;
  for (char c : reflected) got += filter.Feed(std::string_view(&c, 1));  // one byte at a time
  got += filter.Finish();
  EXPECT_EQ(got,
            "auth=Basic " + Base64Encode("x-access-token:" + dummy) + " token=" + dummy + "\n");
  EXPECT_EQ(filter.replaced(), 2u);
  EXPECT_EQ(got.find(kReal), std::string::npos);
}

TEST(Credentials, AHeaderTemplateIsSetByTheProxy) {
  auto broker =
      MakeBroker({{"api", {"api.example.com"}, "API_TOKEN", "Authorization: Bearer {value}"}},
                 {{"API_TOKEN", kReal}});
  ASSERT_TRUE(broker);
  std::string out;
  std::vector<std::string> used;
  ASSERT_TRUE(broker
                  ->RewriteHeaders(Head({{"authorization", "token whatever"}, {"Accept", "*/*"}}),
                                   "api.example.com", 443, true, &out, &used)
                  .ok());
  EXPECT_EQ(out, std::string("Accept: */*\r\nAuthorization: Bearer ") + kReal + "\r\n");
  EXPECT_EQ(broker->Environment(),
            std::vector<std::string>{"API_TOKEN=" + broker->credentials()[0].dummy});
}

TEST(Credentials, OneTokenServesGitByBasicAuthAndTheApiByBearer) {
  auto broker = MakeBroker(
      {{"git", {"github.com"}, "GH_TOKEN", "Authorization: Basic {basic:x-access-token}"},
       {"api", {"api.github.com"}, "GITHUB_TOKEN", "Authorization: Bearer {value}"}},
      {{"GH_TOKEN", kReal}, {"GITHUB_TOKEN", kReal}});
  ASSERT_TRUE(broker);
  std::string out;
  std::vector<std::string> used;
  ASSERT_TRUE(broker->RewriteHeaders(Head({}), "github.com", 443, true, &out, &used).ok());
  EXPECT_EQ(
      out, "Authorization: Basic " + Base64Encode(std::string("x-access-token:") + kReal) + "\r\n");
  // What the server reflects of the header the proxy set goes back as the dummy's.
  StreamFilter filter(broker->ResponseForms("github.com", 443, Head({})));
  const std::string dummy = broker->credentials()[0].dummy;
  EXPECT_EQ(FedThenFinished(filter, Base64Encode(std::string("x-access-token:") + kReal)),
            Base64Encode("x-access-token:" + dummy));
  out.clear();
  ASSERT_TRUE(broker->RewriteHeaders(Head({}), "api.github.com", 443, true, &out, &used).ok());
  EXPECT_EQ(out, std::string("Authorization: Bearer ") + kReal + "\r\n");
  EXPECT_EQ(used, (std::vector<std::string>{"git", "api"}));
}

// The response filter reads the framing: a value split by a chunk boundary is still caught,
// and an encoded body is refused in whichever response carries it.
TEST(ResponseFilter, AValueSplitByAChunkBoundaryIsStillReplaced) {
  ResponseFilter filter({{"SECRETVALUE", "DUMMYDUMMYX"}}, false);
  std::string out;
  ASSERT_TRUE(
      filter.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "7\r\nt=SECRE\r\n6\r\nTVALUE\r\n0\r\nX-Trailer: SECRETVALUE\r\n\r\n",
                  &out));
  ASSERT_TRUE(filter.Finish(&out));
  EXPECT_EQ(out.find("SECRET"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 0), 0u) << out;
  std::string body;
  for (size_t at = out.find("\r\n\r\n") + 4;;) {  // decode what the command gets
    const size_t eol = out.find("\r\n", at);
    const size_t n = std::stoul(out.substr(at, eol - at), nullptr, 16);
    if (n == 0) break;
    body += out.substr(eol + 2, n);
    at = eol + 2 + n + 2;
  }
  EXPECT_EQ(body, "t=DUMMYDUMMYX");
}

TEST(ResponseFilter, AnEncodedBodyIsRefusedEvenAfterAnInterimResponse) {
  ResponseFilter filter({{"SECRETVALUE", "DUMMYDUMMYX"}}, false);
  std::string out;
  EXPECT_FALSE(
      filter.Feed("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                  "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
                  &out));
  EXPECT_EQ(filter.error(),
            "answered with Content-Encoding: gzip, which the credential filter cannot read; the "
            "response was dropped");
  EXPECT_EQ(out, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
  ResponseFilter te({}, false);
  out.clear();
  EXPECT_FALSE(te.Feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &out));
  EXPECT_EQ(te.error(),
            "answered with Transfer-Encoding: gzip, chunked, which the credential filter cannot "
            "read; the response was dropped");
}

TEST(ResponseFilter, HeadsAndUnframedBodiesAreFilteredToo) {
  ResponseFilter filter({{"SECRETVALUE", "DUMMYDUMMYX"}}, false);
  std::string out;
  ASSERT_TRUE(filter.Feed("HTTP/1.1 401 No\r\nSet-Cookie: t=SECRETVALUE\r\n\r\nsaw SECRET", &out));
  ASSERT_TRUE(filter.Feed("VALUE and", &out));
  ASSERT_TRUE(filter.Finish(&out));  // the body ends with the connection
  EXPECT_EQ(out, "HTTP/1.1 401 No\r\nSet-Cookie: t=DUMMYDUMMYX\r\n\r\nsaw DUMMYDUMMYX and");
  ResponseFilter head({}, true);
  out.clear();
  ASSERT_TRUE(head.Feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", &out));
  ASSERT_TRUE(head.Finish(&out));
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
}

TEST(Credentials, Base64RoundTripsAndRefusesGarbage) {
  for (const std::string s : {"", "a", "ab", "abc", "abcd", "user:pa$$word"}) {
    std::string back;
    ASSERT_TRUE(Base64Decode(Base64Encode(s), &back)) << s;
    EXPECT_EQ(back, s);
  }
  EXPECT_EQ(Base64Encode("user:pw"), "dXNlcjpwdw==");
  std::string out;
  EXPECT_FALSE(Base64Decode("abc", &out));
  EXPECT_FALSE(Base64Decode("ab=c", &out));
  EXPECT_FALSE(Base64Decode("a!==", &out));
}

}  // namespace
}  // namespace ae::net
