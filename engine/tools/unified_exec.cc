#include "engine/tools/unified_exec.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "engine/events/command_progress.h"
#include "engine/exec/env_policy.h"
#include "engine/exec/model_output.h"
#include "engine/tools/exec.h"
#include "sandbox/spawn.h"

namespace ae {

using Clock = std::chrono::steady_clock;

int64_t ClampExecYieldMs(int64_t requested) {
  return std::clamp(requested, kMinYieldMs, kMaxYieldMs);
}

int64_t ClampWriteYieldMs(int64_t requested, bool empty_chars) {
  if (empty_chars) return std::clamp(requested, kMinEmptyPollYieldMs, kMaxEmptyPollYieldMs);
  return std::clamp(requested, kMinYieldMs, kMaxYieldMs);
}

// One process, from spawn to reaped. The manager's thread owns `process` and writes the
// output; callers wait on `cv` for the exit or their yield.
struct UnifiedExec::Session {
  Session(size_t pending_cap, size_t item_cap) : pending(pending_cap), aggregated(item_cap) {}

  // Set before the spawn, read-only after.
  std::string item_id;
  std::string display;
  bool tty = false;
  Emitter* emitter = nullptr;
  Clock::time_point started;
  std::optional<Clock::time_point> deadline;  // timeout_ms
  size_t pending_cap = 0;
  std::optional<CommandProgress> progress;  // --progress; called under mu

  // The manager's thread only.
  std::optional<sandbox::Process> process;
  bool output_open = true;
  bool kill_sent = false;
  std::optional<Clock::time_point> drain_until;  // after the exit: read what is left

  std::mutex mu;  // guards the rest
  std::condition_variable cv;
  sandbox::OutputCapture pending;     // printed since the last answer to the model
  sandbox::OutputCapture aggregated;  // everything, for the item
  int id = 0;                         // its session id once it outlived its first yield
  bool detached = false;              // exec_command answered "running": the item is ours
  bool exited = false;
  bool completed = false;  // item.completed emitted
  bool timed_out = false;
  bool cancelled = false;
  int exit_code = 0;
  int term_signal = 0;
  sandbox::WriteEvidence writes;  // the sandbox's refusals the watch saw, once exited
  // With a network allow-list: records what the command tried past the proxy once it ended,
  // and gives the lines the model reads (orchestrator.h NetworkFinish); set before it starts.
  NetworkFinish finish_network;
  std::vector<std::string> network_notes;  // what finish_network gave, once exited
  Fd input;                                // the terminal's master (tty), written by write_stdin
  Clock::time_point ended;
  Clock::time_point last_used;
  bool kill_requested = false;
};

struct UnifiedExec::SpawnJob {
  sandbox::SpawnSpec spec;
  std::shared_ptr<Session> session;
  bool running = false;  // set by the manager's thread when the process started
  std::promise<Result<sandbox::Spawned>> done;
};

namespace {

std::string ChunkId() {
  thread_local std::mt19937 rng(std::random_device{}());
  return fmt::format("{:06x}", rng() & 0xFFFFFF);
}

// The run so far (or at the end) as a RunResult, for the formatting the other commands use.
sandbox::RunResult Snapshot(const sandbox::OutputCapture& capture, const UnifiedExec::Session& s) {
  sandbox::RunResult run;
  capture.Finish(run);
  run.exit_code = s.timed_out ? 124 : s.exit_code;
  run.term_signal = s.term_signal;
  run.timed_out = s.timed_out;
  run.cancelled = s.cancelled;
  if (s.exited) run.writes = s.writes;  // evidence for on-failure and the sandbox note
  run.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      (s.exited ? s.ended : Clock::now()) - s.started);
  return run;
}

// Takes what was printed since the last answer. Caller holds s.mu.
sandbox::RunResult DrainPending(UnifiedExec::Session& s) {
  sandbox::RunResult run = Snapshot(s.pending, s);
  s.pending = sandbox::OutputCapture(s.pending_cap);
  return run;
}

CommandExecutionItem ItemOf(const UnifiedExec::Session& s) {
  sandbox::RunResult run = Snapshot(s.aggregated, s);
  if (!s.exited) {
    return CommandExecutionItem{s.display, ItemOutput(run), std::nullopt, ItemStatus::kInProgress};
  }
  bool ok = run.exit_code == 0 && !run.timed_out && !run.cancelled;
  return CommandExecutionItem{s.display, ItemOutput(run), run.exit_code,
                              ok ? ItemStatus::kCompleted : ItemStatus::kFailed};
}

// item.completed once, by whoever sees the end first. Caller holds s.mu; emitting under it
// keeps the order: nothing about this item can follow its completion.
void CompleteLocked(UnifiedExec::Session& s) {
  if (s.completed || !s.detached || !s.exited) return;
  s.completed = true;
  s.emitter->Complete(s.item_id, ItemOf(s));
}

// codex's reply body for one answer.
std::string Reply(const sandbox::RunResult& run, std::optional<int> exit_code,
                  std::optional<int> session_id, size_t budget, double wall) {
  CapturedText captured = SanitizeCapture(run);
  std::string note = exit_code ? TimeoutNote(run) : std::string();
  return FormatUnifiedExecOutput(captured, note, budget, ChunkId(), wall, exit_code, session_id);
}

}  // namespace

