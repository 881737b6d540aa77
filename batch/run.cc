#include "batch/run.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/beneath.h"
#include "base/cancel.h"
#include "base/duration.h"
#include "base/fd.h"
#include "base/json.h"
#include "base/read_file.h"
#include "base/secret_env.h"
#include "base/signals.h"
#include "base/write_all.h"
#include "batch/artefacts.h"
#include "batch/check.h"
#include "batch/child.h"
#include "batch/manifest.h"
#include "batch/publish.h"
#include "batch/report.h"
#include "batch/shard.h"
#include "cli/exit_code.h"
#include "engine/review/git.h"
#include "sandbox/spawn.h"

namespace ae {
namespace {

using Clock = std::chrono::steady_clock;

// The running tasks the progress line names.
constexpr size_t kProgressNames = 4;
// The part of a task's final message kept in its record.
constexpr size_t kAnswerBytes = 200;
// final-message.md is copied up to this size.
constexpr size_t kMaxFinalMessageBytes = size_t{16} << 20;
// Event lines longer than this are written to events.jsonl but not looked at.
constexpr size_t kMaxEventLineBytes = size_t{4} << 20;

std::string Errno(const char* what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

// Stages what the task changed in `clone`: every change to a tracked file, and the untracked
// files that are neither ignored by the repository nor build artefacts a command left behind
// (scripts/ci/artefacts.gitignore; scripts/ci/run.sh stages the same way for changes.patch).
Status StageChanges(const std::string& clone, const std::vector<std::string>& env) {
  if (Result<std::string> tracked = BatchGit(clone, {"add", "-u", "--", "."}, env); !tracked.ok()) {
    return tracked.error();
  }
  std::vector<std::string> list = {"ls-files", "-z", "--others", "--exclude-standard"};
  for (std::string& exclude : ArtefactExcludeArgs()) list.push_back(std::move(exclude));
  list.insert(list.end(), {"--", "."});
  Result<std::string> untracked = BatchGit(clone, list, env);
  if (!untracked.ok()) return untracked.error();
  if (untracked->empty()) return {};
  std::string err;
  Result<ChildResult> added = RunChild(
      GitSpec(clone,
              {"--literal-pathspecs", "add", "--pathspec-from-file=-", "--pathspec-file-nul"}, env),
      *untracked, [](const char*, size_t) {},
      [&](const char* d, size_t n) {
        if (err.size() < 4096) err.append(d, std::min(n, size_t{4096}));
      },
      {}, kGitTimeoutMs);
  if (!added.ok()) return MakeError("git add: " + added.message());
  if (added->exit_code != 0) {
    return MakeError(fmt::format("git add failed (exit {}): {}", added->exit_code, err));
  }
  return {};
}

// mkdir -p, before any task ran.
Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return MakeError(ec.message());
  return {};
}

// `path`'s canonical form, or `path` itself when it does not exist yet.
std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

bool Inside(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

// Looks at the child's event stream for the turn's end: tokens and the failure's code.
class EventScanner {
 public:
  void Feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] == '\n') {
        if (!overflow_) Line();
        line_.clear();
        overflow_ = false;
      } else if (!overflow_) {
        line_.push_back(data[i]);
        if (line_.size() > kMaxEventLineBytes) {
          overflow_ = true;
          line_.clear();
        }
      }
    }
  }
  int64_t tokens = 0;
  std::string error_code, error_message;
  bool ended = false;
  // turn.completed's `network`, as the other findings above: read by RunTask.
  std::optional<std::vector<std::string>>
      hosts_reached;  // NOLINT(cppcoreguidelines-non-private-member-variables-in-classes)
  std::optional<std::vector<std::string>>
      hosts_refused;  // NOLINT(cppcoreguidelines-non-private-member-variables-in-classes)

 private:
  void Line() {
    if (line_.find("\"turn.") == std::string::npos) return;
    Result<rapidjson::Document> doc = ParseJsonObject(line_, "event");
    if (!doc.ok()) return;
    const std::string type = StringMember(*doc, "type");
    if (type != "turn.completed" && type != "turn.failed") return;
    ended = true;
    const rapidjson::Value* usage = FindJsonMember(*doc, "usage");
    tokens = Int64Member(usage, "input_tokens") + Int64Member(usage, "output_tokens");
    if (const rapidjson::Value* net = FindJsonMember(*doc, "network"); net && net->IsObject()) {
      hosts_reached = StringArrayMember(net, "reached");
      hosts_refused = StringArrayMember(net, "refused");
    }
    if (type == "turn.failed") {
      const rapidjson::Value* error = FindJsonMember(*doc, "error");
      error_code = StringMember(error, "code");
      error_message = StringMember(error, "message");
    }
  }
  std::string line_;
  bool overflow_ = false;
};

std::string FirstLine(std::string_view text) {
  size_t nl = text.find('\n');
  std::string line(text.substr(0, nl));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() > kAnswerBytes) {
    size_t cut = kAnswerBytes;
    // Never cut inside a UTF-8 sequence (the JSON writer would make it U+FFFD).
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line = line.substr(0, cut) + "…";
  }
  return line;
}

enum class StopReason { kNone, kSignal, kMaxFailures, kMaxTokens, kMaxTime };

