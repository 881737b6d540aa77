// What confinement costs: a bare fork/exec of /bin/true against the same with the prepared
// sandbox applied in the child (each layer set), and the parent-side work (BuildPolicy,
// Prepare) done once per session.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <utility>

#include "sandbox/landlock.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"

namespace {

using ae::Result;
using namespace ae::sandbox;

// The source tree is a git repository: a realistic workspace with a .git to carve out.
Policy MakePolicy(Mode mode) {
  Settings settings;
  settings.mode = mode;
  Result<Policy> policy = BuildPolicy(settings, AE_SOURCE_DIR);
  return policy.ok() ? *policy : Policy{};
}

// The sandbox a benchmark's args ask for (arg 0: mode, 0 read-only, 1 workspace-write; arg 1:
// mount namespace on/off); null, the benchmark skipped, where it cannot be had.
PreparedPtr PrepareForArgs(benchmark::State& state) {
  if (landlock::Abi() < 1) {
    state.SkipWithError("Landlock is not available");
    return nullptr;
  }
  Policy policy = MakePolicy(state.range(0) == 0 ? Mode::kReadOnly : Mode::kWorkspaceWrite);
  PrepareOptions options;
  options.mount_namespace = state.range(1) != 0;
  Result<PreparedPtr> prepared = Prepare(policy, options);
  if (!prepared.ok()) {
    state.SkipWithError(prepared.message().c_str());
    return nullptr;
  }
  return std::move(*prepared);
}

void SpawnTrue(const PreparedSandbox* prepared, benchmark::State& state) {
  char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
  char* const envp[] = {nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* step = "";
    int err = 0;
    if (prepared != nullptr && !ApplyInChild(*prepared, &step, &err)) ::_exit(126);
    ::execve("/bin/true", argv, envp);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("child failed");
}

void BM_SpawnBare(benchmark::State& state) {
  for (auto _ : state) SpawnTrue(nullptr, state);
}
BENCHMARK(BM_SpawnBare)->Unit(benchmark::kMicrosecond);

// arg 0: mode (0 read-only, 1 workspace-write); arg 1: mount namespace on/off.
void BM_SpawnSandboxed(benchmark::State& state) {
  PreparedPtr prepared = PrepareForArgs(state);
  if (!prepared) return;
  state.SetLabel(DescribePrepared(*prepared));
  for (auto _ : state) SpawnTrue(prepared.get(), state);
}
BENCHMARK(BM_SpawnSandboxed)
    ->ArgNames({"workspace_write", "mountns"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMicrosecond);

// Only the child's confinement steps, timed inside the child (fork and exec noise excluded).
void BM_ApplyInChild(benchmark::State& state) {
  PreparedPtr prepared = PrepareForArgs(state);
  if (!prepared) return;
  for (auto _ : state) {
    int fds[2];
    if (::pipe(fds) != 0) break;
    pid_t pid = ::fork();
    if (pid == 0) {
      timespec t0, t1;
      ::clock_gettime(CLOCK_MONOTONIC, &t0);
      const char* step = "";
      int err = 0;
      bool ok = ApplyInChild(*prepared, &step, &err);
      ::clock_gettime(CLOCK_MONOTONIC, &t1);
      double seconds = ok ? (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 : -1;
      (void)!::write(fds[1], &seconds, sizeof seconds);
      ::_exit(0);
    }
    ::close(fds[1]);
    double seconds = -1;
    (void)!::read(fds[0], &seconds, sizeof seconds);
    ::close(fds[0]);
    ::waitpid(pid, nullptr, 0);
    if (seconds < 0) {
      state.SkipWithError("ApplyInChild failed");
      break;
    }
    state.SetIterationTime(seconds);
  }
}
BENCHMARK(BM_ApplyInChild)
    ->ArgNames({"workspace_write", "mountns"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_BuildPolicy(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(MakePolicy(Mode::kWorkspaceWrite));
}
BENCHMARK(BM_BuildPolicy)->Unit(benchmark::kMicrosecond);

void BM_Prepare(benchmark::State& state) {
  if (landlock::Abi() < 1) {
    state.SkipWithError("Landlock is not available");
    return;
  }
  Policy policy = MakePolicy(Mode::kWorkspaceWrite);
  PrepareOptions options;
  options.mount_namespace = true;
  for (auto _ : state) {
    Result<PreparedPtr> prepared = Prepare(policy, options);
    benchmark::DoNotOptimize(prepared);
  }
}
BENCHMARK(BM_Prepare)->Unit(benchmark::kMicrosecond);

}  // namespace
