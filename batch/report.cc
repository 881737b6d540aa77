#include "batch/report.h"

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
#include "base/markup_entity.h"
#include "base/read_file.h"
#include "base/utf8.h"
#include "batch/manifest.h"
#include "batch/publish.h"

namespace ae {
namespace {

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
  if (std::find_if(std::begin(kBatchStatuses), std::end(kBatchStatuses), [&](const char* known) {
        return r.status == known;
      }) == std::end(kBatchStatuses)) {
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
  if (const rapidjson::Value* check = FindJsonMember(doc, "check"); check && check->IsObject()) {
    BatchRecord::Check c;
    if (const rapidjson::Value* v = FindJsonMember(*check, "exit_code"); v && v->IsInt()) {
      c.exit_code = v->GetInt();
    }
    c.duration_ms = Int64Member(check, "duration_ms");
    const rapidjson::Value* timed_out = FindJsonMember(*check, "timed_out");
    c.timed_out = timed_out != nullptr && timed_out->IsTrue();
    c.output = StringMember(*check, "output");
    r.check = std::move(c);
  }
  if (const rapidjson::Value* net = FindJsonMember(doc, "network"); net && net->IsObject()) {
    r.hosts_reached = StringArrayMember(net, "reached");
    r.hosts_refused = StringArrayMember(net, "refused");
  }
  return r;
}

constexpr size_t kMaxPullRequestUrl = 2048;

struct Located {
  BatchRecord record;
  std::string dir;
  std::optional<PublishRecord> published;  // the last `batch publish` outcome, if any
  // DIR/tasks/<id>/pr-url.txt's first line: where the CI opened the pull request (gh pr
  // create prints it), so the report links it.
  std::string pull_request;
};

std::string Summary(const std::vector<Located>& tasks) {
  std::map<std::string, size_t> counts;
  int64_t tokens = 0;
  for (const Located& t : tasks) {
    ++counts[t.record.status];
    tokens += t.record.tokens;
  }
  return fmt::format(
      "{} tasks: {} succeeded, {} failed, {} no change, {} interrupted, {} skipped; {} tokens",
      tasks.size(), counts["succeeded"], counts["failed"], counts["no_change"],
      counts["interrupted"], counts["skipped"], tokens);
}

// The branch column: the branch as `batch publish` left it on the remote, else the local one
// of a task that succeeded.
std::string BranchText(const Located& t) {
  if (t.published) {
    const std::string& o = t.published->outcome;
    const bool there = o == "pushed" || o == "forced" || o == "up to date";
    std::string text = t.published->branch + (there ? " (pushed)" : " (" + o + ")");
    if (there && !t.pull_request.empty()) text += " " + t.pull_request;
    return text;
  }
  if (t.record.status == "succeeded" && t.record.files_changed > 0 && t.record.branch) {
    return *t.record.branch + " (not pushed)";
  }
  return "";
}

std::string Markdown(const std::vector<Located>& tasks) {
  std::string out = "## agentexec batch\n\n" + Summary(tasks) + "\n\n";
  out +=
      "| Task | Status | Reason | Check | Files changed | Tokens | Duration | Branch | Answer |\n";
  out += "| --- | --- | --- | --- | ---: | ---: | ---: | --- | --- |\n";
  for (const Located& t : tasks) {
    const BatchRecord& r = t.record;
    std::string status = r.status;
    if (r.exit_code && *r.exit_code != 0) status += fmt::format(" (exit {})", *r.exit_code);
    const bool ran = r.status != "skipped";
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", EscapeMarkdownCell(r.id),
                    EscapeMarkdownCell(status), EscapeMarkdownCell(RecordReason(r).value_or("")),
                    EscapeMarkdownCell(r.check ? CheckSummary(*r.check) : ""),
                    ran ? std::to_string(r.files_changed) : "", ran ? std::to_string(r.tokens) : "",
                    ran ? FormatDurationMs(r.duration_ms) : "", EscapeMarkdownCell(BranchText(t)),
                    EscapeMarkdownCell(r.answer));
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
    out += fmt::format("    <testcase classname=\"agentexec.batch\" name=\"{}\" time=\"{}\">\n",
                       EscapeXml(r.id), Seconds(r.duration_ms));
    // The check and the branch as properties (GitLab and Jenkins show them with the case).
    std::vector<std::pair<std::string, std::string>> properties;
    const std::optional<std::string> reason = RecordReason(r);  // older records have none
    if (reason) properties.emplace_back("reason", *reason);
    if (r.check) {
      properties.emplace_back("check.exit_code", std::to_string(r.check->exit_code));
      properties.emplace_back("check.duration_ms", std::to_string(r.check->duration_ms));
    }
    if (std::string branch = BranchText(t); !branch.empty()) {
      properties.emplace_back("branch", branch);
    }
    if (t.published) properties.emplace_back("remote", t.published->remote);
    if (!properties.empty()) {
      out += "      <properties>\n";
      for (const auto& [name, value] : properties) {
        out +=
            fmt::format("        <property name=\"{}\" value=\"{}\"/>\n", name, EscapeXml(value));
      }
      out += "      </properties>\n";
    }
    if (r.status == "skipped") {
      out +=
          fmt::format("      <skipped message=\"{}\"/>\n", EscapeXml(r.reason.value_or("skipped")));
    } else if (r.status != "succeeded") {
      std::string message = r.status;
      if (reason && *reason != r.status) message += " (" + *reason + ")";
      if (r.exit_code && *r.exit_code != 0) message += fmt::format(": exit {}", *r.exit_code);
      if (r.check && r.check->exit_code != 0) message += "; check: " + CheckSummary(*r.check);
      std::string text = r.error.value_or("");
      if (r.check && !r.check->output.empty()) {
        text +=
            (text.empty() ? "" : "\n\n") + std::string("check output (tail):\n") + r.check->output;
      }
      out += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                         EscapeXml(message), EscapeXml(reason.value_or(r.status)), EscapeXml(text));
    }
    out += fmt::format("      <system-out>{}</system-out>\n    </testcase>\n", EscapeXml(r.answer));
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
  // What `batch publish` did, task by task (the lines of publish.jsonl that count).
  w.Key("published");
  w.StartArray();
  for (const Located& t : tasks) {
    if (!t.published) continue;
    w.StartObject();
    JsonStrings(w, {{"id", t.published->id},
                    {"branch", t.published->branch},
                    {"remote", t.published->remote},
                    {"outcome", t.published->outcome}});
    JsonOptString(w, "error", t.published->error);
    w.EndObject();
  }
  w.EndArray();
  w.Key("summary");
  w.StartObject();
  w.Key("total");
  w.Uint64(tasks.size());
  for (const char* s : kBatchStatuses) {
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
  JsonOptString(w, "error_code", r.error_code);
  JsonOptString(w, "error", r.error);
  w.Key("tokens");
  w.Int64(r.tokens);
  w.Key("duration_ms");
  w.Int64(r.duration_ms);
  w.Key("files_changed");
  w.Int64(r.files_changed);
  JsonOptString(w, "branch", r.branch);
  w.Key("answer");
  w.String(r.answer);
  JsonOptString(w, "reason", r.reason);
  w.Key("check");
  if (r.check) {
    w.StartObject();
    w.Key("exit_code");
    w.Int(r.check->exit_code);
    w.Key("duration_ms");
    w.Int64(r.check->duration_ms);
    w.Key("timed_out");
    w.Bool(r.check->timed_out);
    w.Key("output");
    w.String(r.check->output);
    w.EndObject();
  } else {
    w.Null();
  }
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

std::string CheckSummary(const BatchRecord::Check& c) {
  if (c.timed_out) return "timed out after " + FormatDurationMs(c.duration_ms);
  if (c.exit_code == 0) return "passed in " + FormatDurationMs(c.duration_ms);
  return fmt::format("exit {} in {}", c.exit_code, FormatDurationMs(c.duration_ms));
}

std::string TextTail(std::string_view text, size_t bytes) {
  if (text.size() <= bytes) return std::string(text);
  size_t cut = text.size() - bytes;
  while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) ++cut;
  return "…" + std::string(text.substr(cut));
}

void JsonStrings(JsonWriter& w,
                 std::initializer_list<std::pair<const char*, std::string_view>> members) {
  for (const auto& [key, value] : members) {
    w.Key(key);
    w.String(value);
  }
}

void JsonOptString(JsonWriter& w, const char* key, const std::optional<std::string>& v) {
  w.Key(key);
  if (v) {
    w.String(*v);
  } else {
    w.Null();
  }
}

std::optional<std::string> RecordReason(const BatchRecord& r) {
  if (r.reason) return r.reason;
  if (r.status == "succeeded") return std::nullopt;
  if (r.status == "no_change" || r.status == "interrupted") return r.status;
  if (r.check && r.check->exit_code != 0) return "check_failed";
  if (r.error_code) return r.error_code;
  return r.exit_code ? "error" : "setup_failed";
}

Status ForEachResult(const std::string& path, bool missing_ok,
                     const std::function<void(BatchRecord)>& each) {
  return ForEachLine(path, missing_ok, [&](std::string_view line) -> Status {
    Result<BatchRecord> r = ParseRecord(line);
    if (!r.ok()) return r.error();
    each(std::move(*r));
    return {};
  });
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
    std::unordered_map<std::string, PublishRecord> published;
    Status pushes = ForEachPublished(dir, [&](PublishRecord p) {
      if (last.count(p.id) != 0) published[p.id] = std::move(p);
    });
    if (!pushes.ok()) return pushes.error();
    for (const std::string& id : order) {
      std::optional<PublishRecord> pushed;
      std::string pull_request;
      if (auto p = published.find(id); p != published.end()) {
        pushed = std::move(p->second);
        Result<std::string> url = ReadRegularFirstLine(
            fmt::format("{}/tasks/{}/pr-url.txt", dir, id), kMaxPullRequestUrl);
        // Only a web address: the cell links it, and nothing else rides along.
        if (url.ok() && (url->starts_with("https://") || url->starts_with("http://")) &&
            url->find_first_of(" \t<>|\"'`()[]") == std::string::npos) {
          pull_request = std::move(*url);
        }
      }
      auto [it, inserted] = by_id.emplace(
          id, Located{std::move(last[id]), dir, std::move(pushed), std::move(pull_request)});
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

namespace {

// Markdown and HTML characters escaped; each line break kept (`keep_lines`, two trailing
// spaces so a renderer breaks the line too) or made a space. In text, ':' is escaped too, so
// a URL written out is not turned into a link, and '@' so no one is mentioned.
std::string EscapeMarkdown(std::string_view text, bool keep_lines) {
  std::string clean = SanitizeUtf8(text);
  std::string out;
  for (char c : clean) {
    if (const char* entity = MarkupEntity(c)) {
      out += entity;
      continue;
    }
    switch (c) {
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
      case ':':
      case '(':
      case ')':
      case '@':
        if (keep_lines) out += '\\';
        out += c;
        break;
      case '\n':
        out += keep_lines ? "  \n" : " ";
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

}  // namespace

std::string EscapeMarkdownCell(std::string_view text) {
  return EscapeMarkdown(text, false);
}

std::string EscapeMarkdownText(std::string_view text) {
  return EscapeMarkdown(text, true);
}

std::string EscapeXml(std::string_view text) {
  std::string clean = SanitizeUtf8(text);
  std::string out;
  for (size_t i = 0; i < clean.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(clean[i]);
    if (const char* entity = MarkupEntity(static_cast<char>(c))) {
      out += entity;
      continue;
    }
    switch (c) {
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
