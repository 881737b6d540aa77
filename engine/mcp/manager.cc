#include "engine/mcp/manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <thread>

#include "engine/mcp/mcp_tool.h"

namespace ae {
namespace {

bool ValidServerName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

struct Startup {
  const McpServerSpec* spec = nullptr;
  std::unique_ptr<McpClient> client;
  std::vector<McpTool> tools;
  std::string error;  // empty = it came up
};

// initialize + tools/list under one deadline, on its own thread.
void Handshake(Startup& s, CancelToken& cancel) {
  auto start = std::chrono::steady_clock::now();
  Status init = s.client->Initialize(s.spec->startup_timeout_ms, &cancel);
  if (!init.ok()) {
    s.error = init.message();
    return;
  }
  auto used = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  Result<std::vector<McpTool>> tools =
      s.client->ListTools(std::max<int64_t>(1, s.spec->startup_timeout_ms - used), &cancel);
  if (!tools.ok()) {
    s.error = tools.message();
    return;
  }
  s.tools = std::move(tools.value());
}

}  // namespace

bool McpToolAllowed(const McpServerSpec& spec, const std::string& tool) {
  if (spec.enabled_tools && std::find(spec.enabled_tools->begin(), spec.enabled_tools->end(),
                                      tool) == spec.enabled_tools->end()) {
    return false;
  }
  return std::find(spec.disabled_tools.begin(), spec.disabled_tools.end(), tool) ==
         spec.disabled_tools.end();
}

McpServers::~McpServers() {
  Stop();
}

McpServers McpServers::Start(const std::vector<McpServerSpec>& specs, Emitter& emitter,
                             CancelToken& cancel) {
  std::vector<Startup> starts(specs.size());
  // Spawned here, on the caller's thread, which outlives the servers: PR_SET_PDEATHSIG
  // follows the forking thread, so forking on a short-lived helper thread would kill them.
  for (size_t i = 0; i < specs.size(); ++i) {
    Startup& s = starts[i];
    s.spec = &specs[i];
    if (!ValidServerName(specs[i].name)) {
      s.error = "its name must match ^[a-zA-Z0-9_-]+$";
      continue;
    }
    Result<std::unique_ptr<McpClient>> c = McpClient::Spawn(specs[i]);
    if (!c.ok()) {
      s.error = c.message();
    } else {
      s.client = std::move(c.value());
    }
  }
  std::vector<std::thread> threads;
  for (Startup& s : starts) {
    if (s.client) threads.emplace_back([&s, &cancel] { Handshake(s, cancel); });
  }
  for (auto& t : threads) t.join();

  McpServers servers;
  std::set<std::string> used;
  for (Startup& s : starts) {
    if (!s.error.empty()) {
      std::string why = s.error;
      if (why.rfind("no answer to", 0) == 0) {
        why += fmt::format(" (raise startup_timeout_sec in [mcp_servers.{}] if it needs longer)",
                           s.spec->name);
      }
      emitter.CompleteNew(
          ErrorItem{fmt::format("MCP server '{}' failed to start: {}", s.spec->name, why)});
      if (s.client) s.client->Shutdown();
      if (s.spec->required) servers.failed_required_.push_back(s.spec->name);
      continue;
    }
    std::shared_ptr<McpClient> client(std::move(s.client));
    servers.clients_.push_back(client);
    for (McpTool& tool : s.tools) {
      if (!McpToolAllowed(*s.spec, tool.name)) continue;
      std::string name = QualifiedToolName(s.spec->name, tool.name);
      if (!used.insert(name).second) {
        emitter.CompleteNew(ErrorItem{
            fmt::format("MCP server '{}': tool '{}' skipped: its name {} is already taken",
                        s.spec->name, tool.name, name)});
        continue;
      }
      servers.tools_.push_back(
          Registered{client, std::move(tool), std::move(name), s.spec->tool_timeout_ms});
    }
  }
  return servers;
}

void McpServers::RegisterTools(ToolRouter& router) {
  for (const Registered& r : tools_) {
    router.Register(
        std::make_unique<McpToolHandler>(r.client, r.tool, r.qualified_name, r.timeout_ms));
  }
}

std::vector<std::string> McpServers::ToolNames() const {
  std::vector<std::string> names;
  for (const Registered& r : tools_) names.push_back(r.qualified_name);
  return names;
}

std::shared_ptr<McpClient> McpServers::client(const std::string& server) const {
  for (const auto& c : clients_) {
    if (c->name() == server) return c;
  }
  return nullptr;
}

std::optional<std::string> McpServers::RequiredFailure() const {
  if (failed_required_.empty()) return std::nullopt;
  std::string names;
  for (const std::string& n : failed_required_) names += (names.empty() ? "" : ", ") + n;
  return "required MCP servers failed to initialize: " + names;
}

void McpServers::Stop() {
  // Together, so N servers that ignore stdin closing cost one grace period, not N.
  std::vector<std::thread> threads;
  for (const auto& c : clients_) threads.emplace_back([c] { c->Shutdown(); });
  for (auto& t : threads) t.join();
  clients_.clear();
}

}  // namespace ae
