// TurnContext: the immutable settings tools and the orchestrator work under for one turn.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/exec/approval.h"
#include "net/proxy.h"
#include "sandbox/policy.h"

namespace ae {

// shell_environment_policy: which variables model-run commands see.
struct ShellEnvPolicy {
  enum class Inherit { kAll, kCore, kNone };
  Inherit inherit = Inherit::kAll;
  bool ignore_default_excludes = false;  // default excludes: names containing KEY/SECRET/TOKEN
  std::vector<std::string> exclude;      // glob patterns, case-insensitive
  std::map<std::string, std::string> set;
  std::vector<std::string> include_only;  // glob patterns; empty = no filter
  // Variables agentexec reads a credential from (the provider's env_key, env_http_headers'
  // variables): never inherited by commands, whatever their names and the settings above.
  std::vector<std::string> credential_vars;
};

struct TurnContext {
  std::string cwd;  // absolute
  sandbox::Policy sandbox;
  ApprovalPolicy approval = ApprovalPolicy::kNever;
  ShellEnvPolicy shell_env;
  int64_t command_timeout_ms = 10000;         // when the model gives no timeout_ms
  size_t command_output_max_bytes = 1 << 20;  // kept per command for the event
  size_t model_output_max_bytes = 40000;  // fed back to the model, head+tail (codex: 10k tokens)
  int64_t progress_interval_ms = 0;       // --progress: item.updated for running commands; 0 = off
  // The egress proxy of a run with a network allow-list (sandbox.proxy_port set); else null.
  net::Proxy* proxy = nullptr;
  // With brokered credentials (net/credentials.h): what every command's environment gets on
  // top ("NAME=value": the dummies and the trust bundle's variables), and the broker whose real
  // values no variable may carry.
  std::vector<std::string> broker_env;
  const net::Broker* broker = nullptr;
  // Each connection a command attempted through it: host, port, and whether it got through
  // (for the result record's network summary). Called from the thread that reaps the command.
  std::function<void(const std::string& host, int port, bool reached)> on_connection;
};

}  // namespace ae
