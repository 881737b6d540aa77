// RunProcess: fork/exec one command in its own process group, optionally confined by a
// PreparedSandbox, capture stdout+stderr in arrival order with bounded memory, and end the
// whole tree on timeout or cancellation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "sandbox/prepared.h"
#include "sandbox/write_watch.h"

namespace ae::sandbox {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH of `env` if not absolute
  std::string cwd;
  std::vector<std::string> env;              // "NAME=value"
  const PreparedSandbox* sandbox = nullptr;  // null: unconfined
};

struct RunLimits {
  int64_t timeout_ms = 10000;         // <= 0: no timeout
  size_t max_output_bytes = 1 << 20;  // kept in memory: head and tail halves beyond this
  int64_t drain_ms = 1000;            // after exit, how long to wait for pipes held open
  // Each chunk of output as it arrives (--progress); on the thread that called RunProcess.
  std::function<void(const char* data, size_t n)> on_output;
};

struct RunResult {
  int exit_code = 0;    // 128+signal when killed; 124 on timeout
  int term_signal = 0;  // non-zero when a signal ended it
  bool timed_out = false;
  bool cancelled = false;
  std::string output;        // stdout+stderr in arrival order (bytes, not sanitised)
  uint64_t total_bytes = 0;  // everything the command printed
  uint64_t total_lines = 0;  // lines in all of it (a last line without a newline counts)
  bool truncated = false;    // output holds head+tail of total_bytes
  size_t head_bytes = 0;     // when truncated: output[0, head_bytes) is the head, the rest the tail
  std::chrono::milliseconds duration{0};
  // The child failed before execve (sandbox step or exec itself): what and errno.
  std::optional<std::string> setup_error;
  // What the sandbox refused of the command's write attempts, seen by agentexec (write_watch.h).
  WriteEvidence writes;
};

// Called with the child's pid right after a successful fork (for started events).
using SpawnedCallback = std::function<void(int pid)>;

Result<RunResult> RunProcess(const SpawnSpec& spec, const RunLimits& limits, CancelToken& cancel,
                             const SpawnedCallback& on_spawned = {});

}  // namespace ae::sandbox
