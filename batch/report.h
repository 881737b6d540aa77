// A batch's records (one line of OUT/results.jsonl each, also OUT/tasks/<id>/result.json) and
// `agentexec batch report DIR... [--format markdown|junit|json] [--manifest MANIFEST]`, which
// merges the directories of several shards into one report.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace ae {

class JsonWriter;

// status: "succeeded" (the turn completed, the check, if any, exited 0, and the task changed
// something unless its manifest says no change is expected), "no_change" (it completed and
// changed nothing), "failed" (any other end, or the task could not be set up), "interrupted"
// (stopped by SIGINT/SIGTERM or --max-total-time: --resume runs it again), "skipped" (never
// started: a batch-wide limit was reached; tasks not started when SIGINT or SIGTERM arrived
// get no record).
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
  // Why it did not succeed, one word for a report's column (RecordReason): "check_failed",
  // "no_change", turn.failed's code, "setup_failed", "error", "interrupted", or the limit that
  // stopped or skipped it ("max-failures", "max-total-tokens", "max-total-time").
  std::optional<std::string> reason;
  // The check, when one ran: its exit code (-1 when it was killed at its timeout or could not
  // start), how long it took and the tail of what it printed (stdout and stderr as they came).
  struct Check {
    int exit_code = -1;
    int64_t duration_ms = 0;
    bool timed_out = false;
    std::string output;
  };
  std::optional<Check> check;
  // A task run with a network allow-list: the hosts ("host:port") its commands reached and
  // were refused (turn.completed's `network`). Absent otherwise, and then not written.
  std::optional<std::vector<std::string>> hosts_reached;
  std::optional<std::vector<std::string>> hosts_refused;
};

// "passed in 1s200ms", "exit 2 in 300ms", "timed out after 5m": a check in a report.
std::string CheckSummary(const BatchRecord::Check& check);

// The reason column of a record that has none yet: the one place a status, an error code and
// a check become that word (nullopt for a task that succeeded).
std::optional<std::string> RecordReason(const BatchRecord& record);

// The statuses a record may have, in the order reports count them.
inline constexpr const char* kBatchStatuses[] = {"succeeded", "failed", "no_change", "interrupted",
                                                 "skipped"};

// One line of JSON, every key present (null when it does not apply), in a fixed order; and
// `network` last, only for a task run with a network allow-list. `check` is null or
// {"exit_code":0,"duration_ms":812,"timed_out":false,"output":"..."}.
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

// The last `bytes` of `text` (after "…" when cut), never starting inside a UTF-8 sequence.
std::string TextTail(std::string_view text, size_t bytes);

// `"key":"value"` for each pair, in order.
void JsonStrings(JsonWriter& w,
                 std::initializer_list<std::pair<const char*, std::string_view>> members);
// `"key":"value"`, or `"key":null` without a value: batch's records write both.
void JsonOptString(JsonWriter& w, const char* key, const std::optional<std::string>& value);

// Cell text for a Markdown table: one line, Markdown and HTML characters escaped.
std::string EscapeMarkdownCell(std::string_view text);
// Text from a model or a repository for a Markdown document (a pull request's body): its
// lines kept, HTML and Markdown characters escaped, so nothing in it renders as markup, a link
// or an image.
std::string EscapeMarkdownText(std::string_view text);
// Text for an XML attribute or element: & < > " ' escaped, characters XML 1.0 cannot hold
// replaced with U+FFFD.
std::string EscapeXml(std::string_view text);

}  // namespace ae
