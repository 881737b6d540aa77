#include "runner/batch_report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include "base/duration.h"
#include "base/json.h"
#include "base/read_file.h"
#include "base/utf8.h"
#include "runner/batch_manifest.h"

namespace ae {
namespace {

void OptString(JsonWriter& w, const char* key, const std::optional<std::string>& v) {
  w.Key(key);
  if (v) {
    w.String(*v);
  } else {
    w.Null();
  }
}

Result<BatchRecord> ParseRecord(std::string_view line) {
  rapidjson::Document doc;
  if (auto e = ParseJsonInto(line, &doc)) {
    return MakeError(fmt::format("not valid JSON: {} (at byte {})", e->reason, e->offset));
  }
  if (!doc.IsObject()) return MakeError("not a JSON object");
  BatchRecord r;
  const rapidjson::Value* id = FindJsonMember(doc, "id");
  if (id == nullptr || !id->IsString()) return MakeError("no string 'id'");
  r.id = id->GetString();
  if (!IsUsableTaskId(r.id)) return MakeError(fmt::format("'{}' is not a task id", r.id));
  r.status = StringMember(doc, "status");
  if (r.status != "succeeded" && r.status != "failed" && r.status != "interrupted" &&
      r.status != "skipped") {
    return MakeError(fmt::format("task '{}': unknown status '{}'", r.id, r.status));
  }
  auto opt_string = [&](const char* name) -> std::optional<std::string> {
    const rapidjson::Value* v = FindJsonMember(doc, name);
    if (v == nullptr || !v->IsString()) return std::nullopt;
    return std::string(v->GetString(), v->GetStringLength());
  };
  if (const rapidjson::Value* v = FindJsonMember(doc, "exit_code"); v && v->IsInt()) {
    r.exit_code = v->GetInt();
  }
  r.error_code = opt_string("error_code");
  r.error = opt_string("error");
  r.tokens = Int64Member(&doc, "tokens");
  r.duration_ms = Int64Member(&doc, "duration_ms");
  r.files_changed = Int64Member(&doc, "files_changed");
  r.branch = opt_string("branch");
  r.answer = StringMember(doc, "answer");
  r.reason = opt_string("reason");
  if (const rapidjson::Value* net = FindJsonMember(doc, "network"); net && net->IsObject()) {
    r.hosts_reached = StringArrayMember(net, "reached");
    r.hosts_refused = StringArrayMember(net, "refused");
  }
  return r;
}

struct Located {
  BatchRecord record;
  std::string dir;
};

std::string Summary(const std::vector<Located>& tasks) {
  std::map<std::string, size_t> counts;
  int64_t tokens = 0;
  for (const Located& t : tasks) {
    ++counts[t.record.status];
    tokens += t.record.tokens;
  }
  return fmt::format("{} tasks: {} succeeded, {} failed, {} interrupted, {} skipped; {} tokens",
                     tasks.size(), counts["succeeded"], counts["failed"], counts["interrupted"],
                     counts["skipped"], tokens);
}

std::string Markdown(const std::vector<Located>& tasks) {
  std::string out = "## agentexec batch\n\n" + Summary(tasks) + "\n\n";
  out += "| Task | Status | Files changed | Tokens | Duration | Answer |\n";
  out += "| --- | --- | ---: | ---: | ---: | --- |\n";
  for (const Located& t : tasks) {
    const BatchRecord& r = t.record;
    std::string status = r.status;
    if (r.exit_code && *r.exit_code != 0) status += fmt::format(" (exit {})", *r.exit_code);
    if (r.error_code) status += ", " + *r.error_code;
    if (r.reason) status += ", " + *r.reason;
    const bool ran = r.status != "skipped";
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", EscapeMarkdownCell(r.id),
                       EscapeMarkdownCell(status), ran ? std::to_string(r.files_changed) : "",
                       ran ? std::to_string(r.tokens) : "",
                       ran ? FormatDurationMs(r.duration_ms) : "", EscapeMarkdownCell(r.answer));
  }
  // Tasks with a network allow-list: each host reached or refused, and by how many tasks.
  std::map<std::string, std::pair<int, int>> hosts;
  bool any = false;
  for (const Located& t : tasks) {
    any = any || t.record.hosts_reached || t.record.hosts_refused;
    for (const std::string& h : t.record.hosts_reached.value_or(std::vector<std::string>{})) {
      ++hosts[h].first;
    }
    for (const std::string& h : t.record.hosts_refused.value_or(std::vector<std::string>{})) {
      ++hosts[h].second;
    }
  }
  if (any) {
    out += "\n### Network\n\n";
    if (hosts.empty()) out += "no connection\n";
    if (!hosts.empty()) out += "| Host | Reached by | Refused to |\n| --- | ---: | ---: |\n";
    for (const auto& [host, counts] : hosts) {
      out +=
          fmt::format("| {} | {} | {} |\n", EscapeMarkdownCell(host), counts.first, counts.second);
    }
  }
  return out;
}

std::string Seconds(int64_t ms) {
  return fmt::format("{}.{:03}", ms / 1000, ms % 1000);
}

std::string Junit(const std::vector<Located>& tasks) {
  size_t failures = 0, skipped = 0;
  int64_t total_ms = 0;
  for (const Located& t : tasks) {
    if (t.record.status == "skipped") {
      ++skipped;
    } else if (t.record.status != "succeeded") {
      ++failures;
    }
    total_ms += t.record.duration_ms;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"agentexec batch\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
      "skipped=\"{2}\" time=\"{3}\">\n"
      "  <testsuite name=\"agentexec batch\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
      "skipped=\"{2}\" time=\"{3}\">\n",
      tasks.size(), failures, skipped, Seconds(total_ms));
  for (const Located& t : tasks) {
    const BatchRecord& r = t.record;
    out += fmt::format("    <testcase classname=\"agentexec.batch\" name=\"{}\" time=\"{}\"",
                       EscapeXml(r.id), Seconds(r.duration_ms));
    if (r.status == "succeeded") {
      out += fmt::format(">\n      <system-out>{}</system-out>\n    </testcase>\n",
                         EscapeXml(r.answer));
    } else if (r.status == "skipped") {
      out += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                         EscapeXml(r.reason.value_or("skipped")));
    } else {
      std::string message = r.status;
      if (r.exit_code) message += fmt::format(": exit {}", *r.exit_code);
      if (r.error_code) message += " (" + *r.error_code + ")";
      out += fmt::format(
          ">\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
          EscapeXml(message), EscapeXml(r.error_code.value_or(r.status)),
          EscapeXml(r.error.value_or("")));
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string Json(const std::vector<Located>& tasks) {
  JsonWriter w;
  w.StartObject();
  w.Key("tasks");
  w.StartArray();
  std::map<std::string, int64_t> counts;
  int64_t tokens = 0;
  for (const Located& t : tasks) {
    w.Raw(RecordJson(t.record));
    ++counts[t.record.status];
    tokens += t.record.tokens;
  }
  w.EndArray();
  w.Key("summary");
  w.StartObject();
  w.Key("total");
  w.Uint64(tasks.size());
  for (const char* s : {"succeeded", "failed", "interrupted", "skipped"}) {
    w.Key(s);
    w.Int64(counts[s]);
  }
  w.Key("tokens");
  w.Int64(tokens);
  w.EndObject();
  w.EndObject();
  return std::string(w.view()) + "\n";
}

}  // namespace

std::string RecordJson(const BatchRecord& r) {
  JsonWriter w;
  w.StartObject();
  w.Key("id");
  w.String(r.id);
  w.Key("status");
  w.String(r.status);
  w.Key("exit_code");
  if (r.exit_code) {
    w.Int(*r.exit_code);
  } else {
    w.Null();
  }
  OptString(w, "error_code", r.error_code);
  OptString(w, "error", r.error);
  w.Key("tokens");
  w.Int64(r.tokens);
  w.Key("duration_ms");
  w.Int64(r.duration_ms);
  w.Key("files_changed");
  w.Int64(r.files_changed);
  OptString(w, "branch", r.branch);
  w.Key("answer");
  w.String(r.answer);
  OptString(w, "reason", r.reason);
  if (r.hosts_reached || r.hosts_refused) {
    w.Key("network");
    w.StartObject();
    for (auto [key, list] :
         {std::pair{"reached", &r.hosts_reached}, std::pair{"refused", &r.hosts_refused}}) {
      w.Key(key);
      w.StartArray();
      for (const std::string& host : list->value_or(std::vector<std::string>{})) w.String(host);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string(w.view());
}

Status ForEachResult(const std::string& path, bool missing_ok,
                     const std::function<void(BatchRecord)>& each) {
  Result<Fd> fd = OpenRegularFile(path);
  if (!fd.ok()) {
    if (missing_ok && ::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return {};
    return MakeError(fmt::format("cannot read {}: {}", path, fd.message()));
  }
  LineReader lines(path, std::move(*fd));
  for (;;) {
    Result<std::optional<std::string>> line = lines.Next();
    if (!line.ok()) return line.error();
    if (!*line) return {};
    if ((*line)->empty()) continue;
    Result<BatchRecord> r = ParseRecord(**line);
    if (!r.ok()) return MakeError(fmt::format("{}:{}: {}", path, lines.line(), r.message()));
    each(std::move(*r));
  }
}

Result<std::string> MakeBatchReport(const BatchReportOptions& options) {
  std::unordered_map<std::string, Located> by_id;
  for (const std::string& dir : options.dirs) {
    // The last record of each id, in the order the ids first appear (so errors are stable).
    std::unordered_map<std::string, BatchRecord> last;
    std::vector<std::string> order;
    Status read = ForEachResult(dir + "/results.jsonl", false, [&](BatchRecord r) {
      if (last.count(r.id) == 0) order.push_back(r.id);
      last[r.id] = std::move(r);
    });
    if (!read.ok()) return read.error();
    for (const std::string& id : order) {
      auto [it, inserted] = by_id.emplace(id, Located{std::move(last[id]), dir});
      if (!inserted) {
        return MakeError(
            fmt::format("task '{}' is recorded in both {} and {}: a task belongs to "
                        "one shard",
                        id, it->second.dir, dir));
      }
    }
  }
  std::vector<Located> tasks;
  if (options.manifest) {
    Result<ManifestReader> reader = ManifestReader::Open(*options.manifest);
    if (!reader.ok()) return reader.error();
    std::vector<std::string> missing;
    for (;;) {
      Result<std::optional<BatchTask>> next = reader->Next();
      if (!next.ok()) return next.error();
      if (!*next) break;
      auto it = by_id.find((*next)->id);
      if (it == by_id.end()) {
        missing.push_back(fmt::format("'{}' (line {})", (*next)->id, (*next)->line));
        continue;
      }
      tasks.push_back(std::move(it->second));
      by_id.erase(it);
    }
    if (!missing.empty()) {
      std::string list;
      for (size_t i = 0; i < missing.size() && i < 20; ++i) list += (i ? ", " : "") + missing[i];
      if (missing.size() > 20) list += fmt::format(" and {} more", missing.size() - 20);
      return MakeError(fmt::format("{} task(s) of {} missing from every directory: {}",
                                   missing.size(), *options.manifest, list));
    }
    if (!by_id.empty()) {
      return MakeError(fmt::format("task '{}' (in {}) is not in {}", by_id.begin()->first,
                                   by_id.begin()->second.dir, *options.manifest));
    }
  } else {
    for (auto& [id, located] : by_id) tasks.push_back(std::move(located));
    std::sort(tasks.begin(), tasks.end(),
              [](const Located& a, const Located& b) { return a.record.id < b.record.id; });
  }
  if (options.format == "junit") return Junit(tasks);
  if (options.format == "json") return Json(tasks);
  return Markdown(tasks);
}

std::string EscapeMarkdownCell(std::string_view text) {
  std::string clean = SanitizeUtf8(text);
  std::string out;
  for (char c : clean) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '~':
      case '!':
      case '#':
      case '$':
        out += '\\';
        out += c;
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string EscapeXml(std::string_view text) {
  std::string clean = SanitizeUtf8(text);
  std::string out;
  for (size_t i = 0; i < clean.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(clean[i]);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "\xEF\xBF\xBD";
        } else if (c == 0xEF && i + 2 < clean.size() &&
                   static_cast<unsigned char>(clean[i + 1]) == 0xBF &&
                   (static_cast<unsigned char>(clean[i + 2]) == 0xBE ||
                    static_cast<unsigned char>(clean[i + 2]) == 0xBF)) {
          out += "\xEF\xBF\xBD";  // U+FFFE and U+FFFF are not XML characters
          i += 2;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace ae
