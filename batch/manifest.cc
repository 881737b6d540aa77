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

Result<std::optional<BatchTask>> ManifestReader::Next() {
  std::optional<std::string> line;
  for (;;) {
    Result<std::optional<std::string>> read = lines_.Next();
    if (!read.ok()) return read.error();
    if (!*read) return std::optional<BatchTask>();
    if (!IsWhitespace(**read)) {
      line = std::move(**read);
      break;
    }
  }
  BatchTask task;
  task.line = lines_.line();
  task.index = index_++;
  const std::string at = fmt::format("{}:{}", path_, task.line);
  auto field_error = [&](std::string_view field, const std::string& what) {
    return MakeError(fmt::format("{}: field '{}': {}", at, field, what));
  };

  rapidjson::Document doc;
  if (auto e = ParseJsonInto(*line, &doc)) {
    return MakeError(
        fmt::format("{}: the line is not valid JSON: {} (at byte {})", at, e->reason, e->offset));
  }
  if (!doc.IsObject()) return MakeError(fmt::format("{}: the line must be a JSON object", at));
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (!KnownField(name)) {
      return field_error(name, fmt::format("unknown field (known: {})", FieldList()));
    }
  }

  auto string_field = [&](const char* name, std::optional<std::string>* out) -> Status {
    const rapidjson::Value* v = FindJsonMember(doc, name);
    if (v == nullptr) return {};
    if (!v->IsString()) return field_error(name, "must be a string");
    std::string s(v->GetString(), v->GetStringLength());
    if (s.empty()) return field_error(name, "must not be empty");
    if (s.find('\0') != std::string::npos) return field_error(name, "must not hold a NUL byte");
    *out = std::move(s);
    return {};
  };
  auto int_field = [&](const char* name, std::optional<int64_t>* out) -> Status {
    const rapidjson::Value* v = FindJsonMember(doc, name);
    if (v == nullptr) return {};
    if (!v->IsInt64() || v->GetInt64() <= 0) return field_error(name, "must be a positive integer");
    *out = v->GetInt64();
    return {};
  };

  std::optional<std::string> id, repo;
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
    if (Status ok = string_field(name, out); !ok.ok()) return ok.error();
  }
  if (Status ok = int_field("max_turns", &task.max_turns); !ok.ok()) return ok.error();
  if (Status ok = int_field("max_tokens", &task.max_tokens); !ok.ok()) return ok.error();
  if (task.max_turns && *task.max_turns > 1000000) {
    return field_error("max_turns", "must be at most 1000000");
  }
  auto duration_field = [&](const char* name, std::optional<std::string>* out) -> Status {
    const rapidjson::Value* v = FindJsonMember(doc, name);
    if (v == nullptr) return {};
    if (v->IsString()) {
      *out = std::string(v->GetString(), v->GetStringLength());
    } else if (v->IsInt64() && v->GetInt64() > 0) {
      *out = std::to_string(v->GetInt64());
    } else {
      return field_error(name, "must be a duration such as \"90s\", \"10m\" or \"1h30m\"");
    }
    if (!ParseDurationMs(**out).ok()) {
      return field_error(name,
                         fmt::format("'{}' is not a duration such as 90s, 10m, 1h30m", **out));
    }
    return {};
  };
  if (Status ok = duration_field("timeout", &task.timeout); !ok.ok()) return ok.error();
  if (Status ok = duration_field("check_timeout", &task.check_timeout); !ok.ok()) {
    return ok.error();
  }
  if (const rapidjson::Value* v = FindJsonMember(doc, "expect_change")) {
    if (!v->IsBool()) return field_error("expect_change", "must be true or false");
    task.expect_change = v->GetBool();
  }

  if (!id) return field_error("id", "missing");
  if (!IsUsableTaskId(*id)) {
    return field_error("id", fmt::format("'{}' cannot name a file and a branch: use only "
                                         "A-Z a-z 0-9 . _ -, not starting with '.' or '-'",
                                         *id));
  }
  task.id = *id;
  if (!repo) return field_error("repo", "missing");
  if (task.prompt && task.prompt_file) {
    return field_error("prompt_file", "cannot be used with 'prompt'");
  }
  if (!task.prompt && !task.prompt_file) {
    return field_error("prompt", "missing (give 'prompt' or 'prompt_file')");
  }
  // Passed on to the task's exec as -s; checked here by the same table, so a bad value stops
  // the batch before anything ran.
  if (task.sandbox && !FromName(sandbox::kModeNames, *task.sandbox)) {
    return field_error("sandbox", fmt::format("'{}' is not one of {}", *task.sandbox,
                                              JoinNames(sandbox::kModeNames, ", ")));
  }
  if (task.ref && (task.ref->starts_with("-") || task.ref->find("..") != std::string::npos)) {
    return field_error("ref", fmt::format("'{}' is not a branch, tag or commit", *task.ref));
  }
  if (task.dir) {
    const std::string& d = *task.dir;
    bool bad = d[0] == '/';
    size_t start = 0;
    while (!bad && start <= d.size()) {
      size_t end = d.find('/', start);
      if (end == std::string::npos) end = d.size();
      if (d.compare(start, end - start, "..") == 0 && end - start == 2) bad = true;
      start = end + 1;
    }
    if (bad) return field_error("dir", fmt::format("'{}' must be a path inside the repository", d));
  }

  task.repo_is_url = LooksLikeUrl(*repo);
  if (task.repo_is_url) {
    if (repo->starts_with("-") || repo->starts_with("ext::")) {
      return field_error("repo", fmt::format("'{}' is not a repository URL", *repo));
    }
    task.repo = *repo;
  } else {
    task.repo = Resolve(base_dir_, *repo);
    struct stat st {};
    if (::stat(task.repo.c_str(), &st) != 0) {
      return field_error("repo", fmt::format("{}: {}", task.repo, std::strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return field_error("repo", fmt::format("{}: not a directory", task.repo));
    }
  }
  for (auto [name, value] :
       {std::pair<const char*, std::optional<std::string>*>{"prompt_file", &task.prompt_file},
        {"output_schema", &task.output_schema}}) {
    if (!*value) continue;
    **value = Resolve(base_dir_, **value);
    Result<Fd> fd = OpenRegularFile(**value);
    if (!fd.ok()) return field_error(name, fmt::format("{}: {}", **value, fd.message()));
  }
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
