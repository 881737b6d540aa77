// Tools benchmarks: process spawn and capture cost, capture throughput, apply_patch.
#include <benchmark/benchmark.h>

#include "base/cancel.h"
#include "sandbox/spawn.h"

namespace {

void BM_RunProcessTrue(benchmark::State& state) {
  ae::CancelToken cancel;
  ae::sandbox::SpawnSpec spec{{"/bin/true"}, "/", {"PATH=/usr/bin:/bin"}, nullptr};
  for (auto _ : state) {
    auto r = ae::sandbox::RunProcess(spec, {}, cancel);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RunProcessTrue)->Unit(benchmark::kMicrosecond);

}  // namespace
