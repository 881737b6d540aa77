#include "outputs/last_message.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/beneath.h"

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

Error CannotWrite(const std::string& option, const std::string& path, int err) {
  return MakeError(fmt::format("cannot write {} '{}': {}", option, path, std::strerror(err)));
}

}  // namespace

Result<OutputFile> PrepareOutputFile(const std::string& path, const std::string& option) {
  if (path.empty()) return MakeError(option + ": empty path");
  OutputFile out;
  out.option = option;
  out.path = path;
  out.dir = ParentOf(path);
  out.name = std::filesystem::path(path).filename().string();
  std::error_code ec;
  std::filesystem::create_directories(out.dir, ec);
  if (ec) {
    return MakeError(
        fmt::format("cannot create directory '{}' for {}: {}", out.dir, option, ec.message()));
  }
  if (out.name.empty() || out.name == "." || out.name == "..") {
    return MakeError(fmt::format("{} '{}' is a directory", option, path));
  }
  // No command has run yet: the directory the path names now is the user's.
  // O_PATH: a directory the user may write but not list (mode 0300) still works.
  out.dir_fd.reset(::open(out.dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!out.dir_fd) return CannotWrite(option, path, errno);
  struct stat st;
  if (::fstatat(out.dir_fd.get(), out.name.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode)) {
    return MakeError(fmt::format("{} '{}' is a directory", option, path));
  }
  // Probe with a real file: access(2) says yes to root even on a read-only mount.
  std::string probe = fmt::format(".agentexec-probe-{}", ::getpid());
  Fd fd(::openat(out.dir_fd.get(), probe.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return CannotWrite(option, path, errno);
  ::unlinkat(out.dir_fd.get(), probe.c_str(), 0);
  if (::faccessat(out.dir_fd.get(), out.name.c_str(), F_OK, 0) == 0 &&
      ::faccessat(out.dir_fd.get(), out.name.c_str(), W_OK, 0) != 0) {
    return CannotWrite(option, path, errno);
  }
  return out;
}

Status WriteOutputFile(const OutputFile& out, const std::string& text) {
  // The path must still lead to the directory held since before the turn.
  struct stat held {
  }, now{};
  if (::fstat(out.dir_fd.get(), &held) != 0) return CannotWrite(out.option, out.path, errno);
  const bool gone = ::stat(out.dir.c_str(), &now) != 0;
  if (gone || now.st_dev != held.st_dev || now.st_ino != held.st_ino) {
    return MakeError(fmt::format("cannot write {} '{}': its directory '{}' was {} during the run",
                                 out.option, out.path, out.dir,
                                 gone && errno == ENOENT ? "removed" : "replaced"));
  }
  if (int err = ReplaceAt(out.dir_fd.get(), out.name, text, 0644, false); err != 0) {
    return CannotWrite(out.option, out.path, err);
  }
  return {};
}

}  // namespace ae
