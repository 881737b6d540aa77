// The egress policy: which hosts and ports a command may reach through the proxy, parsed once
// from the `[network]` keys (config/config_keys.cc) and asked by the proxy for every
// connection. Deny always wins; a host no rule allows is refused.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/name_table.h"
#include "base/result.h"
#include "net/address.h"

namespace ae::net {

// One entry of `allow` or `deny`, as written: "example.com" (that name), "*.example.com" (its
// subdomains, not the name itself), an IP literal ("192.0.2.7", "[2001:db8::1]"), each with
// an optional ":port" (":*" any port). Without a port an allow entry means the web's ports,
// 80 and 443; a deny entry means every port.
struct HostRule {
  std::string text;  // as written (a preset's entries name the preset: "@npm: registry.npmjs.org")
  std::string domain;  // lower-case, no trailing dot; "" for an IP literal
  bool subdomains = false;
  std::optional<IpAddress> ip;
  std::optional<uint16_t> port;  // nullopt: as above; 0: any port
};

// From the tightest to the loosest: a project config may not move `methods` down this list.
enum class Methods { kReadOnly, kAll };
inline constexpr std::array<NameEntry<Methods>, 2> kMethodsNames = {{
    {Methods::kReadOnly, "read-only"},
    {Methods::kAll, "all"},
}};
// codex's name for the same switch (`network.mode`): "limited" is read-only.
inline constexpr std::array<NameEntry<Methods>, 2> kCodexModeNames = {{
    {Methods::kReadOnly, "limited"},
    {Methods::kAll, "full"},
}};

struct Policy {
  std::vector<HostRule> allow;  // presets expanded
  std::vector<HostRule> deny;
  Methods methods = Methods::kAll;
  bool allow_private = false;
  // Proxied mode: a non-empty allow list (under workspace-write).
  bool active() const { return !allow.empty(); }
};

// Parses an `allow` or `deny` list (presets "@npm" expanded; an unknown preset or a malformed
// entry is an error naming it).
Result<std::vector<HostRule>> ParseRules(const std::vector<std::string>& entries, bool deny);

// Whether `rule`, as an allow entry, covers `host` on `port`.
bool AllowRuleMatches(const HostRule& rule, std::string_view host, uint16_t port);

// The documented presets: each "@name" and its entries, in one place (net/presets.cc).
struct Preset {
  std::string_view name;  // "@npm"
  std::string_view what;  // "npm and Yarn registries"
  std::vector<std::string_view> entries;
};
const std::vector<Preset>& Presets();

// Whether `host` (a name, lower-case, no trailing dot, or an IP literal's text) on `port` is
// allowed, and by which rule, or why not.
struct Decision {
  bool allowed = false;
  std::string rule;    // the rule that decided, as written ("" when none matched)
  std::string reason;  // for a refusal: "denied by network.deny" / "not in network.allow" / ...
};
Decision Decide(const Policy& policy, std::string_view host, uint16_t port);

// Whether an address `host` resolved to may be dialled: value classes (loopback, private,
// metadata, this host, ...) only with allow_private, or where an allow rule names that very
// IP literal. "" when it may, else what it is ("a loopback address").
std::string CheckAddress(const Policy& policy, const IpAddress& address, AddressClass cls);

// The line a refused command's output gets for the model: the host, the rule and how the user
// allows it.
std::string DenialHint(std::string_view host, uint16_t port, const Decision& decision);

}  // namespace ae::net
