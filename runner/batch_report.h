// A batch's records (one line of OUT/results.jsonl each, also OUT/tasks/<id>/result.json) and
// `agentexec batch report DIR... [--format markdown|junit|json] [--manifest MANIFEST]`, which
// merges the directories of several shards into one report.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace ae {

// status: "succeeded" (exit 0), "failed" (any other end, or the task could not be set up),
// "interrupted" (stopped by SIGINT/SIGTERM or --max-total-time: --resume runs it again),
// "skipped" (never started: a batch-wide limit was reached; tasks not started when SIGINT or
// SIGTERM arrived get no record).
struct BatchRecord {
  std::string id;
  std::string status;
  std::optional<int> exit_code;           // the child's; null when it never ran
  std::optional<std::string> error_code;  // turn.failed's error.code
  std::optional<std::string> error;       // turn.failed's message, or what went wrong around it
  int64_t tokens = 0;                     // input + output tokens of the thread
  int64_t duration_ms = 0;
  int64_t files_changed = 0;
  std::optional<std::string> branch;  // agentexec/<id> in the clone
  std::string answer;                 // the first line of the final message (at most 200 bytes)
  std::optional<std::string> reason;  // why it was skipped or interrupted by a batch limit
  // A task run with a network allow-list: the hosts ("host:port") its commands reached and
  // were refused (turn.completed's `network`). Absent otherwise, and then not written.
  std::optional<std::vector<std::string>> hosts_reached;
  std::optional<std::vector<std::string>> hosts_refused;
};

// One line of JSON, every key present (null when it does not apply), in a fixed order; and
// `network` last, only for a task run with a network allow-list.
std::string RecordJson(const BatchRecord& record);

// Calls `each` with the records of a results.jsonl in file order, read one line at a time. A
// missing file is an error unless `missing_ok`; a bad line is "PATH:LINE: what".
Status ForEachResult(const std::string& path, bool missing_ok,
                     const std::function<void(BatchRecord)>& each);

struct BatchReportOptions {
  std::vector<std::string> dirs;
  std::string format = "markdown";  // markdown | junit | json
  std::optional<std::string> manifest;
};

// The merged report text. Within one directory the last record of an id wins (a resumed
// batch); an id recorded in two directories is an error, and so (with a manifest) is a task
// no directory recorded. Tasks are in manifest order with a manifest, else sorted by id.
Result<std::string> MakeBatchReport(const BatchReportOptions& options);

// Cell text for a Markdown table: one line, Markdown and HTML characters escaped.
std::string EscapeMarkdownCell(std::string_view text);
// Text for an XML attribute or element: & < > " ' escaped, characters XML 1.0 cannot hold
// replaced with U+FFFD.
std::string EscapeXml(std::string_view text);

}  // namespace ae
