// The `agentexec batch` manifest: JSONL, one task a line. It is read as a stream, one line at
// a time, twice: once to check every line before anything runs, once to run the tasks. Only
// the task ids are kept between lines (for the duplicate check), never the tasks themselves.
//
//   {"id":"api","repo":"../api","ref":"main","dir":"src","prompt":"fix the warnings",
//    "model":"gpt-5","sandbox":"workspace-write","max_turns":20,"timeout":"10m",
//    "max_tokens":200000,"output_schema":"schema.json","check":"make test","check_timeout":"5m",
//    "expect_change":true}
//
// Relative paths (`repo` when not a URL, `prompt_file`, `output_schema`) are relative to the
// manifest's directory.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/result.h"

namespace ae {

// The longest manifest line read; a longer one is an error, so memory stays bounded.
inline constexpr size_t kMaxManifestLineBytes = size_t{1} << 20;

struct BatchTask {
  size_t line = 0;   // 1-based line in the manifest
  size_t index = 0;  // 0-based position among the manifest's tasks (blank lines skipped)
  std::string id;
  std::string repo;  // as resolved: an absolute local path, or the URL as given
  bool repo_is_url = false;
  std::optional<std::string> ref;
  std::optional<std::string> dir;  // relative, no "..", no leading '/'
  std::optional<std::string> prompt;
  std::optional<std::string> prompt_file;  // resolved against the manifest's directory
  std::optional<std::string> model;
  std::optional<std::string> sandbox;
  std::optional<int64_t> max_turns;
  std::optional<std::string> timeout;  // as written; checked with base/duration.h
  std::optional<int64_t> max_tokens;
  std::optional<std::string> output_schema;  // resolved against the manifest's directory
  // A shell command run in the task's sandbox and directory after its turn (batch/check.h);
  // the task succeeds only if it exits 0. Wins over --check.
  std::optional<std::string> check;
  std::optional<std::string> check_timeout;  // as written; default --check-timeout
  // false: a task that changes nothing may still succeed (default: it is `no_change`).
  std::optional<bool> expect_change;
};

// Reads a file one line at a time with a bounded buffer: the manifest, and results.jsonl.
class LineReader {
 public:
  LineReader(std::string path, Fd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  // The next line without its newline; nullopt at the end. A line longer than
  // kMaxManifestLineBytes is an error "PATH:LINE: ..." (reading goes on after it); a read error
  // ends the file.
  Result<std::optional<std::string>> Next();
  size_t line() const { return line_; }

 private:
  std::string path_;
  Fd fd_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  size_t line_ = 0;
};

// Calls `each` with every non-empty line of `path` (results.jsonl, publish.jsonl), read one at
// a time; an Error from `each` ends the reading as "PATH:LINE: message". A missing file has no
// lines when `missing_ok`, else it is an error "cannot read PATH: ...".
Status ForEachLine(const std::string& path, bool missing_ok,
                   const std::function<Status(std::string_view line)>& each);

// Reads a manifest one line at a time. Each Next() parses and checks one task; errors read
// "MANIFEST:LINE: field 'x': what is wrong" (or "MANIFEST:LINE: what" for a line that is not
// a JSON object). Duplicate ids are found only by CheckManifest, which sees every line.
class ManifestReader {
 public:
  static Result<ManifestReader> Open(const std::string& path);

  // The next task; nullopt at the end. An Error is a bad line (reading goes on after it) or
  // a read error (then the reader is at its end).
  Result<std::optional<BatchTask>> Next();
  const std::string& path() const { return path_; }

 private:
  ManifestReader(std::string path, std::string base_dir, Fd fd)
      : path_(path), base_dir_(std::move(base_dir)), lines_(std::move(path), std::move(fd)) {}

  std::string path_, base_dir_;
  LineReader lines_;
  size_t index_ = 0;
};

// Every error of the manifest, one message a line (empty: none). Stops listing after 100.
// Ids are kept while it reads (for the duplicate check); nothing else is.
Result<std::vector<std::string>> CheckManifest(const std::string& path);

// Can `id` name a file and a git branch? Only [A-Za-z0-9._-], not starting with '.' or '-',
// at most 128 bytes, and no "..", no ".lock" ending (git refuses those in branch names).
bool IsUsableTaskId(const std::string& id);

}  // namespace ae
