#include "sandbox/placeholders.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/fd.h"

namespace ae::sandbox {
Placeholders::Placeholders(Placeholders&& other) noexcept : made_(std::exchange(other.made_, {})) {}

Placeholders& Placeholders::operator=(Placeholders&& other) noexcept {
  if (this != &other) {
    RemoveAll();
    made_ = std::exchange(other.made_, {});
  }
  return *this;
}

Placeholders::~Placeholders() {
  RemoveAll();
}

void Placeholders::Make(Policy* policy, std::vector<std::string>* warnings) {
  for (const Policy::Placeholder& wanted : policy->placeholders) {
    // The directories above it first, each made only where missing (and then removed at the
    // end like the placeholder); never through a symlink.
    bool ok = true;
    for (size_t slash = wanted.path.find('/', 1); slash != std::string::npos && ok;
         slash = wanted.path.find('/', slash + 1)) {
      const std::string dir = wanted.path.substr(0, slash);
      struct stat st {};
      if (::lstat(dir.c_str(), &st) == 0) {
        ok = S_ISDIR(st.st_mode);
        continue;
      }
      if (::mkdir(dir.c_str(), 0755) != 0 || ::lstat(dir.c_str(), &st) != 0) {
        ok = false;
        break;
      }
      made_.push_back({dir, st.st_dev, st.st_ino, true});
    }
    const bool file = !wanted.directory;
    int made = -1;
    if (ok) {
      if (file) {
        Fd fd(::open(wanted.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                     0644));
        made = fd.valid() ? 0 : -1;
      } else {
        made = ::mkdir(wanted.path.c_str(), wanted.home ? 0700 : 0755);
      }
    }
    struct stat st {};
    if (made != 0 || ::lstat(wanted.path.c_str(), &st) != 0) {
      if (errno == EEXIST) continue;  // made since the policy was built: a carve-out by path
      warnings->push_back(fmt::format(
          "sandbox: cannot make {} so that commands cannot create it: {}; it stays read-only "
          "once it exists",
          wanted.path, std::strerror(errno)));
      continue;
    }
    policy->carveout_ids.emplace_back(st.st_dev, st.st_ino);
    if (!wanted.home) made_.push_back({wanted.path, st.st_dev, st.st_ino, !file});
  }
}

void Placeholders::RemoveAll() {
  // Deepest first: a placeholder before the directories made above it.
  for (size_t i = made_.size(); i-- > 0;) {
    const Made& made = made_[i];
    struct stat st {};
    if (::lstat(made.path.c_str(), &st) != 0 || st.st_dev != made.dev || st.st_ino != made.ino) {
      continue;
    }
    if (made.directory) {
      ::rmdir(made.path.c_str());  // fails, and keeps it, when something is in it
    } else if (S_ISREG(st.st_mode) && st.st_size == 0) {
      ::unlink(made.path.c_str());
    }
  }
  made_.clear();
}

}  // namespace ae::sandbox
