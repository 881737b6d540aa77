#include "batch/manifest.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "base/duration.h"
#include "base/json.h"
#include "base/read_file.h"
#include "sandbox/mode.h"

namespace ae {
namespace {

constexpr const char* kFields[] = {"id",        "repo",          "ref",          "dir",
                                   "prompt",    "prompt_file",   "model",        "sandbox",
                                   "max_turns", "timeout",       "max_tokens",   "output_schema",
                                   "check",     "check_timeout", "expect_change"};

std::string FieldList() {
  std::string out;
  for (const char* f : kFields) out += (out.empty() ? "" : ", ") + std::string(f);
  return out;
}

bool KnownField(std::string_view name) {
  for (const char* f : kFields) {
    if (name == f) return true;
  }
  return false;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Resolve(const std::string& base, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return base + "/" + path;
}

// scheme://..., or scp-like user@host:path (a ':' before any '/'); everything else is a path.
bool LooksLikeUrl(const std::string& repo) {
  if (repo.find("://") != std::string::npos) return true;
  size_t colon = repo.find(':');
  size_t slash = repo.find('/');
  return colon != std::string::npos && colon > 0 && (slash == std::string::npos || colon < slash);
}

bool IsWhitespace(const std::string& s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

}  // namespace

bool IsUsableTaskId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id[0] == '.' || id[0] == '-') return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return id.find("..") == std::string::npos && !id.ends_with(".lock");
}

Result<ManifestReader> ManifestReader::Open(const std::string& path) {
  Result<Fd> fd = OpenRegularFile(path);
  if (!fd.ok())
    return MakeError(fmt::format("cannot read the manifest {}: {}", path, fd.message()));
  std::string abs = path;
  if (abs.empty() || abs[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      return MakeError(
          fmt::format("cannot read the manifest {}: getcwd: {}", path, std::strerror(errno)));
    }
    abs = std::string(cwd) + "/" + path;
  }
  return ManifestReader(path, DirName(abs), std::move(*fd));
}

Result<std::optional<std::string>> LineReader::Next() {
  for (;;) {
    size_t nl = buf_.find('\n', pos_);
    if (nl != std::string::npos) {
      const size_t start = pos_;
      pos_ = nl + 1;
      ++line_;
      if (nl - start > kMaxManifestLineBytes) {
        return MakeError(fmt::format("{}:{}: the line is longer than {} bytes", path_, line_,
                                     kMaxManifestLineBytes));
      }
      return std::optional<std::string>(buf_.substr(start, nl - start));
    }
    if (eof_) {
      if (pos_ >= buf_.size()) return std::optional<std::string>();
      const size_t start = pos_;
      pos_ = buf_.size();
      ++line_;
      if (buf_.size() - start > kMaxManifestLineBytes) {
        return MakeError(fmt::format("{}:{}: the line is longer than {} bytes", path_, line_,
                                     kMaxManifestLineBytes));
      }
      return std::optional<std::string>(buf_.substr(start));
    }
    if (buf_.size() - pos_ > kMaxManifestLineBytes) {
      // Skip the rest of the over-long line so reading can go on after the error.
      ++line_;
      const size_t bad_line = line_;
      buf_.clear();
      pos_ = 0;
      for (;;) {
        char chunk[65536];
        ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          eof_ = true;
          break;
        }
        const char* end = static_cast<const char*>(std::memchr(chunk, '\n', n));
        if (end != nullptr) {
          buf_.assign(end + 1, static_cast<size_t>(chunk + n - (end + 1)));
          break;
        }
      }
      return MakeError(fmt::format("{}:{}: the line is longer than {} bytes", path_, bad_line,
                                   kMaxManifestLineBytes));
    }
    if (pos_ > 0) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    char chunk[65536];
    ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      eof_ = true;
      buf_.clear();
      return MakeError(fmt::format("{}: read error: {}", path_, std::strerror(errno)));
    }
    if (n == 0) {
      eof_ = true;
    } else {
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
}

Status ForEachLine(const std::string& path, bool missing_ok,
                   const std::function<Status(std::string_view line)>& each) {
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
    if (Status ok = each(**line); !ok.ok()) {
      return MakeError(fmt::format("{}:{}: {}", path, lines.line(), ok.message()));
    }
  }
}

namespace {

// One manifest line's fields, read by type; every error names the line and the field.
class TaskFields {
 public:
  TaskFields(const rapidjson::Document& doc, std::string at) : doc_(doc), at_(std::move(at)) {}

