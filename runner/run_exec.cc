#include "runner/run_exec.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <optional>

#include "engine/rollout.h"
#include "engine/session.h"
#include "outputs/human_sink.h"
#include "outputs/jsonl_sink.h"
#include "outputs/last_message.h"
#include "outputs/progress.h"
#include "runner/exit_code.h"
#include "runner/prompt.h"
#include "runner/session_config.h"
#include "runner/signals.h"

namespace ae {
namespace {

int Fail(ExitCode code, const std::string& message) {
  std::string line = message;
  if (line.rfind("error: ", 0) != 0) line = "error: " + line;
  std::fprintf(stderr, "%s\n", line.c_str());
  return ToInt(code);
}

void WriteAll(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

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

int RunExec(const CliArgs& args) {
  Result<LoadedRun> loaded = LoadRun(args, Environment::FromProcess());
  if (!loaded.ok()) return Fail(ExitCode::kUsage, loaded.message());
  LoadedRun& run = *loaded;
  if (run.print_config) {
    WriteAll(STDOUT_FILENO, FormatConfig(run.config));
    return ToInt(ExitCode::kOk);
  }

  SessionConfig session = run.session;
  session.home = run.home;
  session.ephemeral = run.ephemeral;
  if (run.resume) {
    Result<LoadedRollout> resume = FindResume(run);
    if (!resume.ok()) return Fail(ExitCode::kUsage, resume.message());
    Result<std::string> kept =
        KeepResumedModel(resume->meta.provider, resume->meta.model, run.config, session);
    if (!kept.ok()) return Fail(ExitCode::kUsage, kept.message());
    std::fprintf(stderr, "%s\n", kept->c_str());
    session.resume = std::move(*resume);
  }

  if (run.output_last_message) {
    Status ok = PrepareOutputFile(*run.output_last_message);
    if (!ok.ok()) return Fail(ExitCode::kOutputFailed, ok.message());
  }

  const bool from_stdin = !args.prompt || *args.prompt == "-";
  if (from_stdin && !::isatty(STDIN_FILENO)) std::fputs("Reading prompt from stdin...\n", stderr);
  Result<std::string> prompt = ReadPrompt(args.prompt, STDIN_FILENO);
  if (!prompt.ok()) return Fail(ExitCode::kUsage, prompt.message());

  // In JSON mode stdout carries events only; warnings also go to stderr for the CI log.
  if (run.json) {
    for (const std::string& w : session.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  }

  CancelToken cancel;
  InstallSignalHandlers(cancel);
  Watchdog watchdog(cancel, run.timeout_ms);

  LastMessageSink last;
  JsonlSink jsonl(STDOUT_FILENO);
  HumanSinkOptions human_options;
  human_options.color = UseColor(run.color);
  human_options.version = AGENTEXEC_VERSION;
  human_options.prompt = *prompt;
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

  SessionResult result = RunSession(session, *prompt, sinks, cancel);
  if (progress) progress->Close();  // stops its ticker and erases a live line
  const bool completed = result.outcome == SessionOutcome::kCompleted;

  if (run.json && !completed && !result.error.empty()) {
    std::fprintf(stderr, "error: %s\n", result.error.c_str());
  }
  if (!run.json && completed && last.has_message()) {
    std::string text = last.text();
    WriteAll(STDOUT_FILENO, text + "\n");
  }
  if (run.output_last_message) {
    // As codex: the last message without a trailing newline; an empty file when the turn
    // failed, so a stale answer from an earlier run is never mistaken for this one's.
    Status written = WriteOutputFile(*run.output_last_message, completed ? last.text() : "");
    if (!written.ok()) {
      std::fprintf(stderr, "error: %s\n", written.message().c_str());
      if (completed) return ToInt(ExitCode::kOutputFailed);
    }
  }
  if (completed) return ToInt(ExitCode::kOk);
  return ToInt(result.code != ErrorCode::kNone ? ExitCodeFor(result.code)
                                               : ExitCodeFor(result.outcome));
}

}  // namespace ae
