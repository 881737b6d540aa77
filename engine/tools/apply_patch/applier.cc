#include "engine/tools/apply_patch/applier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "base/path.h"
#include "engine/tools/apply_patch/seek.h"

namespace ae::patch {
namespace {

// Rust's io::Error text, which codex's messages carry: "No such file or directory (os error 2)".
std::string OsError(int err) {
  return fmt::format("{} (os error {})", std::strerror(err), err);
}

struct Loaded {
  std::optional<std::string> content;
  mode_t mode = 0;
};

// The file's bytes, nullopt if it does not exist, read through the confined resolver: the
// planner reads exactly what the commit will replace.
Result<Loaded> Load(const sandbox::ConfinedFs& cfs, const std::string& path) {
  Loaded out;
  sandbox::Location at;
  int err = cfs.OpenParent(path, &at, nullptr);
  if (err == ENOENT) return out;  // a missing directory: nothing there yet
  if (err != 0) return MakeError(OsError(err));
  sandbox::FileRead read;
  err = cfs.Read(at, &read);
  if (err == EINVAL && read.type != 0) {
    // A FIFO would block the open forever, a device may act on it: refused unopened.
    return MakeError(fmt::format("{} is {}; apply_patch only changes regular files", path,
                                 sandbox::FileTypeName(read.type)));
  }
  if (err != 0) return MakeError(OsError(err));
  out.content = std::move(read.content);
  out.mode = read.mode;
  return out;
}

struct Lines {
  std::vector<std::string_view> lines;
  bool crlf = false;
};

// Lines without their terminators; the empty piece after a final newline is dropped. A file
// whose every newline is CRLF is matched without the CRs and written back with them.
Lines SplitFile(std::string_view content) {
  Lines out;
  size_t newlines = 0, crlf = 0;
  for (size_t i = 0; i < content.size(); ++i) {
    if (content[i] == '\n') {
      ++newlines;
      if (i > 0 && content[i - 1] == '\r') ++crlf;
    }
  }
  out.crlf = newlines > 0 && crlf == newlines;
  size_t start = 0;
  while (start <= content.size()) {
    size_t nl = content.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < content.size()) out.lines.push_back(content.substr(start));
      break;
    }
    std::string_view line = content.substr(start, nl - start);
    if (out.crlf) line.remove_suffix(1);
    out.lines.push_back(line);
    start = nl + 1;
  }
  return out;
}

struct Replacement {
  size_t start;
  size_t old_len;
  std::vector<std::string> new_lines;
};

Result<std::vector<Replacement>> ComputeReplacements(const std::vector<std::string_view>& lines,
                                                     const std::string& path,
                                                     const std::vector<Chunk>& chunks) {
  std::vector<Replacement> reps;
  size_t cursor = 0;
  for (const Chunk& chunk : chunks) {
    bool had_context = false;
    if (chunk.context) {
      auto at = SeekSequence(lines, {*chunk.context}, cursor, false);
      if (!at) {
        return MakeError(fmt::format("Failed to find context '{}' in {}", *chunk.context, path));
      }
      cursor = *at + 1;
      had_context = true;
    }
    if (chunk.old_lines.empty()) {
      // Pure addition: right after its context line, or at the end of the file.
      reps.push_back({had_context ? cursor : lines.size(), 0, chunk.new_lines});
      continue;
    }
    const std::vector<std::string>* pattern = &chunk.old_lines;
    std::vector<std::string> trimmed_old, trimmed_new;
    const std::vector<std::string>* replacement = &chunk.new_lines;
    auto at = SeekSequence(lines, *pattern, cursor, chunk.end_of_file);
    if (!at && pattern->back().empty()) {
      // A trailing empty line in the chunk stands for the file's final newline.
      trimmed_old.assign(pattern->begin(), pattern->end() - 1);
      trimmed_new = chunk.new_lines;
      if (!trimmed_new.empty() && trimmed_new.back().empty()) trimmed_new.pop_back();
      pattern = &trimmed_old;
      replacement = &trimmed_new;
      at = SeekSequence(lines, *pattern, cursor, chunk.end_of_file);
    }
    if (!at) {
      std::string expected;
      for (size_t i = 0; i < chunk.old_lines.size(); ++i) {
        if (i) expected += '\n';
        expected += chunk.old_lines[i];
      }
      return MakeError(fmt::format("Failed to find expected lines in {}:\n{}", path, expected));
    }
    reps.push_back({*at, pattern->size(), *replacement});
    cursor = *at + pattern->size();
  }
  std::stable_sort(reps.begin(), reps.end(),
                   [](const Replacement& a, const Replacement& b) { return a.start < b.start; });
  return reps;
}

