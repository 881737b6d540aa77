// WriteWatch: what a confined command tried to change on the file system, as agentexec saw it
// from the kernel rather than from the command's output.
//
// The command carries a second seccomp filter (seccomp.h, "write watch") that notifies
// agentexec of every write-intent call: open with a write flag, mkdir, unlink, rename, ...
// A thread of agentexec receives each notification, reads the path from the command's memory
// (process_vm_readv; the directory from /proc/PID/cwd or /proc/PID/fd/N), lets the call
// continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE; accepted only while the call is still pending, so
// the pid was not reused meanwhile) and only then checks the path against the policy. Landlock and
// the mounts decide every call as before: the watch only records, and a command that rewrote the
// path under it can only make its own record wrong.
//
// What is recorded: attempts the sandbox refuses (outside the writable roots, under a
// read-only carve-out, anything in read-only mode), resolved as a command's write would be.
// Writes the sandbox allows (the roots, /dev/null and the other writable devices, the private
// /dev/shm) and paths under /proc (magic links, resolved in agentexec's own context here) are
// not. That record is the only file-system evidence on-failure escalates on (denial.h).
//
// Without the watch (a kernel before 5.5, a thread that could not start, a command whose
// memory agentexec may not read) nothing is recorded, so nothing escalates: closed, not open.
//
// Each notified call waits for that round trip, so only a spawn that asks for the record
// (SpawnSpec::watch_writes: the orchestrator under on-failure) carries the watch. The wait is
// kept short: the path is read into reused buffers, a plain name in the directory the kernel
// names (/proc/PID/cwd) costs at most one lstat to resolve, and on Linux 6.6 and later the
// kernel switches directly between the command and this thread (SYNC_WAKE_UP).
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "sandbox/direct_attempt.h"
#include "sandbox/seccomp.h"

namespace ae::sandbox {

struct PreparedSandbox;

struct WriteEvidence {
  bool watched = false;              // the watch saw the command from its first instruction
  std::string unavailable;           // why not, when a sandbox was in force without it
  std::vector<std::string> refused;  // resolved paths of refused attempts, first kMaxRecorded
  uint64_t refused_total = 0;        // refused paths, recorded or not (beyond the first
                                     // kMaxRecorded, a path may be counted twice)
  uint64_t notifications = 0;        // every call seen (writes and network)
  // With a network allow-list: what the command tried past the proxy (direct_attempt.h),
  // each distinct one once, the first kMaxDirect, in the order tried.
  std::vector<DirectAttempt> direct;
  uint64_t direct_total = 0;  // every such attempt, repeats included
};

class WriteWatch {
 public:
  static constexpr size_t kMaxRecorded = 16;
  static constexpr size_t kMaxDirect = 64;

  // Inactive (child_fd() -1) when `sandbox` is null or enforces nothing, or when neither
  // `writes` is asked for nor the sandbox has a network allow-list (whose attempts past the
  // proxy are always watched: they are the record of its refusals).
  WriteWatch(const PreparedSandbox* sandbox, bool writes);
  ~WriteWatch();
  WriteWatch(const WriteWatch&) = delete;
  WriteWatch& operator=(const WriteWatch&) = delete;

  // For ApplyInChild in the forked child; -1 when there is nothing to watch.
  int child_fd() const { return child_.get(); }
  // The filter the child installs (seccomp.h WatchSet), valid while child_fd() is.
  const sock_fprog* program() const { return program_; }
  // In the parent right after fork: drops the parent's copy of the child's end, so a child
  // that dies before sending is seen as gone.
  void Started() { child_.reset(); }
  // Once the command's whole tree has ended: stops the thread and returns what it saw.
  WriteEvidence Finish();

 private:
  void Serve();
  bool ReceiveListener(Fd* listener);
  void HandleOne(int listener);
  // A network call: read while the caller waits, answered, then recorded.
  void HandleNetwork(int listener, const void* request, seccomp::NetworkCall call);
  void Answer(int listener, uint64_t id, bool* valid);
  bool Refuses(const std::string& target, const seccomp::WatchedCall& call) const;
  void Record(const std::string& path, const seccomp::WatchedCall& call, bool follows,
              bool in_base);

  const PreparedSandbox* sandbox_ = nullptr;
  const sock_fprog* program_ = nullptr;
  bool writes_ = false;
  uint16_t proxy_port_ = 0;             // non-zero: the network's calls are watched too
  std::vector<std::string> carveouts_;  // the read-only carve-outs in force for this command
  Fd parent_, child_;                   // the socket the child sends the listener over
  Fd stop_;                             // eventfd: Finish asks the thread to stop
  std::thread thread_;
  bool finished_ = false;
  WriteEvidence evidence_;                // the thread's until joined
  std::vector<char> request_, response_;  // sized as the kernel says (SECCOMP_GET_NOTIF_SIZES)
  std::string raw_, paths_[2];            // the thread's, reused from one notification to the next
  std::string table_;                     // the thread's: /proc/PID/net text
};

}  // namespace ae::sandbox