UnifiedExec::UnifiedExec(size_t max_sessions)
    : max_sessions_(std::max<size_t>(max_sessions, 1)),
      warn_sessions_(max_sessions_ > kSessionWarningMargin ? max_sessions_ - kSessionWarningMargin
                                                           : max_sessions_),
      wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

UnifiedExec::~UnifiedExec() {
  StopAll();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
}

void UnifiedExec::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
}

Status UnifiedExec::EnsureThread(ToolEnv& env) {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return Status();
  if (!wake_) return MakeError(fmt::format("cannot create an eventfd: {}", std::strerror(errno)));
  cancel_ = &env.cancel;
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error& e) {
    return MakeError(fmt::format("cannot start the thread that runs commands: {}", e.what()));
  }
  return Status();
}

// Posts the spawn to the manager's thread (see the header: the forking thread must outlive
// the process) and waits for it.
Result<std::shared_ptr<UnifiedExec::Session>> UnifiedExec::Start(const sandbox::SpawnSpec& spec,
                                                                 sandbox::RunResult* failure,
                                                                 std::shared_ptr<Session> session) {
  auto job = std::make_shared<SpawnJob>();
  job->spec = spec;
  job->session = session;
  std::future<Result<sandbox::Spawned>> done = job->done.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return MakeError("command not run: the run is ending");
    jobs_.push_back(job);
  }
  Wake();
  Result<sandbox::Spawned> spawned = done.get();
  if (!spawned.ok()) return spawned.error();
  if (!job->running) {
    *failure = std::move(spawned->failure);
    return std::shared_ptr<Session>();
  }
  return session;
}

