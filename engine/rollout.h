// Session files: every run appends its history to
// $AGENTEXEC_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<thread_id>.jsonl, one JSON object
// a line, flushed per line, so `resume` can continue it and a crash loses at most a line.
//
//   {"timestamp":…,"type":"session_meta","payload":{"id":…,"timestamp":…,"thread_id":…,
//                      "cwd":…,"created_at":…,"model":…,"provider":…,"sandbox":…}}
//     (`id` = `thread_id` and `timestamp` = `created_at`, under codex's names; a forked
//     thread's also carries `forked_from_id`)
//   {"type":"response_item","payload":<Responses-API input item>}
//   {"type":"usage","payload":{"input_tokens":…,…}}          (after each model request)
//   {"type":"compacted","payload":{"tokens_before":…,"tokens_after":…,
//                                  "replacement_history":[<input item>,…]}}
//     the history was compacted: on load the replacement stands for every item before it
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/result.h"
#include "engine/events/events.h"

namespace ae {

struct SessionMeta {
  std::string thread_id;
  std::string cwd;
  std::string created_at;  // RFC 3339 UTC
  std::string model;
  std::string provider;
  std::string sandbox;  // the mode and how it was enforced in this run
  // The thread this one was forked from (exec fork), codex's `forked_from_id`; empty: none.
  std::string forked_from_id;
};

class RolloutWriter {
 public:
  ~RolloutWriter();
  // Creates the file (and directories) for a new session.
  static Result<std::unique_ptr<RolloutWriter>> Create(const std::string& home,
                                                       const SessionMeta& meta);
  // Appends to an existing session file.
  static Result<std::unique_ptr<RolloutWriter>> Append(const std::string& path);

  // Each line is written whole (base/write_all.h). The first write that fails (a full disk)
  // stops all further writes, so the file ends at most in one torn line, which LoadRollout
  // drops, and is reported once through the error handler; failed() stays true.
  void AddItem(const std::string& item_json);
  void AddUsage(const Usage& usage);
  // The history was compacted into `history` (it replaces every item written before).
  void AddCompaction(const std::vector<std::string>& history, int64_t tokens_before,
                     int64_t tokens_after);
  const std::string& path() const { return path_; }

  // Called once, with a message naming the file and the error, when writing first fails; at
  // once when it already has (Create writes the session_meta line before a handler can be set,
  // and on a full disk that first write is the one that fails).
  void OnError(std::function<void(const std::string&)> handler);
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  RolloutWriter(Fd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  void WriteLine(std::string line);

  Fd fd_;
  std::string path_;
  std::string error_;
  std::function<void(const std::string&)> on_error_;
};

struct LoadedRollout {
  std::string path;
  SessionMeta meta;
  std::vector<std::string> items;  // after the last compaction: its replacement history first
  Usage usage;                     // cumulative over every request recorded
  // The last request's usage and how many of `items` stood before it in the file: what the
  // service counted of this history, so a resumed turn knows the context's size (a thread
  // past the auto-compact limit is compacted before its next request). Zero after the last
  // compaction, whose replacement no request has counted yet.
  Usage last_usage;
  size_t last_usage_items = 0;
  int compactions = 0;  // compacted lines read
};

// $AGENTEXEC_HOME/sessions: the session files beneath it are read and created beneath a
// descriptor of it (base/beneath.h), never through a symlink planted on the way.
std::string SessionsDir(const std::string& home);

// Reads the session file `path`; with `sessions_dir` (which contains it, as the Find functions'
// paths do) it is opened beneath that directory.
Result<LoadedRollout> LoadRollout(const std::string& path, const std::string& sessions_dir = "");
// The session file for `thread_id`, or an error naming the id (exit 2 for the runner).
Result<std::string> FindRolloutById(const std::string& home, const std::string& thread_id);
// The newest session recorded for `cwd`; with an empty `cwd`, the newest of all (resume --all).
Result<std::string> FindLatestRollout(const std::string& home, const std::string& cwd);

}  // namespace ae
