#include "engine/exec/env_policy.h"

#include <fnmatch.h>
#include <unistd.h>

#include <map>
#include <string_view>
#include <utility>

extern char** environ;

namespace ae {
namespace {

bool MatchesAny(const std::vector<std::string>& globs, const std::string& name) {
  for (const auto& g : globs) {
    if (::fnmatch(g.c_str(), name.c_str(), FNM_CASEFOLD) == 0) return true;
  }
  return false;
}

// Variables a shell needs to behave normally, and nothing that identifies a service.
bool IsCore(const std::string& name) {
  static const char* const kCore[] = {"HOME",     "LOGNAME", "PATH", "SHELL", "USER",
                                      "USERNAME", "TMPDIR",  "TEMP", "TMP",   "LANG"};
  for (const char* c : kCore) {
    if (name == c) return true;
  }
  return name.rfind("LC_", 0) == 0;
}

// Where agentexec itself may find the model key (engine/model/client.cc), whichever provider
// is in use.
constexpr const char* kKeyVariables[] = {"AGENTEXEC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY"};

}  // namespace

std::vector<std::string> BuildCommandEnv(const ShellEnvPolicy& policy,
                                         const std::vector<std::string>& parent,
                                         bool network_disabled) {
  std::map<std::string, std::string> vars;
  if (policy.inherit != ShellEnvPolicy::Inherit::kNone) {
    for (const auto& kv : parent) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      std::string name = kv.substr(0, eq);
      if (policy.inherit == ShellEnvPolicy::Inherit::kCore && !IsCore(name)) continue;
      vars[name] = kv.substr(eq + 1);
    }
  }
  static const std::vector<std::string> kDefaultExcludes = {"*KEY*", "*SECRET*", "*TOKEN*"};
  for (auto it = vars.begin(); it != vars.end();) {
    bool drop = (!policy.ignore_default_excludes && MatchesAny(kDefaultExcludes, it->first)) ||
                MatchesAny(policy.exclude, it->first);
    it = drop ? vars.erase(it) : std::next(it);
  }
  // Credentials go even when the defaults are off or the name says nothing (LLM_CRED); only
  // an explicit `set` below can put a value under such a name.
  for (const char* name : kKeyVariables) vars.erase(name);
  for (const std::string& name : policy.credential_vars) vars.erase(name);
  for (const auto& [name, value] : policy.set) vars[name] = value;
  if (!policy.include_only.empty()) {
    for (auto it = vars.begin(); it != vars.end();) {
      it = MatchesAny(policy.include_only, it->first) ? std::next(it) : vars.erase(it);
    }
  }
  if (network_disabled) vars["CODEX_SANDBOX_NETWORK_DISABLED"] = "1";

  std::vector<std::string> env;
  env.reserve(vars.size());
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::string> WithUnifiedExecEnv(std::vector<std::string> env) {
  static constexpr std::pair<std::string_view, std::string_view> kSet[] = {
      {"NO_COLOR", "1"},     {"TERM", "dumb"},  {"LANG", "C.UTF-8"}, {"LC_CTYPE", "C.UTF-8"},
      {"LC_ALL", "C.UTF-8"}, {"COLORTERM", ""}, {"PAGER", "cat"},    {"GIT_PAGER", "cat"},
      {"GH_PAGER", "cat"},   {"CODEX_CI", "1"}};
  std::map<std::string, std::string, std::less<>> vars;
  for (const std::string& kv : env) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [name, value] : kSet) vars[std::string(name)] = value;
  env.clear();
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<std::string> ProcessEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

}  // namespace ae