std::string Join(const std::vector<std::string_view>& lines, bool crlf) {
  const char* eol = crlf ? "\r\n" : "\n";
  size_t size = 0;
  for (auto l : lines) size += l.size() + 2;
  std::string out;
  out.reserve(size);
  for (auto l : lines) {
    out.append(l);
    out += eol;
  }
  return out;
}

std::string Rel(const std::string& abs, const std::string& cwd) {
  if (abs.size() > cwd.size() && abs.compare(0, cwd.size(), cwd) == 0 && abs[cwd.size()] == '/') {
    return abs.substr(cwd.size() + 1);
  }
  return abs;
}

// A unified diff (3 lines of context) built from the replacements themselves, so it costs
// time in proportion to the change, not to the file.
std::string UnifiedDiff(const std::vector<std::string_view>& old_lines,
                        std::vector<Replacement> reps, const std::string& from,
                        const std::string& to) {
  constexpr size_t kContext = 3;
  // Shrink each replacement by the lines it leaves unchanged at either end.
  for (auto& r : reps) {
    size_t pre = 0;
    while (pre < r.old_len && pre < r.new_lines.size() &&
           old_lines[r.start + pre] == r.new_lines[pre]) {
      ++pre;
    }
    size_t post = 0;
    while (post < r.old_len - pre && post < r.new_lines.size() - pre &&
           old_lines[r.start + r.old_len - 1 - post] ==
               r.new_lines[r.new_lines.size() - 1 - post]) {
      ++post;
    }
    r.new_lines = std::vector<std::string>(r.new_lines.begin() + pre, r.new_lines.end() - post);
    r.start += pre;
    r.old_len -= pre + post;
  }
  reps.erase(
      std::remove_if(reps.begin(), reps.end(),
                     [](const Replacement& r) { return r.old_len == 0 && r.new_lines.empty(); }),
      reps.end());
  if (reps.empty()) return {};

  std::string out = fmt::format("--- {}\n+++ {}\n", from, to);
  const size_t n = old_lines.size();
  long delta = 0;  // new line number minus old line number before the current group
  size_t i = 0;
  while (i < reps.size()) {
    size_t j = i;  // reps[i..j] form one hunk
    while (j + 1 < reps.size() &&
           reps[j + 1].start <= reps[j].start + reps[j].old_len + 2 * kContext) {
      ++j;
    }
    size_t old_start = reps[i].start >= kContext ? reps[i].start - kContext : 0;
    size_t old_end = std::min(n, reps[j].start + reps[j].old_len + kContext);
    std::string body;
    size_t old_count = old_end - old_start, new_count = old_count;
    size_t pos = old_start;
    for (size_t k = i; k <= j; ++k) {
      for (; pos < reps[k].start; ++pos)
        fmt::format_to(std::back_inserter(body), " {}\n", old_lines[pos]);
      for (size_t m = 0; m < reps[k].old_len; ++m, ++pos) {
        fmt::format_to(std::back_inserter(body), "-{}\n", old_lines[pos]);
      }
      for (const auto& l : reps[k].new_lines) fmt::format_to(std::back_inserter(body), "+{}\n", l);
      new_count = new_count - reps[k].old_len + reps[k].new_lines.size();
    }
    for (; pos < old_end; ++pos) fmt::format_to(std::back_inserter(body), " {}\n", old_lines[pos]);
    size_t new_start = static_cast<size_t>(static_cast<long>(old_start) + delta);
    out += fmt::format("@@ -{},{} +{},{} @@\n", old_count ? old_start + 1 : old_start, old_count,
                       new_count ? new_start + 1 : new_start, new_count);
    out += body;
    delta += static_cast<long>(new_count) - static_cast<long>(old_count);
    i = j + 1;
  }
  return out;
}

