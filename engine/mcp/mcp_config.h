// McpServerSpec: one configured MCP server, as the engine needs it (runner/ maps the
// `mcp_servers.NAME` config tables onto it): a stdio server (`command`) or a streamable-HTTP
// one (`url`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ae {

struct McpServerSpec {
  std::string name;  // the NAME of [mcp_servers.NAME]; must match [a-zA-Z0-9_-]+
  std::string command;
  std::vector<std::string> args;
  // The server sees only a few of our variables (HOME, LOGNAME, PATH, SHELL, USER, LANG,
  // LC_ALL, TERM, TMPDIR, TZ, as codex), plus those named in env_vars, plus env.
  std::map<std::string, std::string> env;
  std::vector<std::string> env_vars;
  std::string cwd;  // empty = ours
  // Streamable HTTP (instead of command): the endpoint, the bearer token (read from the
  // variable bearer_token_env_var names; nullopt when that variable is unset) and extra
  // headers ("Name" -> value, env_http_headers already resolved).
  std::string url;
  std::string bearer_token_env_var;
  std::optional<std::string> bearer_token;
  std::map<std::string, std::string> http_headers;
  int64_t startup_timeout_ms = 10000;                     // initialize + tools/list
  int64_t tool_timeout_ms = 60000;                        // each tools/call
  std::optional<std::vector<std::string>> enabled_tools;  // unset = every tool
  std::vector<std::string> disabled_tools;                // applied after enabled_tools
  bool required = false;  // the run cannot go on without it (see McpServers::RequiredFailure)
};

}  // namespace ae
