// The one way agentexec starts a command: Spawn forks and execs it in its own session,
// optionally confined by a PreparedSandbox, with stdin /dev/null, a pipe, or a new
// pseudo-terminal, and returns a Process whose output (stdout+stderr in arrival order) the
// caller reads. RunProcess runs one to completion: bounded capture, and the whole tree ended
// on timeout or cancellation. Background sessions (engine/tools/unified_exec.h) keep the
// Process and poll it themselves.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancel.h"
#include "base/fd.h"
#include "base/result.h"
#include "sandbox/network.h"
#include "sandbox/prepared.h"
#include "sandbox/write_watch.h"

namespace ae::sandbox {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH of `env` if not absolute
  std::string cwd;
  std::vector<std::string> env;              // "NAME=value"
  const PreparedSandbox* sandbox = nullptr;  // null: unconfined
  // Confined: record the command's refused write attempts (write_watch.h). Every write-intent
  // call then waits for a round trip to agentexec, so only a caller that acts on the record
  // asks for it (the orchestrator under on-failure, whose rerun needs that evidence).
  bool watch_writes = false;
  // stdin is a pipe the caller writes through Process::input_fd (else a /dev/null opened
  // inside the confinement).
  bool stdin_pipe = false;
  // stderr gets a pipe of its own (Process::TakeError) instead of sharing stdout's, e.g. an
  // MCP server whose stdout is the protocol.
  bool separate_stderr = false;
  // stdin, stdout and stderr are a new pseudo-terminal of this size, opened by agentexec
  // (never its own terminal); output and input go through its master side.
  bool tty = false;
  unsigned short tty_rows = 24;
  unsigned short tty_cols = 80;
  // Confined by a sandbox with a network allow-list: given the listener the command's network
  // namespace made (sandbox/network.h); what it returns lives until the tree is reaped. Null
  // there: the listener is closed and the command has no network at all.
  AttachNetwork attach_network;
};

struct RunLimits {
  int64_t timeout_ms = 10000;         // <= 0: no timeout
  size_t max_output_bytes = 1 << 20;  // kept in memory: head and tail halves beyond this
  int64_t drain_ms = 1000;            // after exit, how long to wait for pipes held open
  // Each chunk of output as it arrives (--progress); on the thread that called RunProcess.
  std::function<void(const char* data, size_t n)> on_output;
  // With SpawnSpec::separate_stderr: each chunk of stderr as it arrives (not captured).
  std::function<void(const char* data, size_t n)> on_error;
  // With SpawnSpec::stdin_pipe: written to the command's stdin, which is then closed.
  std::string_view input;
  // Descriptors that stop the command as cancellation does, once one becomes readable (the
  // eventfd of another CancelToken).
  std::vector<int> stop_fds;
  // Cancellation sends SIGTERM to the command's group first and SIGKILL to its whole tree
  // this long after; 0: SIGKILL at once. A timeout always kills at once.
  int64_t term_grace_ms = 0;
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

// Bounded capture: the first half of the budget verbatim, then a ring of the last half.
class OutputCapture {
 public:
  explicit OutputCapture(size_t max_bytes)
      : head_cap_(max_bytes / 2), tail_cap_(max_bytes - max_bytes / 2) {}
  void Append(const char* data, size_t n);
  // Fills output, total_bytes, total_lines, truncated and head_bytes of `r`.
  void Finish(RunResult& r) const;
  uint64_t total_bytes() const { return total_; }

 private:
  size_t head_cap_, tail_cap_;
  std::string head_, ring_;
  size_t pos_ = 0;  // next write position once the ring is full
  uint64_t total_ = 0;
  uint64_t newlines_ = 0;
};

// A started command. Its process leads its own session and group; confined with a PID
// namespace it is the supervisor whose death ends the whole tree (sandbox/containment.h).
// The process is tied to the *thread* that spawned it (parent-death signal): a caller that
// keeps it beyond one call must spawn from a thread that lives as long.
class Process {
 public:
  Process(pid_t pid, Fd output, Fd input, Fd pidfd);
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;
  ~Process();  // a process not yet reaped is killed (whole tree) and reaped

  pid_t pid() const { return pid_; }
  int output_fd() const { return output_.get(); }  // non-blocking; a pty's master says EIO at end
  int input_fd() const { return input_.get(); }    // -1 without stdin_pipe or tty
  int pidfd() const { return pidfd_.get(); }       // -1 where pidfd_open is missing
  void CloseInput() { input_.reset(); }
  Fd TakeInput() { return std::move(input_); }
  Fd TakeOutput() { return std::move(output_); }
  Fd TakeError() { return std::move(error_); }
  void SetError(Fd error) { error_ = std::move(error); }
  // The write watch of a confined process lives as long as the process: a background session
  // is watched until it ends, like a command run to completion.
  void SetWatch(std::unique_ptr<WriteWatch> watch) { watch_ = std::move(watch); }
  // The proxy's hold on the command's network namespace, ended once the tree is reaped.
  void SetNetwork(std::unique_ptr<NetworkAttachment> network) { network_ = std::move(network); }
  // What the watch saw; call once the whole tree has ended (after Reap). Empty without a watch.
  WriteEvidence FinishWatch() { return watch_ ? watch_->Finish() : WriteEvidence{}; }

  // Has the process exited? Leaves it a zombie so its group id cannot be reused before Kill.
  // `info`, when given, says how (si_code CLD_EXITED and si_status, or the signal).
  bool HasExited(siginfo_t* info = nullptr) const;
  void Kill() const;  // SIGKILL to the whole tree (group, and the namespace through the supervisor)
  void Signal(int sig) const;  // `sig` to the process group (e.g. SIGTERM for a graceful stop)
  // Kills what is left of the tree, waits for the process and sets exit_code (128+signal when
  // a signal ended it) and term_signal. Idempotent.
  void Reap(int* exit_code, int* term_signal);
  bool reaped() const { return reaped_; }

 private:
  pid_t pid_;
  Fd output_, input_, pidfd_, error_;
  std::unique_ptr<WriteWatch> watch_;  // destroyed after ~Process has killed and reaped the tree
  std::unique_ptr<NetworkAttachment> network_;  // ended by Reap
  bool reaped_ = false;
  int status_ = 0;
};

// Spawn's answer: a running process, or the child's failure before execve (setup_error,
// exit code 126/127 and the same text as output, as RunProcess reports it).
struct Spawned {
  std::optional<Process> process;
  RunResult failure;
  std::string failed_step;  // the failure's step ("chdir", "execve", ...) and errno
  int failed_errno = 0;
};

// An Error means nothing was started (no pipe, no fork).
Result<Spawned> Spawn(const SpawnSpec& spec, const SpawnedCallback& on_spawned = {});

Result<RunResult> RunProcess(const SpawnSpec& spec, const RunLimits& limits, CancelToken& cancel,
                             const SpawnedCallback& on_spawned = {});

}  // namespace ae::sandbox