std::string WholeFileDiff(std::string_view content, bool adding, const std::string& name) {
  Lines l = SplitFile(content);
  std::string out = adding ? fmt::format("--- /dev/null\n+++ {}\n", name)
                           : fmt::format("--- {}\n+++ /dev/null\n", name);
  if (l.lines.empty()) return out;
  out += adding ? fmt::format("@@ -0,0 +1,{} @@\n", l.lines.size())
                : fmt::format("@@ -1,{} +0,0 @@\n", l.lines.size());
  for (auto line : l.lines) {
    out += adding ? '+' : '-';
    out.append(line);
    out += '\n';
  }
  return out;
}

}  // namespace

std::string ResolvePath(const std::string& cwd, const std::string& path) {
  return ResolvedPath(cwd, path);
}

std::vector<FileChange> NamedChanges(const Patch& patch, const std::string& cwd) {
  std::map<std::string, FileChangeKind> kinds;
  for (const Hunk& h : patch.hunks) {
    std::string abs = ResolvePath(cwd, h.path);
    switch (h.kind) {
      case Hunk::Kind::kAdd:
        kinds[abs] = FileChangeKind::kAdd;
        break;
      case Hunk::Kind::kDelete:
        kinds[abs] = FileChangeKind::kDelete;
        break;
      case Hunk::Kind::kUpdate:
        if (h.move_to.empty()) {
          kinds[abs] = FileChangeKind::kUpdate;
        } else {
          kinds[abs] = FileChangeKind::kDelete;
          kinds[ResolvePath(cwd, h.move_to)] = FileChangeKind::kAdd;
        }
        break;
    }
  }
  std::vector<FileChange> out;
  for (auto& [path, kind] : kinds) out.push_back(FileChange{path, kind, ""});
  return out;
}

Status CheckWritable(const Patch& patch, const std::string& cwd, const sandbox::Policy& policy) {
  if (policy.unrestricted()) return {};
  if (!sandbox::ConfinedFs::Openat2Available()) {
    return MakeError(
        "apply_patch cannot confine its writes on this kernel: openat2 is not available (Linux "
        "5.6 or newer is needed)");
  }
  const sandbox::ConfinedFs cfs(policy);
  for (const FileChange& c : NamedChanges(patch, cwd)) {
    std::string resolved;
    const int err = cfs.Target(c.path, &resolved);
    if (err == 0) continue;
    if (policy.mode == sandbox::Mode::kReadOnly) {
      return MakeError(fmt::format(
          "writing {} is not allowed: the sandbox is read-only, so apply_patch cannot change any "
          "file",
          c.path));
    }
    if (err == EROFS) {
      return MakeError(fmt::format(
          "writing {} is not allowed: .git and .agentexec directories stay read-only in the {} "
          "sandbox",
          c.path, sandbox::ModeName(policy.mode)));
    }
    std::string roots;
    for (const auto& r : policy.writable_roots) roots += (roots.empty() ? "" : ", ") + r;
    return MakeError(fmt::format(
        "writing {} is not allowed: it is outside the writable roots of the {} sandbox ({})",
        c.path, sandbox::ModeName(policy.mode), roots.empty() ? "none" : roots));
  }
  return {};
}

namespace {

// `lines` with the replacements made, joined with the file's own line ends.
std::string ApplyReplacements(const Lines& lines, const std::vector<Replacement>& reps) {
  std::vector<std::string_view> result;
  result.reserve(lines.lines.size() + 16);
  size_t pos = 0;
  for (const Replacement& r : reps) {
    for (; pos < r.start; ++pos) result.push_back(lines.lines[pos]);
    for (const auto& l : r.new_lines) result.push_back(l);
    pos = std::max(pos, r.start + r.old_len);
  }
  for (; pos < lines.lines.size(); ++pos) result.push_back(lines.lines[pos]);
  return Join(result, lines.crlf);
}

// PlanPatch's work, one hunk at a time: each file's content as the hunks so far left it (read
// from the disk the first time one touches it), the changes to report and the summary.
class Planner {
 public:
  Planner(const std::string& cwd, const sandbox::ConfinedFs& cfs) : cwd_(cwd), cfs_(cfs) {}

