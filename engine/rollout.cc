#include "engine/rollout.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>

#include "base/beneath.h"
#include "base/json.h"
#include "base/read_file.h"
#include "base/write_all.h"
#include "engine/events/usage_json.h"

namespace ae {
namespace {

namespace fs = std::filesystem;

// `resume --last` reads each session's first line; a session_meta line is a few hundred bytes.
constexpr size_t kMaxMetaLineBytes = 1 << 20;

std::string MetaLine(const SessionMeta& m) {
  JsonWriter w;
  w.StartObject();
  // codex's line carries `timestamp` and `payload.id`/`payload.timestamp`; tools that read
  // codex session files look for the session id there.
  w.Key("timestamp"), w.String(m.created_at);
  w.Key("type"), w.String("session_meta");
  w.Key("payload");
  w.StartObject();
  const std::pair<const char*, const std::string*> fields[] = {
      {"id", &m.thread_id},      {"timestamp", &m.created_at},  {"thread_id", &m.thread_id},
      {"cwd", &m.cwd},           {"created_at", &m.created_at}, {"model", &m.model},
      {"provider", &m.provider}, {"sandbox", &m.sandbox}};
  for (const auto& [key, value] : fields) w.Key(key), w.String(*value);
  if (!m.forked_from_id.empty()) w.Key("forked_from_id"), w.String(m.forked_from_id);
  w.EndObject();
  w.EndObject();
  return std::string(w.view());
}

int64_t GetInt(const rapidjson::Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  return it != obj.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : 0;
}

// Every rollout file under home/sessions, newest first (names sort by timestamp).
std::vector<fs::path> AllRollouts(const std::string& home) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::path dir = SessionsDir(home);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".jsonl" && p.filename().string().rfind("rollout-", 0) == 0) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() > b.filename().string();
  });
  return files;
}

}  // namespace

std::string SessionsDir(const std::string& home) {
  return (fs::path(home) / "sessions").string();
}

RolloutWriter::~RolloutWriter() = default;

Result<std::unique_ptr<RolloutWriter>> RolloutWriter::Create(const std::string& home,
                                                             const SessionMeta& meta) {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char day[16], stamp[32];
  std::strftime(day, sizeof day, "%Y/%m/%d", &local);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H-%M-%S", &local);
  // The home is the user's; beneath it nothing is followed: a command that can write there
  // (a home under /tmp) cannot steer the session file anywhere with a symlink.
  fs::path dir = fs::path(home) / "sessions" / day;
  std::error_code ec;
  fs::create_directories(home, ec);
  Fd home_fd;
  int err = ec ? ec.value() : 0;
  if (err == 0) {
    home_fd.reset(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!home_fd) err = errno;
  }
  Fd day_fd;
  if (err == 0) {
    err = MakeDirsBeneath(home_fd.get(), fmt::format("sessions/{}", day), kBeneathNoSymlinks,
                          &day_fd);
  }
  if (err != 0) {
    return MakeError(
        fmt::format("cannot create session directory '{}': {}", dir.string(), std::strerror(err)));
  }
  const std::string name = fmt::format("rollout-{}-{}.jsonl", stamp, meta.thread_id);
  std::string path = (dir / name).string();
  Fd fd;
  err = OpenBeneath(day_fd.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW, 0600,
                    kBeneathNoSymlinks, &fd);
  if (err != 0) {
    return MakeError(fmt::format("cannot create session file '{}': {}", path, std::strerror(err)));
  }
  std::unique_ptr<RolloutWriter> w(new RolloutWriter(std::move(fd), path));
  w->WriteLine(MetaLine(meta));
  return w;
}

