// `agentexec batch run MANIFEST --out DIR`: one task over many repositories. Each task of the
// manifest (batch/manifest.h) that belongs to this shard (batch/shard.h) runs in
// its own fresh clone as a child `agentexec exec --json` of this same binary, -j at once.
//
// DIR/results.jsonl gets one record line as each task ends (or is skipped); DIR/tasks/<id>/
// holds events.jsonl (the child's stdout), stderr.log, final-message.md, changes.patch and
// result.json (the task's record). The clones live in the work directory (default DIR/work),
// WORK/<id>/repo, with the changes committed on branch agentexec/<id>.
//
// A confined command may write where the sandbox lets it (its clone, /tmp): everything batch
// writes once a task has run is created beneath directory descriptors batch opened itself,
// with O_CREAT|O_EXCL|O_NOFOLLOW, so a link planted in an output directory is an error, never
// a write elsewhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ae {

struct BatchRunOptions {
  std::string manifest;
  std::string out;
  std::optional<std::string> work_dir;  // --work-dir; default OUT/work
  int jobs = 1;
  std::optional<std::string> shard;   // --shard I/N
  std::optional<size_t> shard_total;  // --shard-total N (Kubernetes)
  bool resume = false;
  std::optional<int64_t> max_total_tokens;
  std::optional<int64_t> max_total_time_ms;
  std::optional<int64_t> max_failures;
  // --check CMD and --check-timeout: every task's check (a manifest `check` wins).
  std::optional<std::string> check;
  int64_t check_timeout_ms = int64_t{10} * 60 * 1000;
  // --push: `batch publish` after the last task (batch/publish.h); --force with it.
  bool push = false;
  bool force = false;
  // --heartbeat: how often the progress line is printed when nothing changed, off a terminal.
  int64_t heartbeat_ms = 30000;
  // exec options given to every task, in order (a task's own fields come after and win).
  std::vector<std::string> exec_args;
};

// The batch's exit code: 0 every task succeeded (and, with --push, every branch is on its
// remote); 1 a task failed, changed nothing, or was skipped, or a push failed; 2 usage or
// manifest error (nothing ran); 4 a batch-wide limit stopped it; 130/143 SIGINT/SIGTERM.
int RunBatch(const BatchRunOptions& options);

}  // namespace ae
