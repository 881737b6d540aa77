// The run's own /tmp: under workspace-write each run (each batch task too) gets a directory of
// its own, made when the run starts, that its commands see at /tmp and in $TMPDIR, and that is
// removed when the run ends; nothing a command leaves there reaches the next run, and a
// command of this run cannot reach what another run, task or user left in the host's /tmp.
// sandbox_workspace_write.shared_tmp gives commands the host's /tmp instead (as codex does).
#pragma once

#include <string>

#include "base/result.h"

namespace ae::sandbox {

class PrivateTmp {
 public:
  // A new directory under `parent` (the host's /tmp; mode 0700, its path canonical).
  static Result<PrivateTmp> Create(const std::string& parent = "/tmp");

  PrivateTmp() = default;
  PrivateTmp(PrivateTmp&& other) noexcept;
  PrivateTmp& operator=(PrivateTmp&& other) noexcept;
  PrivateTmp(const PrivateTmp&) = delete;
  PrivateTmp& operator=(const PrivateTmp&) = delete;
  // Removes the directory and everything in it (base/remove_tree.h); call it once the run's
  // commands are gone. What cannot be removed is left, with its reason in Remove's answer.
  ~PrivateTmp();

  const std::string& path() const { return path_; }
  // Removes it now; "" when it is gone, else what is left and why.
  std::string Remove();
  // Leaves it to another process (a forked child's copy): this object removes nothing.
  void Release() { path_.clear(); }

 private:
  explicit PrivateTmp(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace ae::sandbox