Result<std::unique_ptr<RolloutWriter>> RolloutWriter::Append(const std::string& path) {
  // The file LoadRollout read, in the directory it was found in: a symlink swapped in since is
  // not followed, and a FIFO fails the open (no reader) instead of blocking it.
  const fs::path p(path);
  Fd dir(::open(p.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd fd;
  int err =
      dir ? OpenBeneath(dir.get(), p.filename().string(),
                        O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK, 0, kBeneathNoSymlinks, &fd)
          : errno;
  if (err != 0) {
    return MakeError(fmt::format("cannot open session file '{}': {}", path, std::strerror(err)));
  }
  return std::unique_ptr<RolloutWriter>(new RolloutWriter(std::move(fd), path));
}

void RolloutWriter::OnError(std::function<void(const std::string&)> handler) {
  on_error_ = std::move(handler);
  if (failed() && on_error_) on_error_(error_);
}

void RolloutWriter::WriteLine(std::string line) {
  if (failed()) return;
  line.push_back('\n');
  Status written = WriteAll(fd_.get(), line);
  if (written.ok()) return;
  error_ = fmt::format("cannot write session file '{}': {}; this run cannot be resumed", path_,
                       written.message());
  if (on_error_) on_error_(error_);
}

void RolloutWriter::AddItem(const std::string& item_json) {
  // The item is embedded checked (base/json.h): a line that is not JSON would make the whole
  // session unloadable.
  JsonWriter w;
  w.StartObject();
  w.Key("type"), w.String("response_item");
  w.Key("payload"), w.Raw(item_json);
  w.EndObject();
  WriteLine(std::string(w.view()));
}

void RolloutWriter::AddUsage(const Usage& u) {
  JsonWriter w;
  w.StartObject();
  w.Key("type"), w.String("usage");
  w.Key("payload"), WriteUsage(w, u);
  w.EndObject();
  WriteLine(std::string(w.view()));
}

void RolloutWriter::AddCompaction(const std::vector<std::string>& history, int64_t tokens_before,
                                  int64_t tokens_after) {
  JsonWriter w;
  size_t reserve = 256;
  for (const std::string& item : history) reserve += item.size() + 1;
  w.Reserve(reserve);
  w.StartObject();
  w.Key("type"), w.String("compacted");
  w.Key("payload");
  w.StartObject();
  w.Key("tokens_before"), w.Int64(tokens_before);
  w.Key("tokens_after"), w.Int64(tokens_after);
  w.Key("replacement_history");
  w.StartArray();
  for (const std::string& item : history) w.Raw(item);
  w.EndArray();
  w.EndObject();
  w.EndObject();
  WriteLine(std::string(w.view()));
}

Result<LoadedRollout> LoadRollout(const std::string& path, const std::string& sessions_dir) {
  // Session files sit where commands under danger-full-access can write: a regular file only,
  // and beneath the sessions directory when the file was found there.
  Result<std::string> text = MakeError("");
  if (sessions_dir.empty()) {
    text = ReadRegularFile(path);
  } else {
    Fd dir(::open(sessions_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    text = dir ? ReadRegularFileBeneath(dir.get(),
                                        fs::path(path).lexically_relative(sessions_dir).string())
               : MakeError(std::strerror(errno));
  }
  if (!text.ok()) {
    return MakeError(fmt::format("cannot read session file '{}': {}", path, text.message()));
  }
  LoadedRollout out;
  out.path = path;
  int number = 0;
  for (size_t pos = 0; pos < text->size();) {
    size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    const std::string_view line = std::string_view(*text).substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (line.empty()) continue;
    Result<rapidjson::Document> parsed = ParseJsonObject(line);
    if (!parsed.ok()) {
      // A torn last line (crash mid-write) is dropped; anything else is corruption.
      if (pos >= text->size()) break;
      return MakeError(fmt::format("{}:{}: not a JSON object", path, number));
    }
    const rapidjson::Document& d = *parsed;
    std::string type = StringMember(d, "type");
    auto payload = d.FindMember("payload");
    if (payload == d.MemberEnd()) continue;
    const rapidjson::Value& p = payload->value;
    if (type == "session_meta" && p.IsObject()) {
      out.meta = SessionMeta{StringMember(p, "thread_id"),     StringMember(p, "cwd"),
                             StringMember(p, "created_at"),    StringMember(p, "model"),
                             StringMember(p, "provider"),      StringMember(p, "sandbox"),
                             StringMember(p, "forked_from_id")};
    } else if (type == "response_item") {
      out.items.push_back(ToJson(p));
    } else if (type == "compacted" && p.IsObject()) {
      const rapidjson::Value* replacement = FindJsonMember(p, "replacement_history");
      if (replacement == nullptr || !replacement->IsArray()) {
        return MakeError(
            fmt::format("{}:{}: compacted line without a replacement_history array", path, number));
      }
      out.items.clear();
      for (const auto& item : replacement->GetArray()) out.items.push_back(ToJson(item));
      ++out.compactions;
      out.last_usage = Usage{};
      out.last_usage_items = 0;
    } else if (type == "usage" && p.IsObject()) {
      out.last_usage = Usage{GetInt(p, "input_tokens"), GetInt(p, "cached_input_tokens"),
                             GetInt(p, "cache_write_input_tokens"), GetInt(p, "output_tokens"),
                             GetInt(p, "reasoning_output_tokens")};
      out.last_usage_items = out.items.size();
      out.usage += out.last_usage;
    }
  }
  if (out.meta.thread_id.empty()) {
    return MakeError(fmt::format("{}: not a session file (no session_meta line)", path));
  }
  return out;
}

Result<std::string> FindRolloutById(const std::string& home, const std::string& thread_id) {
  for (const fs::path& p : AllRollouts(home)) {
    std::string name = p.filename().string();
    if (name.size() > thread_id.size() + 6 &&
        name.compare(name.size() - 6 - thread_id.size(), thread_id.size(), thread_id) == 0) {
      return p.string();
    }
  }
  return MakeError(fmt::format("no session with id '{}' under {}/sessions", thread_id, home));
}

Result<std::string> FindLatestRollout(const std::string& home, const std::string& cwd) {
  const std::string sessions = SessionsDir(home);
  Fd dir(::open(sessions.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const fs::path& p : dir ? AllRollouts(home) : std::vector<fs::path>{}) {
    Result<std::string> first = ReadRegularFirstLineBeneath(
        dir.get(), p.lexically_relative(sessions).string(), kMaxMetaLineBytes);
    if (!first.ok()) continue;
    Result<rapidjson::Document> d = ParseJsonObject(*first);
    if (!d.ok()) continue;
    const rapidjson::Document& doc = *d;  // const iterators: no ambiguous != under clang
    auto payload = doc.FindMember("payload");
    if (payload != doc.MemberEnd() && payload->value.IsObject() &&
        (cwd.empty() || StringMember(payload->value, "cwd") == cwd)) {
      return p.string();
    }
  }
  return MakeError(fmt::format("no earlier session to resume for {} under {}/sessions", cwd, home));
}

}  // namespace ae
