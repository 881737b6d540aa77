// Request building and memory across a long thread, with and without context
// compaction. A thread grows as a long agent session does (commentary, encrypted reasoning, a
// call and a 2 KB output per step, one model request per step); with compaction the history is
// compacted as the turn loop does when the next request would reach the limit. Each benchmark
// builds the request the thread sends after `items` items and reports what is held then.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/bench_request.h"
#include "engine/compaction.h"
#include "engine/history.h"

namespace ae {
namespace {

// The limit the compacting runs use: a 56k-token window's auto-compact limit, so a
// 1,000-item thread compacts several times (gpt-4o's 115,200 would compact once, at ~620).
constexpr int64_t kLimit = 50000;

std::string StepItem(int i) {
  switch (i % 4) {
    case 0:
      return fmt::format(
          R"({{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"Step {} done; looking at the next file now."}}],"phase":"commentary"}})",
          i);
    case 1:
      return fmt::format(
          R"({{"type":"reasoning","summary":[{{"type":"summary_text","text":"Thinking about step {}"}}],"encrypted_content":"{}"}})",
          i, std::string(600, 'e'));
    case 2:
      return fmt::format(
          R"({{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"sed -n 1,200p src/f{}.cc\"}}","call_id":"call_{}"}})",
          i, i);
    default:
      return fmt::format(
          R"({{"type":"function_call_output","call_id":"call_{}","output":"Wall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n{}"}})",
          i - 1, std::string(2000, 'o'));
  }
}

struct Thread {
  std::vector<std::string> history;
  int compactions = 0;
  size_t peak_bytes = 0;
};

size_t Bytes(const std::vector<std::string>& items) {
  size_t n = 0;
  for (const std::string& s : items) n += s.size();
  return n;
}

// Grows a thread to `items` items (one request every 4 items, compaction checked before each).
Thread Grow(int items, bool compact) {
  Thread t;
  t.history.push_back(MessageInputItem("developer", std::string(20000, 'd')));
  t.history.push_back(MessageInputItem("user", "Fix the failing build."));
  ContextTracker context;
  for (int i = 0; i < items; ++i) {
    if (i % 4 == 0 && compact && context.Tokens(t.history) >= kLimit) {
      t.history = BuildCompactedHistory(t.history, std::string(2000, 's'), 20000);
      context.Reset();
      ++t.compactions;
    }
    t.history.push_back(StepItem(i));
    t.peak_bytes = std::max(t.peak_bytes, Bytes(t.history));
  }
  return t;
}

void BM_RequestAfterItems(benchmark::State& state) {
  const int items = static_cast<int>(state.range(0));
  const bool compact = state.range(1) != 0;
  Thread t = Grow(items, compact);
  Prompt p;
  p.input = t.history;
  p.tools_json =
      R"([{"type":"function","name":"exec_command","description":"Runs a command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}}])";
  const size_t request = bench::TimeResponsesRequest(state, p);
  state.counters["request_KB"] = static_cast<double>(request) / 1024;
  state.counters["history_KB"] = static_cast<double>(Bytes(t.history)) / 1024;
  state.counters["peak_history_KB"] = static_cast<double>(t.peak_bytes) / 1024;
  state.counters["items_held"] = static_cast<double>(t.history.size());
  state.counters["compactions"] = t.compactions;
}
BENCHMARK(BM_RequestAfterItems)
    ->ArgNames({"items", "compact"})
    ->ArgsProduct({{125, 250, 500, 750, 1000}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// One compaction of a thread at the limit: the history scan and the rebuilt history.
void BM_CompactAtTheLimit(benchmark::State& state) {
  Thread t = Grow(static_cast<int>(state.range(0)), false);
  for (auto _ : state) {
    std::vector<std::string> out = BuildCompactedHistory(t.history, std::string(2000, 's'), 20000);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["history_KB"] = static_cast<double>(Bytes(t.history)) / 1024;
}
BENCHMARK(BM_CompactAtTheLimit)->Arg(250)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ae
