// The request benchmarks' one way to time building a Responses body: the options a default
// run sends (gpt-5.5 at medium effort) and the loop around BuildResponsesRequest.
#pragma once

#include <cstddef>
#include <string>

#include <benchmark/benchmark.h>

#include "engine/model/request.h"

namespace ae::bench {

// Builds the body for `prompt` once per iteration; returns its size in bytes.
inline size_t TimeResponsesRequest(benchmark::State& state, const Prompt& prompt) {
  ModelOptions options;
  options.model = "gpt-5.5";
  options.reasoning_effort = "medium";
  size_t bytes = 0;
  for (auto _ : state) {
    std::string body = BuildResponsesRequest(options, prompt);
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  return bytes;
}

}  // namespace ae::bench