  Status Add(const Hunk& h, const std::string& abs) {
    auto s = StateOf(abs);
    if (!s.ok()) return MakeError(fmt::format("Failed to write file {}: {}", abs, s.message()));
    (*s)->op.content = h.contents;
    changes_[abs] = FileChange{abs, FileChangeKind::kAdd,
                               WholeFileDiff(h.contents, true, "b/" + Rel(abs, cwd_))};
    added_.push_back(h.path);
    return {};
  }

  Status Delete(const Hunk& h, const std::string& abs) {
    auto s = StateOf(abs);
    if (!s.ok()) return MakeError(fmt::format("Failed to read {}: {}", abs, s.message()));
    if (!(*s)->op.content) {
      return MakeError(fmt::format("Failed to read {}: {}", abs, OsError(ENOENT)));
    }
    changes_[abs] = FileChange{abs, FileChangeKind::kDelete,
                               WholeFileDiff(*(*s)->op.content, false, "a/" + Rel(abs, cwd_))};
    (*s)->op.content.reset();
    deleted_.push_back(h.path);
    return {};
  }

  Status Update(const Hunk& h, const std::string& abs) {
    auto s = StateOf(abs);
    if (!s.ok()) {
      return MakeError(fmt::format("Failed to read file to update {}: {}", abs, s.message()));
    }
    if (!(*s)->op.content) {
      return MakeError(fmt::format("Failed to read file to update {}: {}", abs, OsError(ENOENT)));
    }
    const std::string current = *(*s)->op.content;
    Lines lines = SplitFile(current);
    auto reps = ComputeReplacements(lines.lines, abs, h.chunks);
    if (!reps.ok()) return reps.error();
    std::string updated = ApplyReplacements(lines, *reps);
    std::string dest_abs = h.move_to.empty() ? abs : ResolvePath(cwd_, h.move_to);
    std::string diff =
        UnifiedDiff(lines.lines, *reps, "a/" + Rel(abs, cwd_), "b/" + Rel(dest_abs, cwd_));
    if (!h.move_to.empty()) return Move(h, abs, dest_abs, **s, std::move(updated), diff);
    (*s)->op.content = std::move(updated);
    changes_[abs] = FileChange{abs, FileChangeKind::kUpdate, std::move(diff)};
    modified_.push_back(h.path);
    return {};
  }

  Plan Finish() {
    Plan plan;
    for (auto& [path, s] : files_) plan.ops.push_back(std::move(s.op));
    for (auto& [path, c] : changes_) plan.changes.push_back(std::move(c));
    for (const auto& p : added_) plan.summary += "A " + p + "\n";
    for (const auto& p : modified_) plan.summary += "M " + p + "\n";
    for (const auto& p : deleted_) plan.summary += "D " + p + "\n";
    return plan;
  }

 private:
  struct State {
    FileOp op;
    bool loaded = false;
  };

  // Current (in-patch) state of the file `abs` lands on, reading the disk the first time.
  Result<State*> StateOf(const std::string& abs) {
    std::string canon;
    if (int err = cfs_.Target(abs, &canon); err != 0) return MakeError(OsError(err));
    State& s = files_[canon];
    if (!s.loaded) {
      auto loaded = Load(cfs_, canon);
      if (!loaded.ok()) {
        files_.erase(canon);
        return loaded.error();
      }
      s.op.path = canon;
      s.op.original = loaded->content;
      s.op.content = std::move(loaded->content);
      s.op.mode = loaded->mode;
      s.loaded = true;
    }
    return &s;
  }

