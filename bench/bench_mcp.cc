// MCP over stdio against tests/support/mcp_server.py: what a tools/call round trip costs us
// (pipes, JSON-RPC, the reader thread), a whole server start (spawn, initialize, tools/list,
// shutdown: mostly the Python interpreter), and turning a large result into model output.
#include <benchmark/benchmark.h>

#include <string>

#include "engine/mcp/client.h"
#include "engine/mcp/mcp_tool.h"

namespace ae {
namespace {

McpServerSpec BenchSpec() {
  McpServerSpec s;
  s.name = "bench";
  s.command = "python3";
  s.args = {AE_SOURCE_DIR "/tests/support/mcp_server.py"};
  return s;
}

void BM_McpToolCallRoundTrip(benchmark::State& state) {
  Result<std::unique_ptr<McpClient>> c = McpClient::Spawn(BenchSpec());
  if (!c.ok() || !(*c)->Initialize(10000, nullptr).ok()) {
    state.SkipWithError("the MCP test server did not start");
    return;
  }
  std::string args = R"({"text":")" + std::string(state.range(0), 'x') + R"("})";
  for (auto _ : state) {
    Result<McpCallResult> r = (*c)->CallTool("echo", args, 10000, nullptr);
    if (!r.ok()) state.SkipWithError(r.message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0) * 2);
}
BENCHMARK(BM_McpToolCallRoundTrip)->Arg(16)->Arg(64 << 10)->Unit(benchmark::kMicrosecond);

void BM_McpServerStartAndStop(benchmark::State& state) {
  for (auto _ : state) {
    Result<std::unique_ptr<McpClient>> c = McpClient::Spawn(BenchSpec());
    if (!c.ok() || !(*c)->Initialize(10000, nullptr).ok()) {
      state.SkipWithError("the MCP test server did not start");
      return;
    }
    Result<std::vector<McpTool>> tools = (*c)->ListTools(10000, nullptr);
    benchmark::DoNotOptimize(tools);
    (*c)->Shutdown();
  }
}
BENCHMARK(BM_McpServerStartAndStop)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_McpModelOutput(benchmark::State& state) {
  McpCallResult r;
  r.content_json = "[";
  for (int i = 0; i < 1000; ++i) {
    if (i > 0) r.content_json += ',';
    r.content_json += R"({"type":"text","text":"line )" + std::to_string(i) + R"( of the result"})";
  }
  r.content_json += "]";
  for (auto _ : state) benchmark::DoNotOptimize(McpModelOutput(r));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(r.content_json.size()));
}
BENCHMARK(BM_McpModelOutput)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ae
