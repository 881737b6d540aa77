// Which tasks of a manifest one batch process runs: shard I of N takes every N-th task,
// starting at I (0-based, in manifest order). Given with --shard I/N, or read from the CI
// engine that started the process:
//   GitLab `parallel: N`       CI_NODE_INDEX (1-based) and CI_NODE_TOTAL
//   Kubernetes Indexed Job     JOB_COMPLETION_INDEX (0-based), with --shard-total N or
//                              AGENTEXEC_SHARD_TOTAL (the Job's `completions`)
//   Slurm job array            SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN/_MAX/_COUNT and
//                              _STEP: the array must be a range (0-7, 1-16, 0-15:4), the
//                              shard being the id's position in it
// Without any of them the process runs every task (shard 0/1).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "base/result.h"

namespace ae {

struct Shard {
  size_t index = 0;
  size_t total = 1;
  std::string source;  // "--shard", "GitLab", "Kubernetes", "Slurm" or "" (no sharding)
  bool Takes(size_t task_index) const { return task_index % total == index; }
};

// "I/N" with 0 <= I < N.
Result<Shard> ParseShard(const std::string& text);

// --shard (when given) wins; else the environment `env` (name -> value) as described above.
// `shard_total` is --shard-total, for Kubernetes.
Result<Shard> ResolveShard(const std::optional<std::string>& flag,
                           const std::optional<size_t>& shard_total,
                           const std::map<std::string, std::string>& env);

// The environment of this process, for ResolveShard.
std::map<std::string, std::string> ShardEnvironment();

// `agentexec batch plan`: the GitHub Actions matrix for N shards, one line of JSON:
// {"include":[{"shard":"0/2"},{"shard":"1/2"}]}, for `fromJSON(...)`.
std::string GithubMatrixJson(size_t shards);

}  // namespace ae
