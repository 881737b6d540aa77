#include "sandbox/private_tmp.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "base/fd.h"
#include "base/remove_tree.h"

namespace ae::sandbox {

Result<PrivateTmp> PrivateTmp::Create(const std::string& parent) {
  std::string tmpl = parent + "/agentexec-tmp-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return MakeError(fmt::format(
        "sandbox: cannot make the run's private /tmp in {}: {}; make {} writable, or set "
        "sandbox_workspace_write.shared_tmp = true to give commands the host's /tmp",
        parent, std::strerror(errno), parent));
  }
  std::error_code ec;
  std::string canonical = std::filesystem::canonical(tmpl, ec).string();
  return PrivateTmp(ec ? std::move(tmpl) : std::move(canonical));
}

PrivateTmp::PrivateTmp(PrivateTmp&& other) noexcept : path_(std::exchange(other.path_, {})) {}

PrivateTmp& PrivateTmp::operator=(PrivateTmp&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

PrivateTmp::~PrivateTmp() {
  Remove();
}

std::string PrivateTmp::Remove() {
  if (path_.empty()) return "";
  const size_t slash = path_.rfind('/');
  const std::string parent = slash == 0 ? "/" : path_.substr(0, slash);
  Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const int err = dir ? RemoveTreeAt(dir.get(), path_.substr(slash + 1)) : errno;
  std::string left;
  if (err != 0) {
    left = fmt::format("sandbox: the run's private /tmp {} could not be removed whole: {}", path_,
                       std::strerror(err));
  }
  path_.clear();
  return left;
}

}  // namespace ae::sandbox