  Error Bad(std::string_view field, const std::string& what) const {
    return MakeError(fmt::format("{}: field '{}': {}", at_, field, what));
  }
  // A non-empty string without NUL bytes.
  Status String(const char* name, std::optional<std::string>* out) const {
    const rapidjson::Value* v = FindJsonMember(doc_, name);
    if (v == nullptr) return {};
    if (!v->IsString()) return Bad(name, "must be a string");
    std::string s(v->GetString(), v->GetStringLength());
    if (s.empty()) return Bad(name, "must not be empty");
    if (s.find('\0') != std::string::npos) return Bad(name, "must not hold a NUL byte");
    *out = std::move(s);
    return {};
  }
  Status Positive(const char* name, std::optional<int64_t>* out) const {
    const rapidjson::Value* v = FindJsonMember(doc_, name);
    if (v == nullptr) return {};
    if (!v->IsInt64() || v->GetInt64() <= 0) return Bad(name, "must be a positive integer");
    *out = v->GetInt64();
    return {};
  }
  // A duration as text ("90s") or a number of seconds, kept as text for the task's exec.
  Status Duration(const char* name, std::optional<std::string>* out) const {
    const rapidjson::Value* v = FindJsonMember(doc_, name);
    if (v == nullptr) return {};
    if (v->IsString()) {
      *out = std::string(v->GetString(), v->GetStringLength());
    } else if (v->IsInt64() && v->GetInt64() > 0) {
      *out = std::to_string(v->GetInt64());
    } else {
      return Bad(name, "must be a duration such as \"90s\", \"10m\" or \"1h30m\"");
    }
    if (!ParseDurationMs(**out).ok()) {
      return Bad(name, fmt::format("'{}' is not a duration such as 90s, 10m, 1h30m", **out));
    }
    return {};
  }
  Status Bool(const char* name, std::optional<bool>* out) const {
    const rapidjson::Value* v = FindJsonMember(doc_, name);
    if (v == nullptr) return {};
    if (!v->IsBool()) return Bad(name, "must be true or false");
    *out = v->GetBool();
    return {};
  }

