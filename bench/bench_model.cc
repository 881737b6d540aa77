// Model wire micro-benchmarks: SSE parsing throughput on a large recorded-style stream (alone
// and with the Responses event decoder), and building request bodies from a long history.
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/bench_request.h"
#include "engine/model/request.h"
#include "engine/model/responses.h"
#include "engine/model/sse.h"

namespace ae {
namespace {

// A Responses stream shaped like a real one: many small text deltas, and output items of
// a few hundred bytes, ~`target` bytes in all, CRLF and LF line ends mixed.
std::string SyntheticStream(size_t target) {
  std::string s =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":"
      "\"resp_1\",\"status\":\"in_progress\"}}\n\n";
  int n = 0;
  while (s.size() < target) {
    const char* eol = (n % 2) ? "\r\n" : "\n";
    s += fmt::format(
        "event: response.output_text.delta{0}data: {{\"type\":\"response.output_text.delta\","
        "\"output_index\":{1},\"content_index\":0,\"item_id\":\"msg_{1}\",\"delta\":\"token {1} "
        "of the answer \"}}{0}{0}",
        eol, n);
    if (n % 20 == 19) {
      s += fmt::format(
          ": keep-alive\nevent: response.output_item.done\ndata: {{\"type\":\"response.output_"
          "item.done\",\"output_index\":{0},\"item\":{{\"type\":\"function_call\",\"id\":\"fc_{0}"
          "\",\"name\":\"exec_command\",\"arguments\":\"{{\\\"cmd\\\":\\\"cat src/file_{0}.cc | "
          "head -n 200 && echo done\\\"}}\",\"call_id\":\"call_{0}\"}}}}\n\n",
          n);
    }
    ++n;
  }
  return s;
}

const std::string& Stream() {
  static const std::string s = SyntheticStream(8 << 20);
  return s;
}

void BM_SseParse(benchmark::State& state) {
  const std::string& stream = Stream();
  const size_t chunk = static_cast<size_t>(state.range(0));
  size_t events = 0;
  for (auto _ : state) {
    SseParser parser;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      Status s = parser.Feed(std::string_view(stream).substr(i, chunk),
                             [&](SseEvent& e) { events += e.data.size() > 0; });
      if (!s.ok()) state.SkipWithError(s.message().c_str());
    }
  }
  benchmark::DoNotOptimize(events);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
}
BENCHMARK(BM_SseParse)->Arg(1 << 14)->Arg(512)->Unit(benchmark::kMillisecond);

class NullObserver : public StreamObserver {};

void BM_SseParseAndDecodeResponses(benchmark::State& state) {
  const std::string& stream = Stream();
  NullObserver observer;
  size_t items = 0;
  for (auto _ : state) {
    SseParser parser;
    auto decoder = MakeResponsesDecoder(observer);
    bool fatal = false;
    for (size_t i = 0; i < stream.size(); i += 1 << 14) {
      Status s = parser.Feed(std::string_view(stream).substr(i, 1 << 14), [&](SseEvent& e) {
        Status d = decoder->OnEvent(e, &fatal);
        if (!d.ok()) state.SkipWithError(d.message().c_str());
      });
      if (!s.ok()) state.SkipWithError(s.message().c_str());
    }
    items += decoder->TakeResponse().items.size();
  }
  benchmark::DoNotOptimize(items);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * stream.size()));
}
BENCHMARK(BM_SseParseAndDecodeResponses)->Unit(benchmark::kMillisecond);

// A history of `n` items as a long agent session has: messages, calls and sizeable outputs.
Prompt LongHistory(int n) {
  Prompt p;
  p.input.push_back(
      R"({"type":"message","role":"developer","content":[{"type":"input_text","text":")" +
      std::string(20000, 'd') + R"("}]})");
  for (int i = 1; i < n; ++i) {
    switch (i % 4) {
      case 0:
        p.input.push_back(fmt::format(
            R"({{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"Step {} done; looking at the next file now."}}],"phase":"commentary"}})",
            i));
        break;
      case 1:
        p.input.push_back(fmt::format(
            R"({{"type":"reasoning","summary":[{{"type":"summary_text","text":"Thinking about step {}"}}],"encrypted_content":"{}"}})",
            i, std::string(600, 'e')));
        break;
      case 2:
        p.input.push_back(fmt::format(
            R"({{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"sed -n 1,200p src/f{}.cc\"}}","call_id":"call_{}"}})",
            i, i));
        break;
      default:
        p.input.push_back(fmt::format(
            R"({{"type":"function_call_output","call_id":"call_{}","output":"Chunk ID: abc123\nWall time: 0.0100 seconds\nProcess exited with code 0\nOutput:\n{}"}})",
            i - 1, std::string(2000, 'o')));
    }
  }
  p.tools_json =
      R"([{"type":"function","name":"exec_command","description":"Runs a command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"],"additionalProperties":false}},{"type":"custom","name":"apply_patch","description":"Patch.","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}])";
  return p;
}

void BM_BuildResponsesRequest(benchmark::State& state) {
  Prompt p = LongHistory(static_cast<int>(state.range(0)));
  const size_t bytes = bench::TimeResponsesRequest(state, p);
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}
BENCHMARK(BM_BuildResponsesRequest)->Arg(500)->Unit(benchmark::kMicrosecond);

void BM_BuildChatRequest(benchmark::State& state) {
  Prompt p = LongHistory(static_cast<int>(state.range(0)));
  ModelOptions o;
  o.model = "llama3";
  size_t bytes = 0;
  for (auto _ : state) {
    auto body = BuildChatRequest(o, p);
    bytes += body->size();
    benchmark::DoNotOptimize(body->data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_BuildChatRequest)->Arg(500)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ae
