#include "net/policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "net/host_name.h"

namespace ae::net {
namespace {

Result<HostRule> ParseOne(std::string_view text, std::string_view label) {
  HostRule rule;
  rule.text = std::string(label);
  std::string_view host = text;
  std::string_view port;
  if (host.starts_with("[")) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) {
      return MakeError(fmt::format("'{}': an IPv6 literal's ']' is missing", text));
    }
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return MakeError(fmt::format("'{}': expected ':port'", text));
      port = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    if (host.find(':') != colon) {
      return MakeError(fmt::format("'{}': write an IPv6 literal in brackets, [::1]:443", text));
    }
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
  }
  if (text.find(':') != std::string_view::npos && port.empty() && !text.starts_with("[")) {
    return MakeError(fmt::format("'{}': the port after ':' is missing", text));
  }
  if (port == "*") {
    rule.port = 0;
  } else if (!port.empty()) {
    unsigned value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) {
        return MakeError(fmt::format("'{}': the port must be 1-65535 or *", text));
      }
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) {
      return MakeError(fmt::format("'{}': the port must be 1-65535 or *", text));
    }
    rule.port = static_cast<uint16_t>(value);
  }
  if (std::optional<IpAddress> ip = ParseIpLiteral(host)) {
    rule.ip = *ip;
    return rule;
  }
  std::string_view name_text = host;
  if (name_text.starts_with("*.")) {
    rule.subdomains = true;
    name_text.remove_prefix(2);
  }
  std::string name = NormalizeHostName(name_text);
  if (name.empty()) {
    return MakeError(
        fmt::format("'{}' is not a host pattern: write a name (example.com), its subdomains "
                    "(*.example.com) or an IP literal, with an optional :port",
                    text));
  }
  rule.domain = std::move(name);
  return rule;
}

bool MatchesHost(const HostRule& rule, std::string_view host,
                 const std::optional<IpAddress>& host_ip) {
  if (rule.ip) return host_ip && *host_ip == *rule.ip;
  if (host_ip) return false;
  if (!rule.subdomains) return host == rule.domain;
  return host.size() > rule.domain.size() + 1 && host.ends_with(rule.domain) &&
         host[host.size() - rule.domain.size() - 1] == '.';
}

bool MatchesPort(const HostRule& rule, uint16_t port, bool deny) {
  if (!rule.port) return deny || port == 80 || port == 443;
  return *rule.port == 0 || *rule.port == port;
}

}  // namespace

bool AllowRuleMatches(const HostRule& rule, std::string_view host, uint16_t port) {
  return MatchesHost(rule, host, ParseIpLiteral(host)) && MatchesPort(rule, port, false);
}

Result<std::vector<HostRule>> ParseRules(const std::vector<std::string>& entries, bool deny) {
  std::vector<HostRule> rules;
  for (const std::string& entry : entries) {
    if (entry.starts_with("@")) {
      const std::vector<Preset>& presets = Presets();
      auto preset = std::find_if(presets.begin(), presets.end(),
                                 [&](const Preset& p) { return p.name == entry; });
      if (preset == presets.end()) {
        std::string names;
        for (const Preset& p : presets) names += (names.empty() ? "" : ", ") + std::string(p.name);
        return MakeError(fmt::format("unknown preset '{}' (presets: {})", entry, names));
      }
      if (deny) return MakeError(fmt::format("'{}': a preset can only be allowed", entry));
      for (std::string_view item : preset->entries) {
        Result<HostRule> rule = ParseOne(item, fmt::format("{}: {}", entry, item));
        if (!rule.ok()) return rule.error();
        rules.push_back(std::move(*rule));
      }
      continue;
    }
    Result<HostRule> rule = ParseOne(entry, entry);
    if (!rule.ok()) return rule.error();
    rules.push_back(std::move(*rule));
  }
  return rules;
}

Decision Decide(const Policy& policy, std::string_view host, uint16_t port) {
  const std::optional<IpAddress> ip = ParseIpLiteral(host);
  Decision d;
  for (const HostRule& rule : policy.deny) {
    if (MatchesHost(rule, host, ip) && MatchesPort(rule, port, true)) {
      d.rule = rule.text;
      d.reason = "denied by network.deny";
      return d;
    }
  }
  bool host_listed = false;
  for (const HostRule& rule : policy.allow) {
    if (!MatchesHost(rule, host, ip)) continue;
    host_listed = true;
    if (MatchesPort(rule, port, false)) {
      d.allowed = true;
      d.rule = rule.text;
      return d;
    }
  }
  d.reason = host_listed ? fmt::format("port {} is not allowed for this host", port)
                         : "not in network.allow";
  return d;
}

std::string CheckAddress(const Policy& policy, const IpAddress& address, AddressClass cls) {
  if (cls == AddressClass::kPublic || policy.allow_private) return "";
  for (const HostRule& rule : policy.allow) {
    if (rule.ip && *rule.ip == address) return "";
  }
  if (cls == AddressClass::kThisHost) return "this host's own address";
  return fmt::format("{} {} address", cls == AddressClass::kUnspecified ? "an" : "a",
                     AddressClassName(cls));
}

std::string DenialHint(std::string_view host, uint16_t port, const Decision& decision) {
  const bool ip = ParseIpLiteral(host).has_value();
  const std::string shown = ip && host.find(':') != std::string_view::npos
                                ? fmt::format("[{}]", host)
                                : std::string(host);
  std::string how;
  if (decision.reason == "denied by network.deny") {
    how = fmt::format("the rule '{}' of network.deny refuses it", decision.rule);
  } else if (port == 80 || port == 443) {
    how = fmt::format("to allow it, add \"{}\" to network.allow (--allow-host {})", shown, shown);
  } else {
    how = fmt::format("to allow it, add \"{}:{}\" to network.allow (--allow-host {}:{})", shown,
                      port, shown, port);
  }
  return fmt::format("agentexec: network: {}:{} refused ({}); {}", shown, port, decision.reason,
                     how);
}

}  // namespace ae::net