const char* StopName(StopReason r) {
  switch (r) {
    case StopReason::kSignal:
      return "interrupted";
    case StopReason::kMaxFailures:
      return "max-failures";
    case StopReason::kMaxTokens:
      return "max-total-tokens";
    case StopReason::kMaxTime:
      return "max-total-time";
    case StopReason::kNone:
      break;
  }
  return "";
}

// What the phases of one task's run (Batch::RunTask) share.
struct TaskRun {
  const BatchTask& task;
  BatchRecord rec;
  int task_fd = -1;  // DIR/tasks/<id>, owned by RunTask's caller
  Fd work_dir;       // --work-dir/<id>
  std::string work, clone, cwd;
  std::string prompt, answer, diffstat;
  std::string git_config;   // .git/config as batch left it after the checkout
  std::string write_error;  // the first record that could not be written
};

class Batch {
 public:
  Batch(const BatchRunOptions& options, std::string self)
      : options_(options), self_(std::move(self)), env_(ProcessEnv()) {}
  // The batch's one copy of the credentials, zeroed once no task can start any more.
  ~Batch() { WipeStrings(env_); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  Batch(Batch&&) = delete;
  Batch& operator=(Batch&&) = delete;

  // Opens --out and --work-dir, and refuses them where a task could reach them (below), before
  // anything is recorded.
  Status Prepare(size_t total, const std::vector<std::optional<std::string>>& sandboxes,
                 const std::string& out_real);
  int Run(ManifestReader& reader, const Shard& shard,
          const std::unordered_set<std::string>& completed);

 private:
  // Refuses the batch when --out or --work-dir is reachable from a task: each distinct `-s`
  // of the manifest (nullopt: the exec arguments' own) is asked, as a task's agentexec would
  // resolve it, which paths its commands could write (--print-writable-roots).
  Status RefuseReachableRecords(const std::vector<std::optional<std::string>>& sandboxes,
                                const std::string& out_real);
  void Worker(size_t slot);
  // Prints the progress line every `every_ms` until finished_ (with the lock not held).
  void Heartbeat(int64_t every_ms);
  // One task, phase by phase: its directories, the checkout, the agent, its answer, the
  // commit of its changes, the check and what publish needs. Each phase's failure ends it.
  BatchRecord RunTask(const BatchTask& task, Fd* task_dir_out);
  // The task's directories under --out and --work-dir, an interrupted attempt's moved aside.
  Status OpenTaskDirs(TaskRun& run, Fd* task_dir_out);
  // The clone on its branch, the working directory (`dir`) and the prompt.
  Status Checkout(TaskRun& run);
  Status SetUpClone(const BatchTask& task, const std::string& clone);
  // The task's `agentexec exec` command line: batch's exec options, then the task's own.
  std::vector<std::string> ExecArgv(const TaskRun& run) const;
  // The child agentexec: its events and stderr kept, the record filled from them.
  Status RunAgent(TaskRun& run);
  // final-message.md into the task's directory, its first line into the record.
  void KeepAnswer(TaskRun& run);
  // The changes staged, written as changes.patch and committed; only while git's view of the
  // clone is still the one batch set up.
  Status CommitChanges(TaskRun& run);
  Status WritePatch(TaskRun& run);
  // The task's or batch's --check, run once the turn succeeded.
  Status RunTaskCheck(TaskRun& run);
  // branch.json, git-config and the pull request's title and body (batch/publish.h)
  // for a task that succeeded with changes.
  Status WriteDelivery(const TaskRun& run);
  // Whether SIGINT/SIGTERM or --max-total-time stopped the batch (the task then "interrupted").
  bool Stopped(TaskRun& run) const;
  void Finish(const BatchRecord& record, int task_dirfd);  // -1: no task directory
  StopReason ShouldStop();
  void Progress();

  const BatchRunOptions& options_;
  std::string self_;  // this binary, for the tasks' `agentexec exec`
  // What every task's agentexec and every git gets (ProcessEnv): the only place batch holds
  // the credentials between children. Each child's spec gets a copy of it, wiped once the
  // child has started.
  std::vector<std::string> env_;
  Fd out_fd_, tasks_fd_, work_fd_, results_fd_;
  std::string work_path_;

  CancelToken cancel_;   // SIGINT/SIGTERM
  CancelToken time_up_;  // --max-total-time

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<BatchTask> queue_;  // at most `jobs` waiting: memory does not grow with the manifest
  bool eof_ = false;
  size_t total_ = 0, done_ = 0, running_ = 0;
  // The records written so far, by status (kBatchStatuses): what the progress line counts.
  std::map<std::string, size_t> ended_;
  int64_t tokens_ = 0;
  // The task each worker runs (empty: none) and since when: the progress line names them.
  struct Running {
    std::string id;
    Clock::time_point since;
  };
  std::vector<std::optional<Running>> running_tasks_;
  StopReason limit_ = StopReason::kNone;  // the first batch-wide limit reached
  bool terminal_ = false;
  bool finished_ = false;              // every worker has returned: the heartbeat stops
  std::condition_variable heartbeat_;  // wakes the heartbeat early when finished_
};

StopReason Batch::ShouldStop() {
  if (cancel_.cancelled()) return StopReason::kSignal;
  if (time_up_.cancelled()) return StopReason::kMaxTime;
  if (options_.max_failures && static_cast<int64_t>(ended_["failed"]) >= *options_.max_failures) {
    return StopReason::kMaxFailures;
  }
  if (options_.max_total_tokens && tokens_ >= *options_.max_total_tokens) {
    return StopReason::kMaxTokens;
  }
  return StopReason::kNone;
}

void Batch::Progress() {
  // The counts are those of the records written (a task is counted once its record is), so
  // after a signal the line says "interrupted" where the records do.
  std::string line = fmt::format("batch: {}/{} done, {} running", done_, total_, running_);
  for (const char* status : kBatchStatuses) {
    line += fmt::format(", {} {}", ended_[status], status);
  }
  line += fmt::format(", {} tokens", tokens_);
  // The tasks running, longest first, with how long they have been running.
  std::vector<const Running*> now;
  for (const std::optional<Running>& r : running_tasks_) {
    if (r) now.push_back(&*r);
  }
  std::sort(now.begin(), now.end(),
            [](const Running* a, const Running* b) { return a->since < b->since; });
  const Clock::time_point at = Clock::now();
  for (size_t i = 0; i < now.size() && i < kProgressNames; ++i) {
    const int64_t s = std::chrono::duration_cast<std::chrono::seconds>(at - now[i]->since).count();
    line += fmt::format("{}{} {}", i == 0 ? "; running: " : ", ", now[i]->id,
                        FormatDurationMs(s * 1000));
  }
  if (now.size() > kProgressNames) line += fmt::format(" and {} more", now.size() - kProgressNames);
  line = terminal_ ? "\r\033[K" + line : line + "\n";
  // Written only when it cannot block: the lock is held, and a stderr no one reads (a full
  // pipe) would otherwise stop every worker. A pipe that polls writable takes PIPE_BUF bytes
  // at once; a longer line, or no room, loses this line, not the batch (the next one says
  // it all again).
  pollfd room{STDERR_FILENO, POLLOUT, 0};
  if (line.size() <= PIPE_BUF && ::poll(&room, 1, 0) == 1 && (room.revents & POLLOUT) != 0) {
    (void)WriteAll(STDERR_FILENO, line);
  }
}

void Batch::Heartbeat(int64_t every_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!finished_) {
    heartbeat_.wait_for(lock, std::chrono::milliseconds(every_ms));
    if (!finished_) Progress();
  }
}

