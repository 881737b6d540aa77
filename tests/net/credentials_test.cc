#include "net/credentials.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>

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
  for (size_t i = 4; i < dummy.size(); ++i) {
    const char a = kReal[i], b = dummy[i];
    EXPECT_EQ(std::isdigit(a) != 0, std::isdigit(b) != 0) << i;
    EXPECT_EQ(std::isupper(a) != 0, std::isupper(b) != 0) << i;
  }
  EXPECT_EQ(MakeDummy("glpat-abc123DEF456").substr(0, 6), "glpat-");
  // Hex stays hex: a tool that checks a 40-digit hex token accepts the dummy.
  const std::string hex = MakeDummy("0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(MakeDummy("00000000"), "00000000");
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
                                         {"Proxy-Authorization", "x"},
                                         {"X-Echo", "a " + dummy + " b"}}),
                                   "git.example.com", 443, &out, &used)
                  .ok());
  EXPECT_EQ(out, std::string("Host: git.example.com\r\nAuthorization: Bearer ") + kReal +
                     "\r\nX-Echo: a " + kReal + " b\r\n");
  EXPECT_EQ(used, std::vector<std::string>{"forge"});
  // To any other host the dummy does not leave, in a header or in the target.
  out.clear();
  Status refused = broker->RewriteHeaders(Head({{"Authorization", "Bearer " + dummy}}),
                                          "evil.example", 443, &out, &used);
  EXPECT_EQ(refused.message(),
            "the header Authorization carries the dummy of credential 'forge', which goes only to "
            "its own hosts");
  EXPECT_EQ(
      broker->RewriteHeaders(Head({}, "/?t=" + dummy), "evil.example", 80, &out, &used).message(),
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
  ASSERT_TRUE(broker->RewriteHeaders(head, "git.example.com", 443, &out, &used).ok());
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
                                   "api.example.com", 443, &out, &used)
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
  ASSERT_TRUE(broker->RewriteHeaders(Head({}), "github.com", 443, &out, &used).ok());
  EXPECT_EQ(
      out, "Authorization: Basic " + Base64Encode(std::string("x-access-token:") + kReal) + "\r\n");
  // What the server reflects of the header the proxy set goes back as the dummy's.
  StreamFilter filter(broker->ResponseForms("github.com", 443, Head({})));
  const std::string dummy = broker->credentials()[0].dummy;
  EXPECT_EQ(filter.Feed(Base64Encode(std::string("x-access-token:") + kReal)) + filter.Finish(),
            Base64Encode("x-access-token:" + dummy));
  out.clear();
  ASSERT_TRUE(broker->RewriteHeaders(Head({}), "api.github.com", 443, &out, &used).ok());
  EXPECT_EQ(out, std::string("Authorization: Bearer ") + kReal + "\r\n");
  EXPECT_EQ(used, (std::vector<std::string>{"git", "api"}));
}

TEST(Credentials, AnEncodedBodyIsNamed) {
  EXPECT_EQ(EncodedBody("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3"), "");
  EXPECT_EQ(EncodedBody("HTTP/1.1 200 OK\r\ncontent-encoding:  gzip \r\nX: y"), "gzip");
  EXPECT_EQ(EncodedBody("HTTP/1.1 200 OK\r\nContent-Encoding: identity"), "");
  EXPECT_EQ(EncodedBody("HTTP/1.1 200 OK\r\nX-Content-Encoding: br"), "");
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
