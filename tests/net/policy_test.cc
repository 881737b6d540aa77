// The allow-list's decisions: patterns, ports, presets, deny winning, and the address checks.
#include "net/policy.h"

#include <gtest/gtest.h>

namespace ae::net {
namespace {

Policy Make(const std::vector<std::string>& allow, const std::vector<std::string>& deny = {}) {
  Policy p;
  Result<std::vector<HostRule>> a = ParseRules(allow, false);
  EXPECT_TRUE(a.ok()) << a.message();
  Result<std::vector<HostRule>> d = ParseRules(deny, true);
  EXPECT_TRUE(d.ok()) << d.message();
  if (a.ok()) p.allow = *a;
  if (d.ok()) p.deny = *d;
  return p;
}

std::string Verdict(const Policy& p, const char* host, uint16_t port) {
  Decision d = Decide(p, host, port);
  return d.allowed ? "allowed by " + d.rule : "refused: " + d.reason + " [" + d.rule + "]";
}

TEST(NetPolicyTest, NamesSubdomainsAndPorts) {
  const Policy p = Make({"example.com", "*.pkg.dev", "git.example.com:22", "any.test:*",
                         "192.0.2.7:8443", "[2001:db8::1]"});
  struct Case {
    const char* host;
    uint16_t port;
    const char* want;
  } cases[] = {
      {"example.com", 443, "allowed by example.com"},
      {"example.com", 80, "allowed by example.com"},
      {"example.com", 8080, "refused: port 8080 is not allowed for this host []"},
      {"www.example.com", 443, "refused: not in network.allow []"},
      {"notexample.com", 443, "refused: not in network.allow []"},
      {"a.pkg.dev", 443, "allowed by *.pkg.dev"},
      {"a.b.pkg.dev", 443, "allowed by *.pkg.dev"},
      {"pkg.dev", 443, "refused: not in network.allow []"},
      {"xpkg.dev", 443, "refused: not in network.allow []"},
      {"git.example.com", 22, "allowed by git.example.com:22"},
      {"git.example.com", 443, "refused: port 443 is not allowed for this host []"},
      {"any.test", 5432, "allowed by any.test:*"},
      {"192.0.2.7", 8443, "allowed by 192.0.2.7:8443"},
      {"192.0.2.7", 443, "refused: port 443 is not allowed for this host []"},
      {"2001:db8::1", 443, "allowed by [2001:db8::1]"},
      {"2001:db8:0:0::1", 80, "allowed by [2001:db8::1]"},
  };
  for (const Case& c : cases) EXPECT_EQ(Verdict(p, c.host, c.port), c.want) << c.host;
}

TEST(NetPolicyTest, DenyWinsOnEveryPortAndPresetsExpand) {
  const Policy p =
      Make({"@npm", "*.example.com"}, {"evil.example.com", "registry.yarnpkg.com:443"});
  EXPECT_EQ(Verdict(p, "registry.npmjs.org", 443), "allowed by @npm: registry.npmjs.org");
  EXPECT_EQ(Verdict(p, "evil.example.com", 443),
            "refused: denied by network.deny [evil.example.com]");
  EXPECT_EQ(Verdict(p, "evil.example.com", 8080),
            "refused: denied by network.deny [evil.example.com]");
  EXPECT_EQ(Verdict(p, "registry.yarnpkg.com", 443),
            "refused: denied by network.deny [registry.yarnpkg.com:443]");
  EXPECT_EQ(Verdict(p, "registry.yarnpkg.com", 80), "allowed by @npm: registry.yarnpkg.com");
}

TEST(NetPolicyTest, MalformedEntriesAreRefusedByName) {
  struct Case {
    const char* entry;
    bool deny;
    const char* error;
  } cases[] = {
      {"@nope", false,
       "unknown preset '@nope' (presets: @npm, @pypi, @crates, @go, @maven, @rubygems, @debian, "
       "@github, @gitlab)"},
      {"@npm", true, "'@npm': a preset can only be allowed"},
      {"example.com:", false, "'example.com:': the port after ':' is missing"},
      {"example.com:0", false, "'example.com:0': the port must be 1-65535 or *"},
      {"example.com:70000", false, "'example.com:70000': the port must be 1-65535 or *"},
      {"exa mple.com", false,
       "'exa mple.com' is not a host pattern: write a name (example.com), its subdomains "
       "(*.example.com) or an IP literal, with an optional :port"},
      {"a.*.com", false,
       "'a.*.com' is not a host pattern: write a name (example.com), its subdomains "
       "(*.example.com) or an IP literal, with an optional :port"},
      {"::1", false, "'::1': write an IPv6 literal in brackets, [::1]:443"},
      {"[::1", false, "'[::1': an IPv6 literal's ']' is missing"},
      {"", false,
       "'' is not a host pattern: write a name (example.com), its subdomains "
       "(*.example.com) or an IP literal, with an optional :port"},
  };
  for (const Case& c : cases) {
    Result<std::vector<HostRule>> r = ParseRules({c.entry}, c.deny);
    ASSERT_FALSE(r.ok()) << c.entry;
    EXPECT_EQ(r.message(), c.error);
  }
}

TEST(NetPolicyTest, NamesAreCaseAndTrailingDotInsensitive) {
  const Policy p = Make({"Example.COM."});
  EXPECT_EQ(Verdict(p, "example.com", 443), "allowed by Example.COM.");
}

TEST(NetPolicyTest, PrivateAddressesOnlyWhenAllowedOrListed) {
  Policy p = Make({"internal.test", "10.1.2.3"});
  const IpAddress loopback = *ParseIpLiteral("127.0.0.1");
  const IpAddress listed = *ParseIpLiteral("10.1.2.3");
  const IpAddress metadata = *ParseIpLiteral("169.254.169.254");
  EXPECT_EQ(CheckAddress(p, loopback, AddressClass::kLoopback), "a loopback address");
  EXPECT_EQ(CheckAddress(p, metadata, AddressClass::kMetadata), "a metadata address");
  EXPECT_EQ(CheckAddress(p, listed, AddressClass::kPrivate), "");
  EXPECT_EQ(CheckAddress(p, *ParseIpLiteral("192.0.2.9"), AddressClass::kThisHost),
            "this host's own address");
  EXPECT_EQ(CheckAddress(p, *ParseIpLiteral("0.0.0.0"), AddressClass::kUnspecified),
            "an unspecified address");
  p.allow_private = true;
  EXPECT_EQ(CheckAddress(p, loopback, AddressClass::kLoopback), "");
}

TEST(NetPolicyTest, TheHintNamesHostRuleAndRemedy) {
  const Policy p = Make({"example.com"}, {"bad.test"});
  struct Case {
    const char* host;
    uint16_t port;
    const char* hint;
  } cases[] = {
      {"other.test", 443,
       "agentexec: network: other.test:443 refused (not in network.allow); to allow it, add "
       "\"other.test\" to network.allow (--allow-host other.test)"},
      {"example.com", 22,
       "agentexec: network: example.com:22 refused (port 22 is not allowed for this host); to "
       "allow it, add \"example.com:22\" to network.allow (--allow-host example.com:22)"},
      {"bad.test", 443,
       "agentexec: network: bad.test:443 refused (denied by network.deny); the rule 'bad.test' "
       "of network.deny refuses it"},
      {"::1", 80,
       "agentexec: network: [::1]:80 refused (not in network.allow); to allow it, add \"[::1]\" "
       "to network.allow (--allow-host [::1])"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DenialHint(c.host, c.port, Decide(p, c.host, c.port)), c.hint);
  }
}

}  // namespace
}  // namespace ae::net
