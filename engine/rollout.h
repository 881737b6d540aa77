// Session files (CONTRACT §9): every run appends its history to
// $AGENTEXEC_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<thread_id>.jsonl, one JSON object
// a line, flushed per line, so `resume` can continue it and a crash loses at most a line.
//
//   {"type":"session_meta","payload":{"thread_id":…,"cwd":…,"created_at":…,"model":…,
//                                     "provider":…,"sandbox":…}}
//   {"type":"response_item","payload":<Responses-API input item>}
//   {"type":"usage","payload":{"input_tokens":…,…}}          (after each model request)
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "engine/events.h"

namespace ae {

struct SessionMeta {
  std::string thread_id;
  std::string cwd;
  std::string created_at;  // RFC 3339 UTC
  std::string model;
  std::string provider;
  std::string sandbox;  // the mode and how it was enforced in this run
};

class RolloutWriter {
 public:
  ~RolloutWriter();
  // Creates the file (and directories) for a new session.
  static Result<std::unique_ptr<RolloutWriter>> Create(const std::string& home,
                                                       const SessionMeta& meta);
  // Appends to an existing session file.
  static Result<std::unique_ptr<RolloutWriter>> Append(const std::string& path);

  void AddItem(const std::string& item_json);
  void AddUsage(const Usage& usage);
  const std::string& path() const { return path_; }

 private:
  RolloutWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  void WriteLine(const std::string& line);

  std::FILE* file_;
  std::string path_;
};

struct LoadedRollout {
  std::string path;
  SessionMeta meta;
  std::vector<std::string> items;
  Usage usage;  // cumulative over every request recorded
};

Result<LoadedRollout> LoadRollout(const std::string& path);
// The session file for `thread_id`, or an error naming the id (exit 2 for the runner).
Result<std::string> FindRolloutById(const std::string& home, const std::string& thread_id);
// The newest session recorded for `cwd`.
Result<std::string> FindLatestRollout(const std::string& home, const std::string& cwd);

}  // namespace ae