Status Batch::Prepare(size_t total, const std::vector<std::optional<std::string>>& sandboxes,
                      const std::string& out_real) {
  total_ = total;
  terminal_ = ::isatty(STDERR_FILENO) != 0;
  int fd = ::open(options_.out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return MakeError(fmt::format("--out {}: {}", options_.out, std::strerror(errno)));
  out_fd_ = Fd(fd);
  Result<Fd> tasks = MakeDirBeneath(out_fd_.get(), "tasks", true);
  if (!tasks.ok()) return MakeError(fmt::format("--out {}: {}", options_.out, tasks.message()));
  tasks_fd_ = std::move(*tasks);
  work_path_ = options_.work_dir ? *options_.work_dir : options_.out + "/work";
  if (Status made = MakeDirs(work_path_); !made.ok()) {
    return MakeError(fmt::format("--work-dir {}: {}", work_path_, made.message()));
  }
  work_path_ = Canonical(work_path_);
  fd = ::open(work_path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return MakeError(fmt::format("--work-dir {}: {}", work_path_, std::strerror(errno)));
  work_fd_ = Fd(fd);
  if (Status ok = RefuseReachableRecords(sandboxes, out_real); !ok.ok()) return ok;
  if (int err = OpenBeneath(out_fd_.get(), "results.jsonl", O_WRONLY | O_APPEND | O_CREAT, 0644,
                            kBeneathNoSymlinks, &results_fd_);
      err != 0) {
    return MakeError(fmt::format("{}/results.jsonl: {}", options_.out, std::strerror(err)));
  }
  return {};
}

Status Batch::SetUpClone(const BatchTask& task, const std::string& clone) {
  const std::string parent = clone.substr(0, clone.rfind('/'));
  Result<std::string> cloned =
      BatchGit(parent, {"clone", "--no-hardlinks", "-q", "--", task.repo, "repo"}, env_,
               {cancel_.wake_fd(), time_up_.wake_fd()}, 0);  // a large clone takes what it takes
  if (!cloned.ok()) return cloned.error();
  std::string target = "HEAD";
  if (task.ref) {
    // A branch of the source is origin/REF in the clone; a tag or commit is itself.
    Result<std::string> sha = BatchGit(
        clone,
        {"rev-parse", "--verify", "--quiet", "refs/remotes/origin/" + *task.ref + "^{commit}"},
        env_);
    if (!sha.ok())
      sha = BatchGit(clone, {"rev-parse", "--verify", "--quiet", *task.ref + "^{commit}"}, env_);
    if (!sha.ok()) return MakeError(fmt::format("ref '{}' not found in {}", *task.ref, task.repo));
    target = *sha;
    while (!target.empty() && target.back() == '\n') target.pop_back();
  }
  Result<std::string> branch =
      BatchGit(clone, {"checkout", "-q", "-B", "agentexec/" + task.id, target, "--"}, env_);
  if (!branch.ok()) return branch.error();
  return {};
}

Status Batch::RefuseReachableRecords(const std::vector<std::optional<std::string>>& sandboxes,
                                     const std::string& out_real) {
  // The task's own workspace is the one root expected: a directory of batch's, made for this
  // question and named as no task id can be.
  const std::string probe = work_path_ + "/.writable-roots";
  ::rmdir(probe.c_str());
  if (::mkdir(probe.c_str(), 0700) != 0) {
    return MakeError(
        fmt::format("--work-dir {}: {}", work_path_, Errno(("mkdir " + probe).c_str())));
  }
  Status verdict;
  for (const std::optional<std::string>& sandbox : sandboxes) {
    sandbox::SpawnSpec spec;
    spec.argv = {self_, "exec"};
    spec.argv.insert(spec.argv.end(), options_.exec_args.begin(), options_.exec_args.end());
    if (sandbox) spec.argv.insert(spec.argv.end(), {"-s", *sandbox});
    spec.argv.insert(spec.argv.end(), {"-C", probe, "--print-writable-roots"});
    spec.cwd = probe;
    spec.env = env_;
    std::string out, err;
    Result<ChildResult> asked = RunChild(
        std::move(spec), "", [&](const char* d, size_t n) { out.append(d, n); },
        [&](const char* d, size_t n) { err.append(d, std::min(n, size_t{4096})); }, {},
        kGitTimeoutMs);
    if (!asked.ok() || asked->exit_code != 0) {
      while (!err.empty() && err.back() == '\n') err.pop_back();
      verdict = MakeError(fmt::format("cannot ask agentexec which paths a task could write: {}",
                                      asked.ok() ? err : asked.message()));
      break;
    }
    const std::string who =
        sandbox ? fmt::format("a task with sandbox '{}'", *sandbox) : "a task with these options";
    size_t at = 0;
    while (verdict.ok() && at < out.size()) {
      size_t end = out.find('\n', at);
      if (end == std::string::npos) end = out.size();
      const std::string root = out.substr(at, end - at);
      at = end + 1;
      // danger-full-access ("/") isolates nothing, by the user's choice. The probe stands for
      // the task's own clone, its workspace: what lies in it (a relative --add-dir) is the
      // task's own.
      if (root.empty() || root == "/" || Inside(root, probe)) continue;
      for (auto [flag, dir] : {std::pair<const char*, const std::string*>{"--out", &out_real},
                               {"--work-dir", &work_path_}}) {
        if (Inside(*dir, root) || Inside(root, *dir)) {
          verdict = MakeError(
              fmt::format("{} {} is reachable from the tasks' commands ({} may write {}): "
                          "choose a directory outside it, or leave it out of writable_roots, "
                          "--add-dir and shared_tmp",
                          flag, *dir, who, root));
          break;
        }
      }
    }
    if (!verdict.ok()) break;
  }
  ::rmdir(probe.c_str());
  return verdict;
}

bool Batch::Stopped(TaskRun& run) const {
  if (!cancel_.cancelled() && !time_up_.cancelled()) return false;
  run.rec.status = "interrupted";
  return true;
}

Status Batch::OpenTaskDirs(TaskRun& run, Fd* task_dir_out) {
  const std::string& id = run.task.id;
  if (Status ok = MoveAside(tasks_fd_.get(), id); !ok.ok()) return ok;
  Result<Fd> task_dir = MakeDirBeneath(tasks_fd_.get(), id, false);
  if (!task_dir.ok()) return task_dir.error();
  run.task_fd = task_dir->get();
  *task_dir_out = std::move(*task_dir);
  if (Status ok = MoveAside(work_fd_.get(), id); !ok.ok()) return ok;
  Result<Fd> work_dir = MakeDirBeneath(work_fd_.get(), id, false);
  if (!work_dir.ok()) return work_dir.error();
  run.work_dir = std::move(*work_dir);
  run.work = work_path_ + "/" + id;
  run.clone = run.work + "/repo";
  return {};
}

Status Batch::Checkout(TaskRun& run) {
  const BatchTask& task = run.task;
  if (Status ok = SetUpClone(task, run.clone); !ok.ok()) {
    Stopped(run);  // stopped while the clone was made: the task did not run; --resume runs it
    return ok;
  }
  run.rec.branch = "agentexec/" + task.id;
  Result<std::string> git_config = GitConfigState(run.clone);
  if (!git_config.ok()) return git_config.error();
  run.git_config = std::move(*git_config);
  run.cwd = run.clone;
  if (task.dir) {
    // The checkout decides what `dir` is: it must be a directory inside the clone.
    const std::string real_clone = Canonical(run.clone);
    const std::string real = Canonical(run.clone + "/" + *task.dir);
    struct stat st {};
    if (!Inside(real, real_clone) || ::stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return MakeError(fmt::format("dir '{}' is not a directory inside the repository", *task.dir));
    }
    run.cwd = real;
  }
  if (task.prompt) {
    run.prompt = *task.prompt;
    return {};
  }
  Result<std::string> read = ReadRegularFile(*task.prompt_file);
  if (!read.ok())
    return MakeError(fmt::format("prompt_file {}: {}", *task.prompt_file, read.message()));
  run.prompt = std::move(*read);
  return {};
}

std::vector<std::string> Batch::ExecArgv(const TaskRun& run) const {
  const BatchTask& task = run.task;
  std::vector<std::string> argv = {self_, "exec", "--json"};
  argv.insert(argv.end(), options_.exec_args.begin(), options_.exec_args.end());
  if (task.model) argv.insert(argv.end(), {"-m", *task.model});
  if (task.sandbox) argv.insert(argv.end(), {"-s", *task.sandbox});
  if (task.max_turns) argv.insert(argv.end(), {"--max-turns", std::to_string(*task.max_turns)});
  if (task.max_tokens) argv.insert(argv.end(), {"--max-tokens", std::to_string(*task.max_tokens)});
  if (task.timeout) argv.insert(argv.end(), {"--timeout", *task.timeout});
  if (task.output_schema) argv.insert(argv.end(), {"--output-schema", *task.output_schema});
  argv.insert(argv.end(), {"-C", run.cwd, "-o", run.work + "/final-message.md", "-"});
  return argv;
}

Status Batch::RunAgent(TaskRun& run) {
  sandbox::SpawnSpec spec;
  spec.argv = ExecArgv(run);
  spec.cwd = run.cwd;
  Result<Fd> events = CreateBeneath(run.task_fd, "events.jsonl");
  if (!events.ok()) return events.error();
  Result<Fd> errlog = CreateBeneath(run.task_fd, "stderr.log");
  if (!errlog.ok()) return errlog.error();
  EventScanner scanner;
  auto on_out = [&](const char* d, size_t n) {
    scanner.Feed(d, n);
    Status w = WriteAll(events->get(), std::string_view(d, n));
    if (!w.ok() && run.write_error.empty()) run.write_error = "events.jsonl: " + w.message();
  };
  std::string err_tail;  // the end of stderr: the error of a child that failed before its turn
  auto on_err = [&](const char* d, size_t n) {
    err_tail.append(d, n);
    if (err_tail.size() > 4096) err_tail.erase(0, err_tail.size() - 4096);
    Status w = WriteAll(errlog->get(), std::string_view(d, n));
    if (!w.ok() && run.write_error.empty()) run.write_error = "stderr.log: " + w.message();
  };
  if (Stopped(run)) return MakeError("stopped before the task started");
  // The credentials' copy for this child, made here where nothing returns before RunChild,
  // which wipes it once the child has started.
  spec.env = env_;
  Result<ChildResult> child = RunChild(std::move(spec), run.prompt, on_out, on_err,
                                       {cancel_.wake_fd(), time_up_.wake_fd()}, 0);
  if (!child.ok()) return MakeError("cannot start agentexec exec: " + child.message());
  BatchRecord& rec = run.rec;
  rec.exit_code = child->exit_code;
  rec.tokens = scanner.tokens;
  rec.hosts_reached = scanner.hosts_reached;
  rec.hosts_refused = scanner.hosts_refused;
  if (!scanner.error_code.empty()) rec.error_code = scanner.error_code;
  if (!scanner.error_message.empty()) rec.error = scanner.error_message;
  if (!rec.error && child->exit_code != 0) {
    while (!err_tail.empty() && (err_tail.back() == '\n' || err_tail.back() == '\r')) {
      err_tail.pop_back();
    }
    std::string last =
        err_tail.substr(err_tail.rfind('\n') == std::string::npos ? 0 : err_tail.rfind('\n') + 1);
    if (!last.empty()) rec.error = FirstLine(last);
  }
  if (child->exit_code == 0) {
    rec.status = "succeeded";
  } else if (child->terminated_by_us) {
    rec.status = "interrupted";
  }
  return {};
}

void Batch::KeepAnswer(TaskRun& run) {
  // The answer, from where the child wrote it (outside the clone) into the task's directory.
  int final_fd = ::openat(run.work_dir.get(), "final-message.md",
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (final_fd >= 0) {
    Fd holder(final_fd);
    struct stat st {};
    if (::fstat(final_fd, &st) == 0 && S_ISREG(st.st_mode)) {
      Result<std::string> text =
          ReadRegularFile("/proc/self/fd/" + std::to_string(final_fd), kMaxFinalMessageBytes);
      if (text.ok()) run.answer = std::move(*text);
    }
  }
  if (Status w = WriteBeneath(run.task_fd, "final-message.md", run.answer); !w.ok()) {
    if (run.write_error.empty()) run.write_error = w.message();
  }
  run.rec.answer = FirstLine(run.answer);
}

Status Batch::WritePatch(TaskRun& run) {
  Result<Fd> patch = CreateBeneath(run.task_fd, "changes.patch");
  if (!patch.ok()) return patch.error();
  std::string git_err;
  Result<ChildResult> diff = RunChild(
      GitSpec(run.clone,
              {"diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv", "--no-color",
               "HEAD", "--"},
              env_),
      "",
      [&](const char* d, size_t n) {
        Status w = WriteAll(patch->get(), std::string_view(d, n));
        if (!w.ok() && run.write_error.empty()) run.write_error = "changes.patch: " + w.message();
      },
      [&](const char* d, size_t n) {
        if (git_err.size() < 4096) git_err.append(d, std::min(n, size_t{4096}));
      },
      {}, kGitTimeoutMs);
  if (!diff.ok() || diff->exit_code != 0) {
    return MakeError("git diff failed: " + (diff.ok() ? git_err : diff.message()));
  }
  return {};
}

Status Batch::CommitChanges(TaskRun& run) {
  // Only while git's view of the repository is still the one batch set up.
  Result<std::string> config_after = GitConfigState(run.clone);
  if (!config_after.ok() || *config_after != run.git_config) {
    return MakeError(fmt::format(
        "the task changed the clone's git configuration ({}); batch runs no git command on it",
        config_after.ok() ? ".git/config" : config_after.message()));
  }
  if (Status staged = StageChanges(run.clone, env_); !staged.ok()) return staged;
  if (Status patch = WritePatch(run); !patch.ok()) return patch;
  Result<std::string> names = BatchGit(
      run.clone, {"diff", "--cached", "--name-only", "-z", "--no-ext-diff", "HEAD", "--"}, env_);
  if (!names.ok()) return names.error();
  run.rec.files_changed = std::count(names->begin(), names->end(), '\0');
  if (run.rec.files_changed == 0) return {};
  Result<std::string> stat = BatchGit(run.clone,
                                      {"diff", "--cached", "--stat=100", "--no-ext-diff",
                                       "--no-textconv", "--no-color", "HEAD", "--"},
                                      env_);
  if (!stat.ok()) return stat.error();
  run.diffstat = std::move(*stat);
  std::vector<std::string> args;
  if (std::getenv("GIT_AUTHOR_EMAIL") == nullptr) {
    args = {"-c", "user.name=agentexec", "-c", "user.email=agentexec@localhost"};
  }
  args.insert(args.end(), {"commit", "--no-verify", "-q", "-m", "agentexec batch: " + run.task.id});
  Result<std::string> committed = BatchGit(run.clone, args, env_);
  if (!committed.ok()) return committed.error();
  return {};
}

Status Batch::RunTaskCheck(TaskRun& run) {
  const BatchTask& task = run.task;
  const std::optional<std::string>& check = task.check ? task.check : options_.check;
  if (!check || run.rec.status != "succeeded") return {};
  int64_t timeout = options_.check_timeout_ms;
  if (task.check_timeout) {
    Result<int64_t> ms = ParseDurationMs(*task.check_timeout);  // checked with the manifest
    if (ms.ok()) timeout = *ms;
  }
  Result<Fd> log = CreateBeneath(run.task_fd, "check.log");
  if (!log.ok()) return log.error();
  CheckRun checked = RunCheck(CheckArgv(self_, options_.exec_args, task.sandbox, *check), run.cwd,
                              env_, log->get(), {cancel_.wake_fd(), time_up_.wake_fd()}, timeout);
  BatchRecord& rec = run.rec;
  rec.check = checked.check;
  if (checked.interrupted) {
    rec.status = "interrupted";
  } else if (checked.check.exit_code != 0) {
    rec.status = "failed";
    rec.error = checked.check.timed_out
                    ? "the check timed out after " + FormatDurationMs(timeout)
                    : fmt::format("the check exited {}", checked.check.exit_code);
  }
  // It ran in the clone: publish pushes from there only while git's view is batch's.
  Result<std::string> after_check = GitConfigState(run.clone);
  if (!after_check.ok() || *after_check != run.git_config) {
    return MakeError(
        "the check changed the clone's git configuration; batch pushes nothing from it");
  }
  return {};
}

BatchRecord Batch::RunTask(const BatchTask& task, Fd* task_dir_out) {
  const Clock::time_point start = Clock::now();
  TaskRun run{task};
  BatchRecord& rec = run.rec;
  rec.id = task.id;
  rec.status = "failed";
  auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  auto fail = [&](const Status& failed) {
    if (rec.status == "succeeded") rec.status = "failed";  // the run went well, what followed not
    rec.error = failed.message();
    rec.duration_ms = elapsed();
    return rec;
  };
  if (Status ok = OpenTaskDirs(run, task_dir_out); !ok.ok()) return fail(ok);
  if (Status ok = Checkout(run); !ok.ok()) return fail(ok);
  if (Status ok = RunAgent(run); !ok.ok()) return fail(ok);
  KeepAnswer(run);
  // The clone's changes: the patch (binary-safe, new files included) and a commit.
  if (Status ok = CommitChanges(run); !ok.ok()) return fail(ok);
  if (!run.write_error.empty()) {
    rec.status = rec.status == "succeeded" ? "failed" : rec.status;
    rec.error = run.write_error;
  }
  if (rec.status == "succeeded" && rec.files_changed == 0 && task.expect_change.value_or(true)) {
    rec.status = "no_change";
  }
  // The check, after the changes are committed (what it builds is not the task's change).
  if (Status ok = RunTaskCheck(run); !ok.ok()) return fail(ok);
  if (rec.status == "succeeded" && rec.files_changed > 0) {
    if (Status ok = WriteDelivery(run); !ok.ok()) return fail(ok);
  }
  rec.duration_ms = elapsed();
  return rec;
}

Status Batch::WriteDelivery(const TaskRun& run) {
  const BatchTask& task = run.task;
  const BatchRecord& rec = run.rec;
  Result<std::string> head = BatchGit(run.clone, {"rev-parse", "--verify", "HEAD^{commit}"}, env_);
  if (!head.ok()) return head.error();
  BranchRecord branch{rec.branch.value_or(""), task.repo, head->substr(0, head->find('\n')),
                      task.ref};
  PullRequestInput pr{task.id,
                      run.prompt,
                      run.answer,
                      task.check ? task.check : options_.check,
                      rec.check ? CheckSummary(*rec.check) : "",
                      run.diffstat};
  for (auto [name, text] :
       {std::pair<const char*, std::string>{"git-config", run.git_config},
        {"pr-title.txt", PullRequestTitle(pr)},
        {"pr-body.md", PullRequestBody(pr)},
        // Last: publish takes a task with branch.json as one whose files are all there.
        {"branch.json", BranchRecordJson(branch)}}) {
    if (Status w = WriteBeneath(run.task_fd, name, text); !w.ok()) return w;
  }
  return {};
}

void Batch::Finish(const BatchRecord& record, int task_dirfd) {
  const std::string line = RecordJson(record);
  if (task_dirfd >= 0) {
    Status w = WriteBeneath(task_dirfd, "result.json", line + "\n");
    if (!w.ok())
      std::fprintf(stderr, "error: task %s: %s\n", record.id.c_str(), w.message().c_str());
  }
  std::lock_guard<std::mutex> lock(mu_);
  Status w = WriteAll(results_fd_.get(), line + "\n");
  if (!w.ok()) {
    std::fprintf(stderr, "error: %s/results.jsonl: %s\n", options_.out.c_str(),
                 w.message().c_str());
  }
}

void Batch::Worker(size_t slot) {
  for (;;) {
    BatchTask task;
    StopReason stop;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || eof_; });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      cv_.notify_all();
      stop = ShouldStop();
      if (stop == StopReason::kNone) {
        ++running_;
        running_tasks_[slot] = Running{task.id, Clock::now()};
        Progress();
      }
    }
    // Interrupted: the tasks not started get no record (--resume runs them), so stopping
    // takes no longer for a long manifest than for a short one.
    if (stop == StopReason::kSignal) continue;
    if (stop != StopReason::kNone) {
      BatchRecord rec;
      rec.id = task.id;
      rec.status = "skipped";
      rec.reason = StopName(stop);
      Finish(rec, -1);
      std::lock_guard<std::mutex> lock(mu_);
      ++ended_[rec.status];
      if (limit_ == StopReason::kNone) limit_ = stop;
      Progress();
      continue;
    }
    Fd task_dir;
    BatchRecord rec = RunTask(task, &task_dir);
    if (rec.status == "interrupted" && !cancel_.cancelled() && time_up_.cancelled()) {
      rec.reason = StopName(StopReason::kMaxTime);
    }
    rec.reason = RecordReason(rec);
    Finish(rec, task_dir.get());
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    running_tasks_[slot].reset();
    ++done_;
    ++ended_[rec.status];
    tokens_ += rec.tokens;
    if (rec.status == "interrupted" && !cancel_.cancelled() && time_up_.cancelled() &&
        limit_ == StopReason::kNone) {
      limit_ = StopReason::kMaxTime;
    }
    Progress();
  }
}

