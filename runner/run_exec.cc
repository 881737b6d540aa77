#include "runner/run_exec.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <optional>

#include "base/write_all.h"

#include "engine/rollout.h"
#include "engine/session.h"
#include "outputs/human_sink.h"
#include "outputs/jsonl_sink.h"
#include "outputs/last_message.h"
#include "outputs/progress.h"
#include "runner/exit_code.h"
#include "runner/prompt.h"
#include "runner/review.h"
#include "runner/session_config.h"
#include "runner/signals.h"

namespace ae {
namespace {

// resume ID / --last -> the thread to continue (unknown id: exit 2, never a new session).
Result<LoadedRollout> FindResume(const LoadedRun& run) {
  Result<std::string> path = run.resume->last ? FindLatestRollout(run.home, run.session.cwd)
                                              : FindRolloutById(run.home, run.resume->session_id);
  if (!path.ok()) return path.error();
  return LoadRollout(*path);
}

bool UseColor(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(STDERR_FILENO) && (no_color == nullptr || *no_color == '\0');
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
  failed.outcome = SessionOutcome::kFailed;
  failed.error = "internal error: " + what;
  try {
    for (EventSink* sink : sinks) {
      sink->Emit(StreamError{failed.error});
      sink->Emit(TurnFailed{failed.error});
    }
  } catch (...) {
  }
  return failed;
}

int RunExec(const CliArgs& args) {
  Result<LoadedRun> loaded = LoadRun(args, Environment::FromProcess());
  if (!loaded.ok()) return FailWith(ExitCode::kUsage, loaded.message());
  LoadedRun& run = *loaded;
  if (run.print_config) {
    Status printed = WriteAll(STDOUT_FILENO, FormatConfig(run.config));
    if (!printed.ok()) return FailWith(ExitCode::kOutputFailed, "stdout: " + printed.message());
    return ToInt(ExitCode::kOk);
  }

  SessionConfig session = run.session;
  session.home = run.home;
  session.ephemeral = run.ephemeral;
  if (run.resume) {
    Result<LoadedRollout> resume = FindResume(run);
    if (!resume.ok()) return FailWith(ExitCode::kUsage, resume.message());
    Result<std::string> kept =
        KeepResumedModel(resume->meta.provider, resume->meta.model, run.config, session);
    if (!kept.ok()) return FailWith(ExitCode::kUsage, kept.message());
    std::fprintf(stderr, "%s\n", kept->c_str());
    session.resume = std::move(*resume);
  }

  if (run.output_last_message) {
    Status ok = PrepareOutputFile(*run.output_last_message);
    if (!ok.ok()) return FailWith(ExitCode::kOutputFailed, ok.message());
  }

  // A review reads stdin only for `-`; a plain run whenever PROMPT is absent.
  const bool from_stdin = args.review ? args.prompt == "-" : !args.prompt || *args.prompt == "-";
  if (from_stdin && !::isatty(STDIN_FILENO)) std::fputs("Reading prompt from stdin...\n", stderr);
  std::optional<ReviewRun> review;
  Result<std::string> prompt = MakeError("");
  if (args.review) {
    std::unique_ptr<Git> git = MakeSystemGit(session.cwd);
    Result<ReviewRun> prepared = PrepareReview(args, *git, session, STDIN_FILENO);
    if (!prepared.ok()) return FailWith(ExitCode::kUsage, prepared.message());
    review = std::move(*prepared);
    prompt = review->prompt;
  } else {
    prompt = ReadPrompt(args.prompt, STDIN_FILENO);
  }
  if (!prompt.ok()) return FailWith(ExitCode::kUsage, prompt.message());

  // In JSON mode stdout carries events only; warnings also go to stderr for the CI log.
  if (run.json) {
    for (const std::string& w : session.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }

  CancelToken cancel;
  InstallSignalHandlers(cancel);
  Watchdog watchdog(cancel, run.timeout_ms);

  LastMessageSink last;
  JsonlSink jsonl(STDOUT_FILENO, &cancel);
  HumanSinkOptions human_options;
  human_options.cancel = &cancel;
  human_options.color = UseColor(run.color);
  human_options.version = AGENTEXEC_VERSION;
  human_options.prompt = review ? review->summary : *prompt;
  if (review) human_options.repo_root = review->repo_root;
  HumanSink human(STDERR_FILENO, human_options);
  std::vector<EventSink*> sinks{&last};
  // Human mode: a long command shows a live line on a terminal, notices in a CI log.
  std::optional<ProgressSink> progress;
  if (run.json) {
    sinks.push_back(&jsonl);
  } else {
    ProgressOptions progress_options;
    progress_options.terminal = ::isatty(STDERR_FILENO) != 0;
    progress.emplace(human, STDERR_FILENO, progress_options);
    sinks.push_back(&*progress);
  }

  ReviewSink review_sink;
  if (review) sinks.push_back(&review_sink);

  SessionResult result = RunSessionGuarded(session, *prompt, sinks, cancel);
  if (progress) progress->Close();  // stops its ticker and erases a live line
  const bool completed = result.outcome == SessionOutcome::kCompleted;
  // turn.failed's error.code decides; outcomes without one keep their own mapping.
  ExitCode code = completed                         ? ExitCode::kOk
                  : result.code != ErrorCode::kNone ? ExitCodeFor(result.code)
                                                    : ExitCodeFor(result.outcome);

  if (run.json && !completed && !result.error.empty()) {
    std::fprintf(stderr, "error: %s\n", result.error.c_str());
  }
  // A review's final message is its structured result in the --format asked for.
  std::optional<ReviewItem> reviewed = review_sink.review();
  const bool has_final = review ? reviewed.has_value() : last.has_message();
  const std::string final_text =
      review ? (reviewed ? FormatReview(*review, *reviewed) : "") : last.text();
  // stdout lost lines (its reader went away, a full disk): the run could not report itself.
  if (jsonl.failed()) {
    std::fprintf(stderr, "error: %s\n", jsonl.error().c_str());
    if (code == ExitCode::kOk) code = ExitCode::kOutputFailed;
  }
  // The session file could not be written (not --ephemeral): the run cannot be resumed. The
  // warning item already told the event stream (and, in human mode, stderr).
  if (!result.session_error.empty()) {
    if (run.json) std::fprintf(stderr, "warning: %s\n", result.session_error.c_str());
    if (code == ExitCode::kOk) code = ExitCode::kOutputFailed;
  }
  if (!run.json && completed && has_final) {
    Status written =
        WriteAll(STDOUT_FILENO, FinalMessageForStdout(final_text, ::isatty(STDOUT_FILENO)) + "\n");
    if (!written.ok()) {
      std::fprintf(stderr, "error: cannot write the final message to stdout: %s\n",
                   written.message().c_str());
      if (code == ExitCode::kOk) code = ExitCode::kOutputFailed;
    }
  }
  if (run.output_last_message) {
    // As codex: the last message without a trailing newline; an empty file when the turn
    // failed, so a stale answer from an earlier run is never mistaken for this one's.
    Status written = WriteOutputFile(*run.output_last_message, completed ? final_text : "");
    if (!written.ok()) {
      std::fprintf(stderr, "error: %s\n", written.message().c_str());
      if (code == ExitCode::kOk) code = ExitCode::kOutputFailed;
    }
  }
  return ToInt(code);
}

}  // namespace ae