// The manager's thread: spawns, reads every session's output, notices exits, kills on
// cancellation, timeouts and requests.
namespace {

// A bounded number of reads per wake-up, so one endless writer cannot starve the others.
void ReadSome(UnifiedExec::Session& s, std::string& buf) {
  for (int reads = 0; reads < 16 && s.output_open; ++reads) {
    ssize_t r = ::read(s.process->output_fd(), buf.data(), buf.size());
    if (r > 0) {
      std::lock_guard lock(s.mu);
      s.pending.Append(buf.data(), static_cast<size_t>(r));
      s.aggregated.Append(buf.data(), static_cast<size_t>(r));
      if (s.progress && !s.completed) s.progress->OnOutput(buf.data(), static_cast<size_t>(r));
      if (static_cast<size_t>(r) < buf.size()) break;
      continue;
    }
    // EOF; EIO is a terminal's end (every slave side closed).
    if (r == 0 || (errno != EAGAIN && errno != EINTR)) s.output_open = false;
    break;
  }
}

// Kills the sessions whose time is up, that were cancelled or asked to stop; the milliseconds
// until the next deadline (or a short poll where no pidfd wakes us), -1: none.
int64_t KillDue(const std::vector<std::shared_ptr<UnifiedExec::Session>>& live, bool cancelled,
                bool stopping) {
  const auto now = Clock::now();
  int64_t wait_ms = -1;
  for (const auto& sp : live) {
    UnifiedExec::Session& s = *sp;
    bool kill = false;
    {
      std::lock_guard lock(s.mu);
      if (cancelled && !s.kill_sent) s.cancelled = true;
      if (s.deadline && now >= *s.deadline && !s.kill_sent) s.timed_out = true;
      kill = !s.kill_sent && (s.kill_requested || s.cancelled || s.timed_out || stopping);
    }
    if (kill) {
      s.process->Kill();
      s.kill_sent = true;
    }
    if (s.deadline && !s.kill_sent) {
      int64_t left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*s.deadline - now).count() + 1;
      wait_ms = wait_ms < 0 ? left : std::min(wait_ms, left);
    }
    if (s.process->pidfd() < 0 || s.drain_until) {
      wait_ms = wait_ms < 0 ? 20 : std::min<int64_t>(wait_ms, 20);
    }
  }
  return wait_ms;
}

// The manager's wake-up, the run's cancellation unless seen, and each session's output and
// pidfd.
std::vector<pollfd> PollSet(int wake_fd, const CancelToken* cancel,
                            const std::vector<std::shared_ptr<UnifiedExec::Session>>& live,
                            bool cancelled) {
  std::vector<pollfd> fds;
  fds.push_back({wake_fd, POLLIN, 0});
  if (cancel != nullptr && !cancelled && cancel->wake_fd() >= 0) {
    fds.push_back({cancel->wake_fd(), POLLIN, 0});
  }
  for (const auto& sp : live) {
    if (sp->output_open) fds.push_back({sp->process->output_fd(), POLLIN, 0});
    if (!sp->drain_until && sp->process->pidfd() >= 0) {
      fds.push_back({sp->process->pidfd(), POLLIN, 0});
    }
  }
  return fds;
}

// The command ended: kill what is left of its tree, then read what it left in the pipe
// (bounded, in case something outside the group still holds it).
void ReapIfExited(UnifiedExec::Session& s) {
  if (s.drain_until || !s.process->HasExited()) return;
  int code = 0, sig = 0;
  s.process->Reap(&code, &sig);
  sandbox::WriteEvidence writes = s.process->FinishWatch();
  // Before the item completes: its connections' items come first, as in the foreground.
  std::vector<std::string> notes =
      s.finish_network ? s.finish_network(writes) : std::vector<std::string>{};
  s.drain_until = Clock::now() + std::chrono::milliseconds(500);
  std::lock_guard lock(s.mu);
  s.writes = std::move(writes);
  s.network_notes = std::move(notes);
  s.exit_code = code;
  s.term_signal = sig;
  s.ended = Clock::now();
}

void CompleteIfDrained(UnifiedExec::Session& s) {
  if (!s.drain_until || (s.output_open && Clock::now() < *s.drain_until)) return;
  s.output_open = false;
  std::lock_guard lock(s.mu);
  s.exited = true;
  CompleteLocked(s);
  s.cv.notify_all();
}

}  // namespace