int Batch::Run(ManifestReader& reader, const Shard& shard,
               const std::unordered_set<std::string>& completed) {
  InstallSignalHandlers(cancel_);
  std::optional<Watchdog> watchdog;
  if (options_.max_total_time_ms) watchdog.emplace(time_up_, *options_.max_total_time_ms);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Progress();
  }
  running_tasks_.resize(static_cast<size_t>(options_.jobs));
  // On a terminal the line is rewritten each second (the running tasks' times); in a CI log
  // a line every heartbeat shows a long task is still going.
  std::thread heartbeat([this] { Heartbeat(terminal_ ? 1000 : options_.heartbeat_ms); });
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(options_.jobs));
  for (int i = 0; i < options_.jobs; ++i) {
    workers.emplace_back([this, i] { Worker(static_cast<size_t>(i)); });
  }
  for (;;) {
    Result<std::optional<BatchTask>> next = reader.Next();
    if (!next.ok()) continue;  // checked before anything ran; cannot happen unless it changed
    if (!*next || cancel_.cancelled()) break;
    BatchTask& task = **next;
    if (!shard.Takes(task.index) || completed.count(task.id) != 0) continue;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queue_.size() < static_cast<size_t>(options_.jobs); });
    queue_.push_back(std::move(task));
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }
  for (std::thread& t : workers) t.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    heartbeat_.notify_all();
  }
  heartbeat.join();
  if (terminal_) (void)WriteAll(STDERR_FILENO, "\n");
  switch (cancel_.reason()) {
    case CancelReason::kSigint:
      return ToInt(ExitCode::kInterrupted);
    case CancelReason::kSigterm:
      return ToInt(ExitCode::kTerminated);
    default:
      break;
  }
  int code = ended_["succeeded"] == done_ && ended_["skipped"] == 0 ? ToInt(ExitCode::kOk)
                                                                    : ToInt(ExitCode::kTurnFailed);
  if (limit_ != StopReason::kNone) {
    std::fprintf(stderr, "batch: stopped by --%s\n", StopName(limit_));
    code = ToInt(ExitCode::kLimitReached);
  }
  // Delivery, in this process once every task has ended: no task runs while git pushes. A
  // batch stopped by a signal pushed nothing (publish can, later).
  if (options_.push) {
    BatchPublishOptions publish{options_.out, options_.work_dir, options_.force};
    if (PublishBatch(publish, env_) != ToInt(ExitCode::kOk) && code == ToInt(ExitCode::kOk)) {
      code = ToInt(ExitCode::kTurnFailed);
    }
  }
  return code;
}