 private:
  const rapidjson::Document& doc_;
  std::string at_;
};

// Every field of the line into `task` (id and repo as given, into `id` and `repo`).
Status ReadTaskFields(const TaskFields& fields, BatchTask& task, std::optional<std::string>& id,
                      std::optional<std::string>& repo) {
  for (auto [name, out] : {std::pair<const char*, std::optional<std::string>*>{"id", &id},
                           {"repo", &repo},
                           {"ref", &task.ref},
                           {"dir", &task.dir},
                           {"prompt", &task.prompt},
                           {"prompt_file", &task.prompt_file},
                           {"model", &task.model},
                           {"sandbox", &task.sandbox},
                           {"output_schema", &task.output_schema},
                           {"check", &task.check}}) {
    if (Status ok = fields.String(name, out); !ok.ok()) return ok;
  }
  if (Status ok = fields.Positive("max_turns", &task.max_turns); !ok.ok()) return ok;
  if (Status ok = fields.Positive("max_tokens", &task.max_tokens); !ok.ok()) return ok;
  if (task.max_turns && *task.max_turns > 1000000) {
    return fields.Bad("max_turns", "must be at most 1000000");
  }
  if (Status ok = fields.Duration("timeout", &task.timeout); !ok.ok()) return ok;
  if (Status ok = fields.Duration("check_timeout", &task.check_timeout); !ok.ok()) return ok;
  return fields.Bool("expect_change", &task.expect_change);
}

// `dir` must stay inside the repository: relative, with no ".." component.
bool DirStaysInside(const std::string& d) {
  if (d[0] == '/') return false;
  size_t start = 0;
  while (start <= d.size()) {
    size_t end = d.find('/', start);
    if (end == std::string::npos) end = d.size();
    if (end - start == 2 && d.compare(start, 2, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

// The fields that must be there, and the values that would do harm or fail later.
Status CheckTaskFields(const TaskFields& fields, BatchTask& task,
                       const std::optional<std::string>& id,
                       const std::optional<std::string>& repo) {
  if (!id) return fields.Bad("id", "missing");
  if (!IsUsableTaskId(*id)) {
    return fields.Bad("id", fmt::format("'{}' cannot name a file and a branch: use only "
                                        "A-Z a-z 0-9 . _ -, not starting with '.' or '-'",
                                        *id));
  }
  task.id = *id;
  if (!repo) return fields.Bad("repo", "missing");
  if (task.prompt && task.prompt_file) {
    return fields.Bad("prompt_file", "cannot be used with 'prompt'");
  }
  if (!task.prompt && !task.prompt_file) {
    return fields.Bad("prompt", "missing (give 'prompt' or 'prompt_file')");
  }
  // Passed on to the task's exec as -s; checked here by the same table, so a bad value stops
  // the batch before anything ran.
  if (task.sandbox && !FromName(sandbox::kModeNames, *task.sandbox)) {
    return fields.Bad("sandbox", fmt::format("'{}' is not one of {}", *task.sandbox,
                                             JoinNames(sandbox::kModeNames, ", ")));
  }
  if (task.ref && (task.ref->starts_with("-") || task.ref->find("..") != std::string::npos)) {
    return fields.Bad("ref", fmt::format("'{}' is not a branch, tag or commit", *task.ref));
  }
  if (task.dir && !DirStaysInside(*task.dir)) {
    return fields.Bad("dir", fmt::format("'{}' must be a path inside the repository", *task.dir));
  }
  return {};
}

// The repository (a URL, or a directory relative to the manifest) and the files the task
// names, resolved and checked now.
Status ResolveTaskPaths(const TaskFields& fields, const std::string& base_dir,
                        const std::string& repo, BatchTask& task) {
  task.repo_is_url = LooksLikeUrl(repo);
  if (task.repo_is_url) {
    if (repo.starts_with("-") || repo.starts_with("ext::")) {
      return fields.Bad("repo", fmt::format("'{}' is not a repository URL", repo));
    }
    task.repo = repo;
  } else {
    task.repo = Resolve(base_dir, repo);
    struct stat st {};
    if (::stat(task.repo.c_str(), &st) != 0) {
      return fields.Bad("repo", fmt::format("{}: {}", task.repo, std::strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode))
      return fields.Bad("repo", fmt::format("{}: not a directory", task.repo));
  }
  for (auto [name, value] :
       {std::pair<const char*, std::optional<std::string>*>{"prompt_file", &task.prompt_file},
        {"output_schema", &task.output_schema}}) {
    if (!*value) continue;
    **value = Resolve(base_dir, **value);
    Result<Fd> fd = OpenRegularFile(**value);
    if (!fd.ok()) return fields.Bad(name, fmt::format("{}: {}", **value, fd.message()));
  }
  return {};
}

}  // namespace

Result<std::optional<BatchTask>> ManifestReader::Next() {
  std::optional<std::string> line;
  while (!line) {
    Result<std::optional<std::string>> read = lines_.Next();
    if (!read.ok()) return read.error();
    if (!*read) return std::optional<BatchTask>();
    if (!IsWhitespace(**read)) line = std::move(**read);
  }
  BatchTask task;
  task.line = lines_.line();
  task.index = index_++;
  const std::string at = fmt::format("{}:{}", path_, task.line);
  rapidjson::Document doc;
  if (auto e = ParseJsonInto(*line, &doc)) {
    return MakeError(
        fmt::format("{}: the line is not valid JSON: {} (at byte {})", at, e->reason, e->offset));
  }
  if (!doc.IsObject()) return MakeError(fmt::format("{}: the line must be a JSON object", at));
  const TaskFields fields(doc, at);
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (!KnownField(name))
      return fields.Bad(name, fmt::format("unknown field (known: {})", FieldList()));
  }
  std::optional<std::string> id, repo;
  if (Status ok = ReadTaskFields(fields, task, id, repo); !ok.ok()) return ok.error();
  if (Status ok = CheckTaskFields(fields, task, id, repo); !ok.ok()) return ok.error();
  if (Status ok = ResolveTaskPaths(fields, base_dir_, *repo, task); !ok.ok()) return ok.error();
  return std::optional<BatchTask>(std::move(task));
}

Result<std::vector<std::string>> CheckManifest(const std::string& path) {
  Result<ManifestReader> reader = ManifestReader::Open(path);
  if (!reader.ok()) return reader.error();
  std::vector<std::string> errors;
  std::unordered_map<std::string, size_t> first_line;
  size_t tasks = 0;
  for (;;) {
    Result<std::optional<BatchTask>> next = reader->Next();
    if (!next.ok()) {
      if (errors.size() < 100) errors.push_back(next.message());
      continue;
    }
    if (!*next) break;
    ++tasks;
    const BatchTask& task = **next;
    auto [it, inserted] = first_line.emplace(task.id, task.line);
    if (!inserted && errors.size() < 100) {
      errors.push_back(fmt::format("{}:{}: field 'id': duplicate id '{}' (first on line {})", path,
                                   task.line, task.id, it->second));
    }
  }
  if (errors.empty() && tasks == 0)
    errors.push_back(fmt::format("{}: no task in the manifest", path));
  return errors;
}

}  // namespace ae