  // An update that also moves the file: `from` goes, `dest_abs` gets the updated content.
  Status Move(const Hunk& h, const std::string& abs, const std::string& dest_abs, State& from,
              std::string updated, const std::string& diff) {
    mode_t mode = from.op.mode;
    from.op.content.reset();
    auto d = StateOf(dest_abs);
    if (!d.ok()) {
      return MakeError(fmt::format("Failed to write file {}: {}", dest_abs, d.message()));
    }
    (*d)->op.content = std::move(updated);
    if (!(*d)->op.original) (*d)->op.mode = mode;  // a moved file keeps its mode
    changes_[abs] = FileChange{abs, FileChangeKind::kDelete, ""};
    changes_[dest_abs] = FileChange{
        dest_abs, FileChangeKind::kAdd,
        fmt::format("rename from {}\nrename to {}\n{}", Rel(abs, cwd_), Rel(dest_abs, cwd_), diff)};
    modified_.push_back(h.move_to);
    return {};
  }

  const std::string& cwd_;
  const sandbox::ConfinedFs& cfs_;
  std::map<std::string, State> files_;  // by resolved path
  std::vector<std::string> added_, modified_, deleted_;
  std::map<std::string, FileChange> changes_;
};

}  // namespace

Result<Plan> PlanPatch(const Patch& patch, const std::string& cwd, const sandbox::ConfinedFs& cfs) {
  Planner planner(cwd, cfs);
  for (const Hunk& h : patch.hunks) {
    const std::string abs = ResolvePath(cwd, h.path);
    Status done;
    switch (h.kind) {
      case Hunk::Kind::kAdd:
        done = planner.Add(h, abs);
        break;
      case Hunk::Kind::kDelete:
        done = planner.Delete(h, abs);
        break;
      case Hunk::Kind::kUpdate:
        done = planner.Update(h, abs);
        break;
    }
    if (!done.ok()) return done.error();
  }
  return planner.Finish();
}

Status Commit(const Plan& plan, const sandbox::ConfinedFs& cfs) {
  // What was done, with the descriptors it was done through: a rollback must undo exactly
  // that, not whatever the path names by then.
  std::vector<std::pair<const FileOp*, sandbox::Location>> done;
  std::vector<sandbox::Location> made_dirs;

  auto rollback = [&](const Status& cause) -> Status {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      const FileOp& op = *it->first;
      if (op.original) {
        (void)cfs.Replace(it->second, *op.original, op.mode, true);
      } else {
        (void)cfs.Unlink(it->second);
      }
    }
    for (auto it = made_dirs.rbegin(); it != made_dirs.rend(); ++it) (void)cfs.RemoveDir(*it);
    return MakeError(cause.message() + "\n(no file was changed: the patch was rolled back)");
  };

  // Every change goes through the resolver again: the path was checked when it was planned,
  // and it is opened now beneath its root with no symlinks, so a swap in between fails the
  // write instead of moving it.
  for (const FileOp& op : plan.ops) {
    if (op.content == op.original) continue;  // e.g. added then deleted within the patch
    sandbox::Location at;
    if (op.content) {
      const size_t made_before = made_dirs.size();
      int err = cfs.OpenParent(op.path, &at, &made_dirs);
      if (err != 0) {
        const bool making = made_dirs.size() > made_before || err == EEXIST;
        return rollback(MakeError(fmt::format(
            "Failed to {} {}: {}", making ? "create parent directories for" : "write file", op.path,
            OsError(err))));
      }
      err = cfs.Replace(at, *op.content, op.mode, op.original.has_value() || op.mode != 0);
      if (err != 0) {
        return rollback(
            MakeError(fmt::format("Failed to write file {}: {}", op.path, OsError(err))));
      }
    } else {
      int err = cfs.OpenParent(op.path, &at, nullptr);
      if (err == 0) err = cfs.Unlink(at);
      if (err != 0) {
        return rollback(
            MakeError(fmt::format("Failed to delete file {}: {}", op.path, OsError(err))));
      }
    }
    (void)cfs.SyncDir(at);
    done.emplace_back(&op, std::move(at));
  }
  return {};
}

}  // namespace ae::patch
