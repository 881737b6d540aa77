// Unified exec (codex's exec_command / write_stdin contract): a command runs until it exits
// or its yield time passes; one still running then becomes a numbered session the model polls
// and feeds with write_stdin, and whose command_execution item stays in_progress (item.updated
// at each poll) until it exits or is killed.
//
// Every process is started through the orchestrator (approval, sandbox, environment, the
// on-failure retry) and sandbox::Spawn, like any command. All of them are forked by one
// thread of the manager that lives as long as the sessions: the parent-death signal that ties
// a command's tree to agentexec is tied to the forking *thread*, so a session forked by a
// tool worker thread would die with that thread. The same thread reads every session's
// output, so a process never blocks on a full pipe between polls.
//
// Sessions are bounded (kMaxSessions, codex's 64; past it the least recently used one not
// among the 8 newest is killed, exited ones first) and every session's whole process tree is
// killed when the turn stops, when the run is cancelled (SIGINT, SIGTERM, --timeout) and when
// the manager is destroyed; if agentexec itself dies, the parent-death signal ends them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "engine/exec/orchestrator.h"
#include "engine/tools/router.h"

namespace ae {

// codex's bounds (codex-rs/core/src/unified_exec).
constexpr int64_t kDefaultExecYieldMs = 10000;
constexpr int64_t kDefaultWriteYieldMs = 250;
constexpr int64_t kMinYieldMs = 250;
constexpr int64_t kMaxYieldMs = 30000;
constexpr int64_t kMinEmptyPollYieldMs = 5000;
constexpr int64_t kMaxEmptyPollYieldMs = 300000;
constexpr size_t kMaxSessions = 64;
// codex warns the model once this many sessions are open (60 of 64): past the bound the
// least recently used one is killed.
constexpr size_t kSessionWarningMargin = 4;
constexpr size_t kProtectedRecentSessions = 8;
constexpr int kFirstSessionId = 1000;

// The yield actually waited for: exec_command's, and write_stdin's (an empty poll waits at
// least kMinEmptyPollYieldMs, as codex).
int64_t ClampExecYieldMs(int64_t requested);
int64_t ClampWriteYieldMs(int64_t requested, bool empty_chars);

struct UnifiedExecRequest {
  CommandRequest command;  // timeout_ms <= 0: no timeout beyond the session bounds
  bool tty = false;
  int64_t yield_ms = kDefaultExecYieldMs;  // already clamped
  size_t budget_bytes = 40000;             // the model's share of the output
};

struct UnifiedExecReply {
  std::string text;  // codex's reply: Chunk ID, Wall time, exit or session line, Output
  bool success = true;
  std::string model_warning;  // set once this session brought the open ones near the bound
};

class UnifiedExec {
 public:
  explicit UnifiedExec(size_t max_sessions = kMaxSessions);
  ~UnifiedExec();  // kills every session and stops the thread
  UnifiedExec(const UnifiedExec&) = delete;
  UnifiedExec& operator=(const UnifiedExec&) = delete;

  // exec_command. An Error means nothing ran; its message is for the model.
  Result<UnifiedExecReply> Exec(const UnifiedExecRequest& request, ToolEnv& env);
  // write_stdin. Errors carry codex's texts ("Unknown process id N", "stdin is closed ...").
  Result<UnifiedExecReply> Write(int64_t session_id, const std::string& chars, int64_t yield_ms,
                                 size_t budget_bytes);
  // The turn stopped: every session's tree is killed, its item completed.
  void StopAll();

  size_t session_count();  // for tests: open sessions, exited ones not yet polled included

  struct Session;

 private:
  struct SpawnJob;
  Status EnsureThread(ToolEnv& env);
  Result<std::shared_ptr<Session>> Start(const sandbox::SpawnSpec& spec,
                                         sandbox::RunResult* failure,
                                         std::shared_ptr<Session> session);
  void Loop();
  // Spawns the queued jobs, adding the started sessions to `live`; whether the manager stops.
  bool StartQueued(std::vector<std::shared_ptr<Session>>& live);
  void Wake();
  struct Registered {
    int id = 0;
    size_t open = 0;  // sessions open right after this one joined, counted under the same lock
  };
  Registered Register(const std::shared_ptr<Session>& session);

  const size_t max_sessions_;
  const size_t warn_sessions_;     // codex's warning from this many open (60 of 64)
  CancelToken* cancel_ = nullptr;  // the run's token, from the first call

  std::mutex mu_;  // guards everything below
  std::map<int, std::shared_ptr<Session>> sessions_;
  std::deque<std::shared_ptr<SpawnJob>> jobs_;
  int next_id_ = kFirstSessionId;
  bool stopping_ = false;

  Fd wake_;  // eventfd: jobs queued or stopping
  std::thread thread_;
};

// The exec_command and write_stdin tools over one shared manager.
std::unique_ptr<ToolHandler> MakeWriteStdinTool(std::shared_ptr<UnifiedExec> manager);

}  // namespace ae
