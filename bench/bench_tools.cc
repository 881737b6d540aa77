// Tools benchmarks: what running one command costs us over a bare fork/exec/wait, how fast
// output is captured, and apply_patch on a large file.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "base/cancel.h"
#include "bench/bench_dir.h"
#include "engine/events/emitter.h"
#include "engine/exec/orchestrator.h"
#include "engine/tools/apply_patch/applier.h"
#include "engine/tools/apply_patch/parser.h"
#include "engine/tools/router.h"
#include "sandbox/spawn.h"

namespace {

// The floor: fork, execve /bin/true, waitpid — no pipes, no process group, no capture.
void BM_BareForkExecWait(benchmark::State& state) {
  char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
  char* const envp[] = {nullptr};
  for (auto _ : state) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execve("/bin/true", argv, envp);
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    benchmark::DoNotOptimize(status);
  }
}
BENCHMARK(BM_BareForkExecWait)->Unit(benchmark::kMicrosecond)->UseRealTime();

// RunProcess: process group, pdeathsig, error pipe, output pipe, pidfd wait, group kill.
void BM_RunProcessTrue(benchmark::State& state) {
  ae::CancelToken cancel;
  ae::sandbox::SpawnSpec spec{{"/bin/true"}, "/", {"PATH=/usr/bin:/bin"}, nullptr};
  for (auto _ : state) {
    auto r = ae::sandbox::RunProcess(spec, {}, cancel);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RunProcessTrue)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The whole tool path for one command: JSON arguments, environment policy, item events,
// model text (the shell tool, so no login shell is involved).
void BM_ShellToolTrue(benchmark::State& state) {
  ae::TurnContext turn;
  turn.cwd = "/";
  turn.sandbox.mode = ae::sandbox::Mode::kDangerFullAccess;
  ae::Emitter emitter({});
  ae::CancelToken cancel;
  ae::Orchestrator orch(turn, nullptr);
  ae::ToolEnv env{turn, emitter, cancel, orch};
  auto router = ae::MakeDefaultRouter();
  std::vector<ae::ToolCall> calls = {{"c", "shell", R"({"command":["/bin/true"]})", false}};
  for (auto _ : state) {
    auto r = router->DispatchAll(calls, env);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ShellToolTrue)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Capture throughput: 64 MiB through the pipe into the bounded (1 MiB) head+tail buffer.
void BM_Capture64MiB(benchmark::State& state) {
  ae::CancelToken cancel;
  ae::sandbox::SpawnSpec spec{
      {"/usr/bin/head", "-c", "67108864", "/dev/zero"}, "/", {"PATH=/usr/bin:/bin"}, nullptr};
  for (auto _ : state) {
    auto r = ae::sandbox::RunProcess(spec, {}, cancel);
    if (!r.ok() || r->total_bytes != 67108864u) state.SkipWithError("capture failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * int64_t{67108864});
}
BENCHMARK(BM_Capture64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

// apply_patch on a 20,000-line file with 50 hunks: parse, verify (compute the new content
// and the diff), then commit atomically.
class PatchFixture {
 public:
  PatchFixture() {
    for (int i = 0; i < 20000; ++i) original_ += fmt::format("    value_{} = compute({});\n", i, i);
    patch_ = "*** Begin Patch\n*** Update File: big.py\n";
    for (int h = 0; h < 50; ++h) {
      int line = 200 + h * 390;
      patch_ += fmt::format("@@\n     value_{} = compute({});\n-    value_{} = compute({});\n",
                            line - 1, line - 1, line, line);
      patch_ += fmt::format("+    value_{} = compute({}) + 1;\n     value_{} = compute({});\n",
                            line, line, line + 1, line + 1);
    }
    patch_ += "*** End Patch\n";
    // As a workspace-write run sees it: the patch goes through the confined resolver.
    policy_.mode = ae::sandbox::Mode::kWorkspaceWrite;
    policy_.writable_roots = {std::filesystem::canonical(dir()).string()};
  }
  void Reset() const { std::ofstream(dir() + "/big.py", std::ios::binary) << original_; }
  const std::string& dir() const { return dir_.path(); }
  const std::string& patch() const { return patch_; }
  const ae::sandbox::Policy& policy() const { return policy_; }

 private:
  ae::bench::BenchDir dir_{"/tmp/ae-bench-patch"};
  std::string original_, patch_;
  ae::sandbox::Policy policy_;
};

void BM_ApplyPatchVerify20kLines50Hunks(benchmark::State& state) {
  PatchFixture f;
  f.Reset();
  for (auto _ : state) {
    auto parsed = ae::patch::ParsePatch(f.patch());
    auto plan = ae::patch::PlanPatch(*parsed, f.dir(), ae::sandbox::ConfinedFs(f.policy()));
    if (!plan.ok()) state.SkipWithError(plan.message().c_str());
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_ApplyPatchVerify20kLines50Hunks)->Unit(benchmark::kMicrosecond);

void BM_ApplyPatchCommit20kLines50Hunks(benchmark::State& state) {
  PatchFixture f;
  for (auto _ : state) {
    state.PauseTiming();
    f.Reset();
    state.ResumeTiming();
    auto parsed = ae::patch::ParsePatch(f.patch());
    const ae::sandbox::ConfinedFs cfs(f.policy());
    auto plan = ae::patch::PlanPatch(*parsed, f.dir(), cfs);
    if (!plan.ok()) state.SkipWithError(plan.message().c_str());
    auto s = ae::patch::Commit(*plan, cfs);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
}
BENCHMARK(BM_ApplyPatchCommit20kLines50Hunks)->Unit(benchmark::kMicrosecond);

}  // namespace
