#include "runner/run_exec.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>

#include "base/fd.h"
#include "base/write_all.h"

#include "base/signals.h"
#include "cli/exit_code.h"
#include "engine/rollout.h"
#include "engine/session.h"
#include "outputs/human_sink.h"
#include "outputs/jsonl_sink.h"
#include "outputs/last_message.h"
#include "outputs/progress.h"
#include "runner/load_run.h"
#include "runner/prompt.h"
#include "runner/review.h"

namespace ae {
namespace {

// resume ID / --last -> the thread to continue. An unknown id is exit 2, never a new session
// (a typo must not silently lose the thread). `--last` with no earlier session in this
// directory starts a new thread, as codex does (a CI job's first run has nothing to resume):
// nullopt, and the caller says so.
// `fork ID` finds its session the way `resume ID` does; `all`: --last of any directory.
Result<std::optional<LoadedRollout>> FindResume(const LoadedRun& run, const ResumeTarget& target,
                                                bool all) {
  Result<std::string> path =
      target.last ? FindLatestRollout(run.home, all ? std::string() : run.session.cwd)
                  : FindRolloutById(run.home, target.session_id);
  if (!path.ok() && target.last) return std::optional<LoadedRollout>();
  if (!path.ok()) return path.error();
  Result<LoadedRollout> loaded = LoadRollout(*path, SessionsDir(run.home));
  if (!loaded.ok()) return loaded.error();
  return std::optional<LoadedRollout>(std::move(*loaded));
}

bool UseColor(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(STDERR_FILENO) && (no_color == nullptr || *no_color == '\0');
}

// --events-file FILE, opened before the session starts (and before any command could plant
// something there): never through a symlink (O_NOFOLLOW), a regular file only, and a FIFO
// refused without waiting for a reader (O_NONBLOCK until checked).
Result<Fd> OpenEventsFile(const std::string& path) {
  if (path.empty()) return MakeError("--events-file: empty path");
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
               0644));
  if (!fd) {
    if (errno == ELOOP) {
      return MakeError(fmt::format(
          "cannot write --events-file '{}': it is a symbolic link (not followed)", path));
    }
    if (errno == ENXIO) {  // a FIFO with no reader, or a device file with no device
      return MakeError(fmt::format("cannot write --events-file '{}': not a regular file", path));
    }
    return MakeError(
        fmt::format("cannot write --events-file '{}': {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return MakeError(fmt::format("cannot write --events-file '{}': not a regular file", path));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return MakeError(
        fmt::format("cannot write --events-file '{}': {}", path, std::strerror(errno)));
  }
  return fd;
}

// Whether -o and --events-file name one file (the same path, through links or `..`, or two
// hard links): the final message would replace the events at the end of the run.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec_a, ec_b;
  const std::filesystem::path pa = std::filesystem::weakly_canonical(a, ec_a);
  const std::filesystem::path pb = std::filesystem::weakly_canonical(b, ec_b);
  if (!ec_a && !ec_b && pa == pb) return true;
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

SessionResult RunSessionGuarded(const SessionConfig& session, const std::string& prompt,
                                const std::vector<EventSink*>& sinks, CancelToken& cancel) {
  std::string what;
  try {
    return RunSession(session, prompt, sinks, cancel);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  SessionResult failed;
  failed.code = ErrorCode::kModelError;
  failed.error = "internal error: " + what;
  try {
    for (EventSink* sink : sinks) {
      sink->Emit(StreamError{failed.error});
      sink->Emit(TurnFailed{failed.error, failed.code});
    }
  } catch (...) {
  }
  return failed;
}

namespace {

// A step that ended the command: the exit status to return (the message already printed).
using Ended = std::optional<int>;

// --print-config: the effective settings and their sources on stdout.
int PrintConfig(const LoadedRun& run) {
  Status printed = WriteAll(STDOUT_FILENO, FormatConfig(run.config));
  if (!printed.ok()) return FailWith(ExitCode::kOutputFailed, "stdout: " + printed.message());
  return ToInt(ExitCode::kOk);
}

// The session as the run will start it: homes, --ephemeral, and the thread `resume` or `fork`
// continues (its model and provider kept unless configured otherwise).
Ended PrepareSession(const CliArgs& args, const LoadedRun& run, SessionConfig& session) {
  session = run.session;
  session.home = run.home;
  if (const char* codex_home = std::getenv("CODEX_HOME"); codex_home != nullptr && *codex_home) {
    std::error_code ec;
    session.codex_home = std::filesystem::absolute(codex_home, ec).string();
  }
  session.ephemeral = run.ephemeral;
  std::optional<ResumeTarget> target = run.resume;
  if (args.fork) target = ResumeTarget{false, args.session_id.value_or("")};
  if (!target) return std::nullopt;
  Result<std::optional<LoadedRollout>> resume = FindResume(run, *target, args.resume_all);
  if (!resume.ok()) return FailWith(ExitCode::kUsage, resume.message());
  if (!resume->has_value()) {
    session.warnings.push_back(fmt::format(
        "resume --last: no earlier session for {} under {}/sessions, so a new thread starts",
        args.resume_all ? std::string("any directory") : session.cwd, run.home));
    return std::nullopt;
  }
  LoadedRollout& found = **resume;
  Result<std::string> kept =
      KeepResumedModel(found.meta.provider, found.meta.model, run.config, session);
  if (!kept.ok()) return FailWith(ExitCode::kUsage, kept.message());
  std::fprintf(stderr, "%s\n", kept->c_str());
  session.resume = std::move(found);
  session.fork = args.fork;
  return std::nullopt;
}

// The files the run writes besides stdout, opened before any command runs: -o's directory
// (the answer is written beneath it at the end: outputs/last_message.h), each review --report
// FILE held the same way, and --events-file.
struct RunFiles {
  std::optional<OutputFile> last_message;
  std::vector<std::pair<ReviewFormat, OutputFile>> reports;
  Fd events;
};

Ended OpenRunFiles(const CliArgs& args, const LoadedRun& run, RunFiles& files) {
  // Checked before either is opened: opening the events file truncates it.
  if (run.output_last_message && args.events_file &&
      SameFile(*run.output_last_message, *args.events_file)) {
    return FailWith(ExitCode::kUsage,
                    fmt::format("--events-file '{}' and --output-last-message '{}' name the same "
                                "file: the final message would replace the events; give each its "
                                "own file",
                                *args.events_file, *args.output_last_message));
  }
  if (run.output_last_message) {
    Result<OutputFile> prepared = PrepareOutputFile(*run.output_last_message);
    if (!prepared.ok()) return FailWith(ExitCode::kOutputFailed, prepared.message());
    files.last_message = std::move(*prepared);
  }
  for (const auto& [format, path] :
       args.review ? args.review->reports : std::vector<std::pair<ReviewFormat, std::string>>{}) {
    std::error_code ec;
    Result<OutputFile> prepared =
        PrepareOutputFile(std::filesystem::absolute(path, ec).string(), "--report");
    if (!prepared.ok()) return FailWith(ExitCode::kOutputFailed, prepared.message());
    files.reports.emplace_back(format, std::move(*prepared));
  }
  if (args.events_file) {
    Result<Fd> opened = OpenEventsFile(*args.events_file);
    if (!opened.ok()) return FailWith(ExitCode::kOutputFailed, opened.message());
    files.events = std::move(*opened);
  }
  return std::nullopt;
}

// The user message: a review's (the change and its instructions), none for a fork without a
// prompt (the new thread is recorded, no turn runs), else PROMPT and piped stdin.
Result<std::string> ReadRunPrompt(const CliArgs& args, SessionConfig& session,
                                  std::optional<ReviewRun>& review) {
  // A review and a fork read stdin only for `-`; a plain run whenever PROMPT is absent.
  const bool from_stdin =
      args.review || args.fork ? args.prompt == "-" : !args.prompt || *args.prompt == "-";
  if (from_stdin && !::isatty(STDIN_FILENO)) std::fputs("Reading prompt from stdin...\n", stderr);
  if (args.review) {
    std::unique_ptr<Git> git = MakeSystemGit(session.cwd);
    Result<ReviewRun> prepared = PrepareReview(args, *git, session, STDIN_FILENO);
    if (!prepared.ok()) return prepared.error();
    review = std::move(*prepared);
    return review->prompt;
  }
  if (args.fork && !args.prompt) return std::string();
  PromptOptions options;
  options.append_piped_stdin = true;
  std::string note;
  Result<std::string> prompt = ReadPrompt(args.prompt, STDIN_FILENO, options, &note);
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  return prompt;
}

// Every sink of one run: the final message, stdout's JSON lines or the human log with its
// progress, the --events-file lines, the review's item.
class RunSinks {
 public:
  RunSinks(const CliArgs& args, const LoadedRun& run, const RunFiles& files,
           const std::optional<ReviewRun>& review, const std::string& prompt, CancelToken& cancel)
      : jsonl_(STDOUT_FILENO, &cancel),
        human_(STDERR_FILENO, HumanOptions(run, review, prompt, cancel)) {
    sinks_.push_back(&last_);
    // --events-file: the same lines as --json's stdout, through a second sink of the same kind.
    if (files.events) {
      events_file_.emplace(files.events.get(), &cancel,
                           fmt::format("--events-file '{}'", *args.events_file));
      sinks_.push_back(&*events_file_);
    }
    if (run.json) {
      sinks_.push_back(&jsonl_);
    } else {
      // Human mode: a long command shows a live line on a terminal, notices in a CI log.
      ProgressOptions progress_options;
      progress_options.terminal = ::isatty(STDERR_FILENO) != 0;
      progress_.emplace(human_, STDERR_FILENO, progress_options);
      sinks_.push_back(&*progress_);
    }
    if (review) sinks_.push_back(&review_);
  }

  const std::vector<EventSink*>& sinks() const { return sinks_; }
  // Stops the progress ticker and erases a live line.
  void Close() {
    if (progress_) progress_->Close();
  }
  const LastMessageSink& last() const { return last_; }
  std::optional<ReviewItem> review() const { return review_.review(); }
  // The JSON lines sinks that lost lines (their reader went away, a full disk).
  std::vector<const JsonlSink*> Failed() const {
    std::vector<const JsonlSink*> failed;
    for (const JsonlSink* sink : {&jsonl_, events_file_ ? &*events_file_ : nullptr}) {
      if (sink != nullptr && sink->failed()) failed.push_back(sink);
    }
    return failed;
  }

 private:
  static HumanSinkOptions HumanOptions(const LoadedRun& run, const std::optional<ReviewRun>& review,
                                       const std::string& prompt, CancelToken& cancel) {
    HumanSinkOptions options;
    options.cancel = &cancel;
    options.color = UseColor(run.color);
    options.version = AGENTEXEC_VERSION;
    options.prompt = review ? review->summary : prompt;
    if (review) options.repo_root = review->repo_root;
    return options;
  }

  LastMessageSink last_;
  JsonlSink jsonl_;
  HumanSink human_;
  std::optional<ProgressSink> progress_;
  std::optional<JsonlSink> events_file_;
  ReviewSink review_;
  std::vector<EventSink*> sinks_;
};

// After the turn: the final message to stdout (human mode), -o and each --report written, and
// every output that failed reported. Returns the failure the exit code comes from: the turn's,
// or output_unwritable when the turn completed and an output could not be written.
ErrorCode FinishOutputs(const LoadedRun& run, const RunFiles& files, const RunSinks& sinks,
                        const std::optional<ReviewRun>& review, const SessionResult& result) {
  const bool completed = result.code == ErrorCode::kNone;
  ErrorCode failure = result.code;
  auto report = [&failure](const std::string& message) {
    std::fprintf(stderr, "error: %s\n", message.c_str());
    if (failure == ErrorCode::kNone) failure = ErrorCode::kOutputUnwritable;
  };
  if (run.json && !completed && !result.error.empty()) {
    std::fprintf(stderr, "error: %s\n", result.error.c_str());
  }
  // A review's final message is its structured result in the --format asked for.
  std::optional<ReviewItem> reviewed = sinks.review();
  const bool has_final = review ? reviewed.has_value() : sinks.last().has_message();
  const std::string final_text =
      review ? (reviewed ? FormatReview(*review, *reviewed) : "") : sinks.last().text();
  for (const JsonlSink* sink : sinks.Failed()) report(sink->error());
  // The session file could not be written (not --ephemeral): the run cannot be resumed. The
  // warning item already told the event stream (and, in human mode, stderr).
  if (!result.session_error.empty()) {
    if (run.json) std::fprintf(stderr, "warning: %s\n", result.session_error.c_str());
    if (failure == ErrorCode::kNone) failure = ErrorCode::kOutputUnwritable;
  }
  if (!run.json && completed && has_final) {
    Status written =
        WriteAll(STDOUT_FILENO, FinalMessageForStdout(final_text, ::isatty(STDOUT_FILENO)) + "\n");
    if (!written.ok()) report("cannot write the final message to stdout: " + written.message());
  }
  if (files.last_message) {
    // As codex: the last message without a trailing newline; an empty file when the turn
    // failed, so a stale answer from an earlier run is never mistaken for this one's.
    Status written = WriteOutputFile(*files.last_message, completed ? final_text : "");
    if (!written.ok()) report(written.message());
  }
  for (const auto& [format, file] : files.reports) {
    ReviewRun as = *review;
    as.format = format;
    Status written =
        WriteOutputFile(file, completed && reviewed ? FormatReview(as, *reviewed) : "");
    if (!written.ok()) report(written.message());
  }
  return failure;
}

}  // namespace

int RunExec(const CliArgs& args) {
  Result<LoadedRun> loaded = LoadRun(args, Environment::FromProcess());
  if (!loaded.ok()) return FailWith(ExitCode::kUsage, loaded.message());
  const LoadedRun& run = *loaded;
  if (run.print_config) return PrintConfig(run);
  SessionConfig session;
  if (Ended ended = PrepareSession(args, run, session)) return *ended;
  RunFiles files;
  if (Ended ended = OpenRunFiles(args, run, files)) return *ended;
  std::optional<ReviewRun> review;
  Result<std::string> prompt = ReadRunPrompt(args, session, review);
  if (!prompt.ok()) return FailWith(ExitCode::kUsage, prompt.message());

  // In JSON mode stdout carries events only; warnings also go to stderr for the CI log.
  if (run.json) {
    for (const std::string& w : session.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  CancelToken cancel;
  InstallSignalHandlers(cancel);
  Watchdog watchdog(cancel, run.timeout_ms);
  RunSinks sinks(args, run, files, review, *prompt, cancel);
  SessionResult result = RunSessionGuarded(session, *prompt, sinks.sinks(), cancel);
  sinks.Close();
  return ToInt(ExitCodeFor(FinishOutputs(run, files, sinks, review, result)));
}

}  // namespace ae
