#include "batch/shard.h"

#include <fmt/format.h>

#include <cstdlib>

#include "base/json.h"

extern char** environ;

namespace ae {
namespace {

// A non-negative decimal integer that fits easily (no sign, no spaces).
std::optional<size_t> ParseCount(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  size_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<size_t>(c - '0');
  }
  return n;
}

std::optional<std::string> Get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

Result<size_t> Need(const std::map<std::string, std::string>& env, const char* name,
                    const char* engine) {
  std::optional<std::string> v = Get(env, name);
  if (!v) return MakeError(fmt::format("{}: {} is not set", engine, name));
  std::optional<size_t> n = ParseCount(*v);
  if (!n) return MakeError(fmt::format("{}: {}='{}' is not a number", engine, name, *v));
  return *n;
}

Result<Shard> Checked(size_t index, size_t total, const char* source, const std::string& what) {
  if (total == 0 || index >= total) {
    return MakeError(
        fmt::format("{}: shard {} of {} does not exist ({})", source, index, total, what));
  }
  return Shard{index, total, source};
}

}  // namespace

Result<Shard> ParseShard(const std::string& text) {
  size_t slash = text.find('/');
  std::optional<size_t> index, total;
  if (slash != std::string::npos) {
    index = ParseCount(text.substr(0, slash));
    total = ParseCount(text.substr(slash + 1));
  }
  if (!index || !total || *total == 0 || *index >= *total) {
    return MakeError(fmt::format(
        "invalid value '{}' for '--shard <I/N>': expected I/N with 0 <= I < N, e.g. 0/4", text));
  }
  return Shard{*index, *total, "--shard"};
}

Result<Shard> ResolveShard(const std::optional<std::string>& flag,
                           const std::optional<size_t>& shard_total,
                           const std::map<std::string, std::string>& env) {
  if (flag) return ParseShard(*flag);
  if (Get(env, "CI_NODE_INDEX") || Get(env, "CI_NODE_TOTAL")) {
    Result<size_t> index = Need(env, "CI_NODE_INDEX", "GitLab");
    if (!index.ok()) return index.error();
    Result<size_t> total = Need(env, "CI_NODE_TOTAL", "GitLab");
    if (!total.ok()) return total.error();
    if (*index == 0) return MakeError("GitLab: CI_NODE_INDEX=0, but it counts from 1");
    return Checked(*index - 1, *total, "GitLab", "CI_NODE_INDEX counts from 1");
  }
  if (Get(env, "JOB_COMPLETION_INDEX")) {
    Result<size_t> index = Need(env, "JOB_COMPLETION_INDEX", "Kubernetes");
    if (!index.ok()) return index.error();
    std::optional<size_t> total = shard_total;
    if (!total) {
      if (!Get(env, "AGENTEXEC_SHARD_TOTAL")) {
        return MakeError(
            "Kubernetes: JOB_COMPLETION_INDEX is set, but not the number of shards: pass "
            "--shard-total N or set AGENTEXEC_SHARD_TOTAL (the Job's completions)");
      }
      Result<size_t> t = Need(env, "AGENTEXEC_SHARD_TOTAL", "Kubernetes");
      if (!t.ok()) return t.error();
      total = *t;
    }
    return Checked(*index, *total, "Kubernetes", "JOB_COMPLETION_INDEX counts from 0");
  }
  if (Get(env, "SLURM_ARRAY_TASK_ID")) {
    const char* s = "Slurm";
    Result<size_t> id = Need(env, "SLURM_ARRAY_TASK_ID", s);
    if (!id.ok()) return id.error();
    Result<size_t> min = Need(env, "SLURM_ARRAY_TASK_MIN", s);
    if (!min.ok()) return min.error();
    Result<size_t> max = Need(env, "SLURM_ARRAY_TASK_MAX", s);
    if (!max.ok()) return max.error();
    Result<size_t> count = Need(env, "SLURM_ARRAY_TASK_COUNT", s);
    if (!count.ok()) return count.error();
    size_t step = 1;
    if (Get(env, "SLURM_ARRAY_TASK_STEP")) {
      Result<size_t> st = Need(env, "SLURM_ARRAY_TASK_STEP", s);
      if (!st.ok()) return st.error();
      step = *st;
    }
    // Ids of a list such as --array=1,2,7 are not positions: only a range maps to shards.
    if (step == 0 || *count == 0 || *max < *min || *id < *min ||
        (*max - *min) != (*count - 1) * step || (*id - *min) % step != 0) {
      return MakeError(fmt::format(
          "Slurm: the array (ids {}..{}, {} tasks, step {}) is not a range such as --array=0-7; "
          "pass --shard I/N",
          *min, *max, *count, step));
    }
    return Checked((*id - *min) / step, *count, s, "SLURM_ARRAY_TASK_ID");
  }
  if (shard_total) {
    return MakeError("--shard-total needs JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)");
  }
  return Shard{0, 1, ""};
}

std::map<std::string, std::string> ShardEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(kv.substr(0, eq));
    if (name.starts_with("CI_NODE_") || name.starts_with("SLURM_ARRAY_") ||
        name == "JOB_COMPLETION_INDEX" || name == "AGENTEXEC_SHARD_TOTAL") {
      env.emplace(std::move(name), std::string(kv.substr(eq + 1)));
    }
  }
  return env;
}

std::string GithubMatrixJson(size_t shards) {
  JsonWriter w;
  w.StartObject();
  w.Key("include");
  w.StartArray();
  for (size_t i = 0; i < shards; ++i) {
    w.StartObject();
    w.Key("shard");
    w.String(fmt::format("{}/{}", i, shards));
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(w.view()) + "\n";
}

}  // namespace ae
