#include "batch/publish.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "base/beneath.h"
#include "base/fd.h"
#include "base/json.h"
#include "base/read_file.h"
#include "base/utf8.h"
#include "base/write_all.h"
#include "batch/child.h"
#include "batch/manifest.h"
#include "batch/report.h"
#include "cli/exit_code.h"

namespace ae {
namespace {

// A push crosses a network: it gets longer than a local git step, and is still bounded.
constexpr int64_t kPushTimeoutMs = 600000;
// The tail of a check's output and the diffstat the pull request shows.
constexpr size_t kBodyBlockBytes = 8192;

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// A fenced code block that `text` cannot close: the fence is one backtick longer than the
// longest run of backticks in it. Inside it nothing is markup.
std::string FencedBlock(std::string_view text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string clean = SanitizeUtf8(text);
  return fence + "text\n" + Trimmed(clean) + "\n" + fence + "\n";
}

Result<BranchRecord> ParseBranchRecord(std::string_view text) {
  Result<rapidjson::Document> doc = ParseJsonObject(text, "branch.json");
  if (!doc.ok()) return doc.error();
  BranchRecord r;
  r.branch = StringMember(*doc, "branch");
  r.remote = StringMember(*doc, "remote");
  r.commit = StringMember(*doc, "commit");
  if (const rapidjson::Value* base = FindJsonMember(*doc, "base"); base && base->IsString()) {
    r.base = base->GetString();
  }
  // What publish hands git: a branch of batch's own naming, a 40- or 64-digit object name and
  // a remote that cannot be read as an option.
  if (!r.branch.starts_with("agentexec/") || !IsUsableTaskId(r.branch.substr(10))) {
    return MakeError(fmt::format("branch.json: '{}' is not a batch branch", r.branch));
  }
  if ((r.commit.size() != 40 && r.commit.size() != 64) ||
      r.commit.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return MakeError(fmt::format("branch.json: '{}' is not a commit", r.commit));
  }
  if (r.remote.empty() || r.remote.starts_with("-")) {
    return MakeError(fmt::format("branch.json: '{}' is not a remote", r.remote));
  }
  return r;
}

std::string PublishRecordJson(const PublishRecord& r) {
  JsonWriter w;
  w.StartObject();
  JsonStrings(w, {{"id", r.id},
                  {"branch", r.branch},
                  {"remote", r.remote},
                  {"commit", r.commit},
                  {"outcome", r.outcome}});
  JsonOptString(w, "error", r.error);
  w.EndObject();
  return std::string(w.view());
}

// One task's branch onto its remote: the outcome, never a force push unless `force`.
PublishRecord Publish(const std::string& id, const BranchRecord& branch, const std::string& clone,
                      bool force, const std::vector<std::string>& env) {
  PublishRecord rec{id, branch.branch, branch.remote, branch.commit, "failed", std::nullopt};
  auto failed = [&](const std::string& why) {
    rec.error = why;
    return rec;
  };
  const std::string ref = "refs/heads/" + branch.branch;
  Result<std::string> seen =
      BatchGit(clone, {"ls-remote", "--", branch.remote, ref}, env, {}, kPushTimeoutMs);
  if (!seen.ok()) return failed(seen.message());
  const std::string remote_head = seen->substr(0, seen->find('\t'));
  if (remote_head == branch.commit) {
    rec.outcome = "up to date";
    return rec;
  }
  std::vector<std::string> push = {"push", "--quiet", "--no-verify"};
  if (!remote_head.empty()) {
    // A fast-forward is pushed as it is; anything else diverged. The remote's head is an
    // ancestor only if the clone has it: batch made the commit on top of what it cloned.
    Result<std::string> ancestor =
        BatchGit(clone, {"merge-base", "--is-ancestor", remote_head, branch.commit}, env);
    if (!ancestor.ok()) {
      if (!force) {
        rec.outcome = "diverged";
        return failed(fmt::format(
            "{} on the remote is at {}, which {} does not contain: not pushed (--force replaces "
            "it)",
            branch.branch, remote_head.substr(0, 12), branch.commit.substr(0, 12)));
      }
      push.push_back("--force-with-lease=" + ref + ":" + remote_head);
      rec.outcome = "forced";
    }
  }
  push.insert(push.end(), {"--", branch.remote, branch.commit + ":" + ref});
  Result<std::string> pushed = BatchGit(clone, push, env, {}, kPushTimeoutMs);
  if (!pushed.ok()) {
    rec.outcome = "failed";
    return failed(pushed.message());
  }
  if (rec.outcome != "forced") rec.outcome = "pushed";
  return rec;
}

}  // namespace

std::string BranchRecordJson(const BranchRecord& r) {
  JsonWriter w;
  w.StartObject();
  JsonStrings(w, {{"branch", r.branch}, {"remote", r.remote}, {"commit", r.commit}});
  JsonOptString(w, "base", r.base);
  w.EndObject();
  return std::string(w.view()) + "\n";
}

std::string PullRequestTitle(const PullRequestInput& in) {
  std::string first = in.prompt.substr(0, in.prompt.find('\n'));
  first = SanitizeUtf8(Trimmed(first));
  for (char& c : first) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (first.size() > 72) {
    size_t cut = 72;
    while (cut > 0 && (static_cast<unsigned char>(first[cut]) & 0xC0) == 0x80) --cut;
    first = first.substr(0, cut) + "…";
  }
  return fmt::format("agentexec: {}: {}\n", in.id, first);
}

std::string PullRequestBody(const PullRequestInput& in) {
  std::string out = fmt::format("Made by `agentexec batch`, task **{}**.\n\n", in.id);
  out += "### Task\n\n" + EscapeMarkdownText(Trimmed(in.prompt)) + "\n\n";
  out += "### What the agent said\n\n";
  out += in.final_message.empty() ? "(no final message)\n\n"
                                  : EscapeMarkdownText(Trimmed(in.final_message)) + "\n\n";
  out += "### Check\n\n";
  if (in.check_command) {
    out += FencedBlock(*in.check_command) + "\n" + EscapeMarkdownText(in.check_result) + "\n\n";
  } else {
    out += "No check was given.\n\n";
  }
  out += "### Changes\n\n" + FencedBlock(TextTail(in.diffstat, kBodyBlockBytes));
  return out;
}

Status ForEachPublished(const std::string& dir, const std::function<void(PublishRecord)>& each) {
  return ForEachLine(dir + "/publish.jsonl", true, [&](std::string_view line) -> Status {
    Result<rapidjson::Document> doc = ParseJsonObject(line, "publish record");
    if (!doc.ok()) return doc.error();
    PublishRecord r;
    r.id = StringMember(*doc, "id");
    r.branch = StringMember(*doc, "branch");
    r.remote = StringMember(*doc, "remote");
    r.commit = StringMember(*doc, "commit");
    r.outcome = StringMember(*doc, "outcome");
    if (const rapidjson::Value* e = FindJsonMember(*doc, "error"); e && e->IsString()) {
      r.error = e->GetString();
    }
    each(std::move(r));
    return {};
  });
}

int PublishBatch(const BatchPublishOptions& options, const std::vector<std::string>& env) {
  // The succeeded tasks, by the last record of each id (a resumed batch).
  std::unordered_map<std::string, bool> succeeded;
  std::vector<std::string> order;
  Status read = ForEachResult(options.out + "/results.jsonl", false, [&](const BatchRecord& r) {
    if (succeeded.count(r.id) == 0) order.push_back(r.id);
    succeeded[r.id] = r.status == "succeeded";
  });
  if (!read.ok()) return FailWith(ExitCode::kUsage, read.message());
  const int out_fd = ::open(options.out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out_fd < 0) {
    return FailWith(ExitCode::kUsage, fmt::format("{}: {}", options.out, std::strerror(errno)));
  }
  const Fd out(out_fd);
  Fd tasks;
  if (int err =
          OpenBeneath(out.get(), "tasks", O_RDONLY | O_DIRECTORY, 0, kBeneathNoSymlinks, &tasks);
      err != 0) {
    return FailWith(ExitCode::kUsage, fmt::format("{}/tasks: {}", options.out, std::strerror(err)));
  }
  Fd log;
  if (int err = OpenBeneath(out.get(), "publish.jsonl", O_WRONLY | O_APPEND | O_CREAT, 0644,
                            kBeneathNoSymlinks, &log);
      err != 0) {
    return FailWith(ExitCode::kUsage,
                    fmt::format("{}/publish.jsonl: {}", options.out, std::strerror(err)));
  }
  const std::string work = options.work_dir.value_or(options.out + "/work");
  size_t counts[3] = {0, 0, 0};  // pushed (or forced), up to date, not on the remote
  for (const std::string& id : order) {
    if (!succeeded[id]) continue;
    Result<std::string> text = ReadRegularFileBeneath(tasks.get(), id + "/branch.json", 65536);
    if (!text.ok()) continue;  // succeeded without a change to deliver (expect_change false)
    PublishRecord rec;
    Result<BranchRecord> branch = ParseBranchRecord(*text);
    if (!branch.ok()) {
      rec = {id, "", "", "", "failed", branch.message()};
    } else {
      const std::string clone = fmt::format("{}/{}/repo", work, id);
      Result<std::string> expected = ReadRegularFileBeneath(tasks.get(), id + "/git-config");
      Result<std::string> now = GitConfigState(clone);
      if (!expected.ok() || !now.ok() || *expected != *now) {
        rec = {id,
               branch->branch,
               branch->remote,
               branch->commit,
               "failed",
               fmt::format("the clone {} is not as batch left it ({}): not pushed", clone,
                           !now.ok() ? now.message() : "its git configuration changed")};
      } else {
        rec = Publish(id, *branch, clone, options.force, env);
      }
    }
    const bool on_remote = rec.outcome == "pushed" || rec.outcome == "forced";
    ++counts[on_remote ? 0 : rec.outcome == "up to date" ? 1 : 2];
    std::string line =
        fmt::format("publish: {}: {} {} -> {}", id, rec.outcome, rec.branch, rec.remote);
    if (rec.error) line += ": " + *rec.error;
    std::fprintf(stderr, "%s\n", line.c_str());
    if (Status w = WriteAll(log.get(), PublishRecordJson(rec) + "\n"); !w.ok()) {
      std::fprintf(stderr, "error: %s/publish.jsonl: %s\n", options.out.c_str(),
                   w.message().c_str());
    }
  }
  std::fprintf(stderr, "publish: %zu pushed, %zu up to date, %zu not pushed\n", counts[0],
               counts[1], counts[2]);
  return counts[2] > 0 ? ToInt(ExitCode::kTurnFailed) : ToInt(ExitCode::kOk);
}

}  // namespace ae
