#include "outputs/last_message.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/fd.h"
#include "base/write_all.h"

namespace ae {

void LastMessageSink::Emit(const Event& event) {
  const auto* done = std::get_if<ItemCompleted>(&event);
  if (done == nullptr) return;
  if (const auto* m = std::get_if<AgentMessageItem>(&done->item.details)) {
    std::lock_guard lock(mu_);
    text_ = m->text;
    has_ = true;
  }
}

std::string LastMessageSink::text() const {
  std::lock_guard lock(mu_);
  return text_;
}

bool LastMessageSink::has_message() const {
  std::lock_guard lock(mu_);
  return has_;
}

namespace {

std::string ParentOf(const std::string& path) {
  std::filesystem::path p(path);
  std::filesystem::path parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

Status PrepareOutputFile(const std::string& path) {
  if (path.empty()) return MakeError("--output-last-message: empty path");
  std::string dir = ParentOf(path);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return MakeError(fmt::format("cannot create directory '{}' for --output-last-message: {}", dir,
                                 ec.message()));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return MakeError(fmt::format("--output-last-message '{}' is a directory", path));
  }
  // Probe with a real file: access(2) says yes to root even on a read-only mount.
  std::string probe = fmt::format("{}/.agentexec-probe-{}", dir, ::getpid());
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    return MakeError(
        fmt::format("cannot write --output-last-message '{}': {}", path, std::strerror(errno)));
  }
  ::unlink(probe.c_str());
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) {
    return MakeError(
        fmt::format("cannot write --output-last-message '{}': {}", path, std::strerror(errno)));
  }
  return {};
}

Status WriteOutputFile(const std::string& path, const std::string& text) {
  std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) {
    return MakeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  Status written = WriteAll(fd.get(), text);
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return MakeError(fmt::format("cannot write '{}': {}", path, written.message()));
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return MakeError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
  return {};
}

}  // namespace ae