bool UnifiedExec::StartQueued(std::vector<std::shared_ptr<Session>>& live) {
  std::deque<std::shared_ptr<SpawnJob>> jobs;
  bool stopping;
  {
    std::lock_guard lock(mu_);
    jobs.swap(jobs_);
    stopping = stopping_;
  }
  for (auto& job : jobs) {
    Result<sandbox::Spawned> spawned = sandbox::Spawn(job->spec);
    if (spawned.ok() && spawned->process) {
      Session& s = *job->session;
      s.process.emplace(std::move(*spawned->process));
      spawned->process.reset();
      std::lock_guard lock(s.mu);
      s.input = s.process->TakeInput();
      live.push_back(job->session);
      job->running = true;
    }
    job->done.set_value(std::move(spawned));
  }
  return stopping;
}

void UnifiedExec::Loop() {
  std::vector<std::shared_ptr<Session>> live;
  std::string buf(64 * 1024, '\0');
  for (;;) {
    const bool stopping = StartQueued(live);
    if (stopping && live.empty()) return;
    const bool cancelled = cancel_ != nullptr && cancel_->cancelled();
    const int64_t wait_ms = KillDue(live, cancelled, stopping);
    std::vector<pollfd> fds = PollSet(wake_.get(), cancel_, live, cancelled);
    int rc =
        ::poll(fds.data(), fds.size(), wait_ms > INT32_MAX ? INT32_MAX : static_cast<int>(wait_ms));
    if (rc < 0 && errno != EINTR) {
      // Cannot wait any more: end everything rather than spin or leave processes behind.
      for (auto& sp : live) sp->process->Kill();
    }
    if (fds[0].revents != 0) {
      uint64_t n;
      [[maybe_unused]] ssize_t r = ::read(wake_.get(), &n, sizeof n);
    }
    for (auto& sp : live) {
      if (sp->output_open) ReadSome(*sp, buf);
      ReapIfExited(*sp);
      CompleteIfDrained(*sp);
    }
    std::erase_if(live, [](const std::shared_ptr<Session>& s) {
      if (s->output_open || !s->drain_until) return false;
      s->process.reset();  // already reaped: closes its descriptors
      return true;
    });
  }
}

// The count is taken with the insertion, as codex does: parallel calls each see their own
// count, so exactly one of them crosses the warning bound.
UnifiedExec::Registered UnifiedExec::Register(const std::shared_ptr<Session>& session) {
  std::shared_ptr<Session> pruned;
  Registered registered;
  {
    std::lock_guard lock(mu_);
    if (sessions_.size() >= max_sessions_) {
      // codex's pruning: never one of the most recently used; exited ones first, then the
      // least recently used.
      std::vector<std::pair<Clock::time_point, int>> by_use;
      std::map<int, bool> exited;
      for (auto& [id, s] : sessions_) {
        std::lock_guard slock(s->mu);
        by_use.emplace_back(s->last_used, id);
        exited[id] = s->exited;
      }
      std::sort(by_use.begin(), by_use.end());
      // The newest ones are safe, but never all of them (a bound below 9 still bounds).
      const size_t keep = std::min(kProtectedRecentSessions, by_use.size() - 1);
      const size_t candidates = by_use.size() - keep;
      int victim = 0;
      for (size_t i = 0; i < candidates && victim == 0; ++i) {
        if (exited[by_use[i].second]) victim = by_use[i].second;
      }
      if (victim == 0 && candidates > 0) victim = by_use[0].second;
      if (victim != 0) {
        pruned = sessions_[victim];
        sessions_.erase(victim);
      }
    }
    std::lock_guard slock(session->mu);
    registered.id = next_id_++;
    session->id = registered.id;
    session->detached = true;
    session->last_used = Clock::now();
    sessions_[session->id] = session;
    registered.open = sessions_.size();
    CompleteLocked(*session);  // it may have ended since its yield
  }
  if (pruned) {
    std::lock_guard slock(pruned->mu);
    pruned->kill_requested = true;
  }
  Wake();
  if (pruned) {
    // Its end is reported before the new session's answer, not at some later moment.
    std::unique_lock slock(pruned->mu);
    pruned->cv.wait_for(slock, std::chrono::seconds(10), [&] { return pruned->exited; });
    CompleteLocked(*pruned);
  }
  return registered;
}