// The ids with a completed record (succeeded, failed or no_change) in OUT/results.jsonl; the
// last record of an id wins, so a task that was interrupted and then ran is completed.
Result<std::unordered_set<std::string>> CompletedIds(const std::string& out) {
  std::unordered_set<std::string> done;
  Status read = ForEachResult(out + "/results.jsonl", true, [&](BatchRecord r) {
    if (r.status == "succeeded" || r.status == "failed" || r.status == "no_change") {
      done.insert(std::move(r.id));
    } else {
      done.erase(r.id);
    }
  });
  if (!read.ok()) return read.error();
  return done;
}

}  // namespace

namespace {

// Where the records go, before anything runs.
struct OutPlan {
  std::string out_real, work_real;            // --out and --work-dir, canonical
  std::unordered_set<std::string> completed;  // --resume: the ids with a completed record
};

// --out: created if missing, never inside --work-dir; one that already holds a batch only with
// --resume, which then skips the tasks it completed.
Result<OutPlan> PlanOut(const BatchRunOptions& options) {
  struct stat st {};
  if (::stat(options.out.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return MakeError(fmt::format("--out {}: not a directory", options.out));
  }
  if (Status made = MakeDirs(options.out); !made.ok()) {
    return MakeError(fmt::format("--out {}: {}", options.out, made.message()));
  }
  OutPlan plan;
  plan.out_real = Canonical(options.out);
  plan.work_real = Canonical(options.work_dir ? *options.work_dir : options.out + "/work");
  if (Inside(plan.out_real, plan.work_real)) {
    return MakeError(fmt::format(
        "--out {} is inside --work-dir {}, where the tasks' clones are: choose a directory "
        "outside it",
        options.out, plan.work_real));
  }
  const bool has_results = ::stat((options.out + "/results.jsonl").c_str(), &st) == 0;
  if (!options.resume && has_results) {
    return MakeError(fmt::format(
        "--out {} already holds a batch (results.jsonl): use --resume to finish it, or another "
        "directory",
        options.out));
  }
  if (options.resume && has_results) {
    Result<std::unordered_set<std::string>> ids = CompletedIds(options.out);
    if (!ids.ok()) return ids.error();
    plan.completed = std::move(*ids);
  }
  return plan;
}

// What this shard will run, read once through the manifest before anything starts.
struct ShardTasks {
  size_t total = 0;
  std::vector<std::optional<std::string>> sandboxes;  // each distinct task `sandbox`, once
};

// Counts this shard's tasks still to run, and refuses --out and --work-dir inside any task's
// local repository (a command the task runs could reach them).
Result<ShardTasks> ScanShard(const BatchRunOptions& options, const Shard& shard,
                             const OutPlan& plan) {
  Result<ManifestReader> reader = ManifestReader::Open(options.manifest);
  if (!reader.ok()) return reader.error();
  ShardTasks tasks;
  for (;;) {
    Result<std::optional<BatchTask>> next = reader->Next();
    if (!next.ok()) return next.error();
    if (!*next) break;
    const BatchTask& task = **next;
    if (!task.repo_is_url) {
      const std::string repo_real = Canonical(task.repo);
      for (auto [flag, dir] : {std::pair<const char*, const std::string*>{"--out", &plan.out_real},
                               {"--work-dir", &plan.work_real}}) {
        if (Inside(*dir, repo_real)) {
          return MakeError(fmt::format(
              "{} {} is inside the repository of task '{}' ({}): a command the task runs could "
              "reach it; choose a directory outside it",
              flag, *dir, task.id, repo_real));
        }
      }
    }
    if (!shard.Takes(task.index) || plan.completed.count(task.id) != 0) continue;
    ++tasks.total;
    if (std::find(tasks.sandboxes.begin(), tasks.sandboxes.end(), task.sandbox) ==
        tasks.sandboxes.end()) {
      tasks.sandboxes.push_back(task.sandbox);
    }
  }
  return tasks;
}

}  // namespace

int RunBatch(const BatchRunOptions& options) {
  Result<std::vector<std::string>> errors = CheckManifest(options.manifest);
  if (!errors.ok()) return FailWith(ExitCode::kUsage, errors.message());
  if (!errors->empty()) {
    for (const std::string& e : *errors) std::fprintf(stderr, "error: %s\n", e.c_str());
    return ToInt(ExitCode::kUsage);
  }
  Result<Shard> shard = ResolveShard(options.shard, options.shard_total, ShardEnvironment());
  if (!shard.ok()) return FailWith(ExitCode::kUsage, shard.message());
  Result<OutPlan> plan = PlanOut(options);
  if (!plan.ok()) return FailWith(ExitCode::kUsage, plan.message());
  Result<ShardTasks> tasks = ScanShard(options, *shard, *plan);
  if (!tasks.ok()) return FailWith(ExitCode::kUsage, tasks.message());

  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return FailWith(ExitCode::kUsage, Errno("/proc/self/exe"));
  self[n] = '\0';

  Batch batch(options, self);
  if (Status ok = batch.Prepare(tasks->total, tasks->sandboxes, plan->out_real); !ok.ok()) {
    return FailWith(ExitCode::kUsage, ok.message());
  }
  if (!shard->source.empty()) {
    std::fprintf(stderr, "batch: shard %zu/%zu (%s)\n", shard->index, shard->total,
                 shard->source.c_str());
  }
  Result<ManifestReader> reader = ManifestReader::Open(options.manifest);
  if (!reader.ok()) return FailWith(ExitCode::kUsage, reader.message());
  return batch.Run(*reader, *shard, plan->completed);
}

}  // namespace ae