namespace {

// A session for one attempt of `request`, not yet started.
std::shared_ptr<UnifiedExec::Session> NewSession(const UnifiedExecRequest& request, ToolEnv& env,
                                                 const std::string& item_id,
                                                 const NetworkFinish& finish) {
  const size_t item_cap = env.turn.command_output_max_bytes;
  auto session = std::make_shared<UnifiedExec::Session>(item_cap, item_cap);
  session->item_id = item_id;
  session->finish_network = finish;
  session->display = request.command.display;
  session->tty = request.tty;
  session->emitter = &env.emitter;
  session->pending_cap = item_cap;
  session->started = Clock::now();
  session->last_used = session->started;
  if (env.turn.progress_interval_ms > 0) {
    UnifiedExec::Session* raw = session.get();
    session->progress.emplace(
        env.turn.progress_interval_ms, SteadyNowMs, [raw](const std::string& so_far) {
          raw->emitter->Update(
              raw->item_id,
              CommandExecutionItem{raw->display, so_far, std::nullopt, ItemStatus::kInProgress});
        });
  }
  if (request.command.timeout_ms > 0) {
    session->deadline = session->started + std::chrono::milliseconds(request.command.timeout_ms);
  }
  return session;
}

// The reply for a command that ended within its yield.
UnifiedExecReply FinishedReply(const CommandOutcome& outcome, const UnifiedExecRequest& request,
                               const ToolEnv& env, double wall) {
  UnifiedExecReply reply;
  reply.text = Reply(outcome.run, outcome.run.exit_code, std::nullopt, request.budget_bytes, wall);
  reply.success = outcome.run.exit_code == 0;
  if (outcome.sandbox_denied) {
    reply.text += SandboxDeniedNote(env.turn, outcome.denial->only_wording);
  }
  for (const std::string& note : outcome.network_notes) reply.text += "\n" + note;
  return reply;
}

}  // namespace

Result<UnifiedExecReply> UnifiedExec::Exec(const UnifiedExecRequest& request, ToolEnv& env) {
  if (request.command.require_escalated) {
    return MakeError(EscalationRefusal(env.turn.approval));
  }
  if (Status s = EnsureThread(env); !s.ok()) return s.error();

  std::shared_ptr<Session> running;
  sandbox::RunResult first_run;  // what the model sees of a process left running
  double first_wall = 0;
  const auto start = Clock::now();

  AttemptRunner runner =
      [&](const sandbox::SpawnSpec& base, const std::string& item_id,
          const NetworkFinish& finish) -> Result<std::optional<sandbox::RunResult>> {
    sandbox::SpawnSpec spec = base;
    spec.tty = request.tty;
    spec.env = WithUnifiedExecEnv(std::move(spec.env));
    std::shared_ptr<Session> session = NewSession(request, env, item_id, finish);
    sandbox::RunResult failure;
    Result<std::shared_ptr<Session>> started = Start(spec, &failure, session);
    if (!started.ok()) return started.error();
    if (!*started) return std::optional<sandbox::RunResult>(std::move(failure));

    const auto deadline = session->started + std::chrono::milliseconds(request.yield_ms);
    std::unique_lock lock(session->mu);
    session->cv.wait_until(lock, deadline, [&] { return session->exited; });
    if (session->exited) return std::optional<sandbox::RunResult>(DrainPending(*session));
    first_run = DrainPending(*session);
    first_wall = std::chrono::duration<double>(Clock::now() - start).count();
    running = session;
    return std::optional<sandbox::RunResult>();
  };

  auto outcome = env.orchestrator.RunCommand(request.command, env.emitter, env.cancel, runner);
  if (!outcome.ok()) return outcome.error();
  if (!outcome->running) {
    return FinishedReply(*outcome, request, env,
                         std::chrono::duration<double>(Clock::now() - start).count());
  }
  {
    std::lock_guard lock(running->mu);
    env.emitter.Update(running->item_id, ItemOf(*running));
  }
  const Registered registered = Register(running);
  UnifiedExecReply reply;
  if (registered.open >= warn_sessions_) {
    reply.model_warning = fmt::format(
        "The maximum number of unified exec processes you can keep open is {} and you currently "
        "have {} processes open. Reuse older processes or close them to prevent automatic "
        "pruning of old processes",
        warn_sessions_, registered.open);
  }
  reply.text = Reply(first_run, std::nullopt, registered.id, request.budget_bytes, first_wall);
  return reply;
}

Result<UnifiedExecReply> UnifiedExec::Write(int64_t session_id, const std::string& chars,
                                            int64_t yield_ms, size_t budget_bytes) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    auto it = session_id < INT32_MIN || session_id > INT32_MAX
                  ? sessions_.end()
                  : sessions_.find(static_cast<int>(session_id));
    if (it == sessions_.end()) return MakeError(fmt::format("Unknown process id {}", session_id));
    s = it->second;
  }
  const auto start = Clock::now();
  {
    std::lock_guard lock(s->mu);
    s->last_used = start;
  }
  if (!chars.empty()) {
    if (!s->tty) {
      return MakeError(
          "stdin is closed for this session; rerun exec_command with tty=true to keep stdin open");
    }
    // The terminal's master: written on this thread, bounded by the yield, never blocking on
    // a command that stopped reading.
    int fd = -1;
    {
      std::lock_guard lock(s->mu);
      if (!s->exited) fd = s->input.get();
    }
    const auto write_deadline = start + std::chrono::milliseconds(yield_ms);
    size_t off = 0;
    while (fd >= 0 && off < chars.size()) {
      pollfd p{fd, POLLOUT, 0};
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(write_deadline - Clock::now());
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      ssize_t n = ::write(fd, chars.data() + off, chars.size() - off);
      if (n < 0 && errno != EAGAIN && errno != EINTR) break;
      if (n > 0) off += static_cast<size_t>(n);
    }
    if (off < chars.size()) {
      std::lock_guard lock(s->mu);
      if (!s->exited) return MakeError("failed to write to stdin");
    }
    // As codex: give the process a moment to answer before collecting.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  const auto deadline = start + std::chrono::milliseconds(yield_ms);
  std::unique_lock lock(s->mu);
  s->cv.wait_until(lock, deadline, [&] { return s->exited; });
  sandbox::RunResult run = DrainPending(*s);
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  UnifiedExecReply reply;
  if (s->exited) {
    CompleteLocked(*s);
    reply.text = Reply(run, run.exit_code, std::nullopt, budget_bytes, wall);
    // A background command's refusals reach the model with its last output, as a foreground
    // command's do.
    for (const std::string& note : s->network_notes) reply.text += "\n" + note;
    const int id = s->id;
    lock.unlock();
    std::lock_guard mlock(mu_);
    sessions_.erase(id);
    return reply;
  }
  s->emitter->Update(s->item_id, ItemOf(*s));
  reply.text = Reply(run, std::nullopt, s->id, budget_bytes, wall);
  return reply;
}

void UnifiedExec::StopAll() {
  std::vector<std::shared_ptr<Session>> all;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, s] : sessions_) all.push_back(s);
    sessions_.clear();
  }
  if (all.empty()) return;
  for (auto& s : all) {
    std::lock_guard lock(s->mu);
    s->kill_requested = true;
  }
  Wake();
  // SIGKILL to the tree cannot be refused; the wait only covers the thread's round trip.
  for (auto& s : all) {
    std::unique_lock lock(s->mu);
    s->cv.wait_for(lock, std::chrono::seconds(10), [&] { return s->exited; });
    CompleteLocked(*s);
  }
}

size_t UnifiedExec::session_count() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace ae
