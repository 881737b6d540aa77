#include "sandbox/preflight.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/fd.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/prepared.h"

namespace ae::sandbox {
namespace {

constexpr const char* kDangerAdvice =
    "Run with -s danger-full-access where the container is the boundary";

bool FakeEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

struct ProbeFailure {
  std::string step;
  int err = 0;
};

// Applies `prepared` in a forked child that then exits: the exact steps a command gets.
Result<std::optional<ProbeFailure>> ProbeInChild(const PreparedSandbox& prepared) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return MakeError(fmt::format("sandbox: preflight pipe: {}", std::strerror(errno)));
  }
  Fd read_end(fds[0]), write_end(fds[1]);
  pid_t pid = ::fork();
  if (pid < 0) return MakeError(fmt::format("sandbox: preflight fork: {}", std::strerror(errno)));
  if (pid == 0) {
    const char* step = "";
    int err = 0;
    if (ApplyInChild(prepared, &step, &err)) ::_exit(0);
    // errno as 4 bytes, then the step name.
    unsigned char buf[4] = {static_cast<unsigned char>(err), static_cast<unsigned char>(err >> 8),
                            static_cast<unsigned char>(err >> 16),
                            static_cast<unsigned char>(err >> 24)};
    (void)!::write(write_end.get(), buf, sizeof buf);
    (void)!::write(write_end.get(), step, std::strlen(step));
    ::_exit(1);
  }
  write_end.reset();
  std::string data;
  char chunk[256];
  for (;;) {
    ssize_t n = ::read(read_end.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(chunk, static_cast<size_t>(n));
  }
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  // The pipe decides (someone else's waitpid(-1) may have reaped the child); the status only
  // explains a child that died without saying why.
  ProbeFailure failure;
  if (data.size() >= 4) {
    const auto* b = reinterpret_cast<const unsigned char*>(data.data());
    failure.err = b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24);
    failure.step = data.substr(4);
    return std::optional<ProbeFailure>(std::move(failure));
  }
  if (waited == pid && WIFSIGNALED(status)) {
    failure.step = fmt::format("the probe child was killed by signal {}", WTERMSIG(status));
    return std::optional<ProbeFailure>(std::move(failure));
  }
  if (waited == pid && WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    failure.step = fmt::format("the probe child exited with {}", WEXITSTATUS(status));
    return std::optional<ProbeFailure>(std::move(failure));
  }
  return std::optional<ProbeFailure>();
}

std::string Cause(const ProbeFailure& failure) {
  if (failure.err == 0) return failure.step;
  return fmt::format("{}: {}", failure.step, std::strerror(failure.err));
}

std::string CannotEnforce(Mode mode, const ProbeFailure& failure) {
  const std::string cause = Cause(failure);
  if (failure.step == "prctl(PR_SET_SECCOMP)") {
    return fmt::format(
        "sandbox: cannot enforce {}: seccomp filters are refused here ({}). {}, or allow "
        "seccomp filters (CONFIG_SECCOMP_FILTER).",
        ModeName(mode), cause, kDangerAdvice);
  }
  if (failure.step == "landlock_restrict_self") {
    return fmt::format("sandbox: cannot enforce {}: Landlock refused the ruleset ({}). {}.",
                       ModeName(mode), cause, kDangerAdvice);
  }
  return fmt::format("sandbox: cannot enforce {}: {}. {}.", ModeName(mode), cause, kDangerAdvice);
}

// Whether the prepared sandbox with `options` applies here; the reason when it does not.
bool ProbeOptions(const Policy& policy, const PrepareOptions& options, ProbeFailure* why) {
  Result<PreparedPtr> prepared = Prepare(policy, options);
  if (!prepared.ok()) {
    *why = {prepared.message(), 0};
    return false;
  }
  Result<std::optional<ProbeFailure>> failure = ProbeInChild(**prepared);
  if (!failure.ok()) {
    *why = {failure.message(), 0};
    return false;
  }
  if (failure->has_value()) {
    *why = **failure;
    return false;
  }
  return true;
}

// What a command can do to files outside the roots without the read-only tree, as root or as
// another user.
std::string MetadataExposure(bool root) {
  if (root) {
    return "running as root, commands can change the mode, owner, times and extended "
           "attributes of any file outside the writable roots";
  }
  return "commands can change the mode, times and extended attributes of the files this user "
         "owns outside the writable roots";
}

// The namespaces commands can have, strongest first: mount + PID namespace, then the mount
// namespace alone, then neither.
struct Isolation {
  bool mount_namespace = false;
  bool pid_namespace = false;
};

// The full sandbox's options: Landlock, seccomp, the mount and the PID namespace.
PrepareOptions FullOptions() {
  PrepareOptions options;
  options.mount_namespace = true;
  options.pid_namespace = true;
  return options;
}

// The strongest isolation that works, with the reasons for what does not. `full_failed`: the
// full sandbox was probed already and failed for that reason.
Isolation ProbeIsolation(const Policy& policy, ProbeFailure* mount_why, ProbeFailure* pid_why,
                         const std::optional<ProbeFailure>& full_failed) {
  Isolation found;
  if (FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_USERNS")) {
    *mount_why = {"unshare", EPERM};
    *pid_why = *mount_why;
    return found;
  }
  PrepareOptions options = FullOptions();
  if (FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_PIDNS")) {
    *pid_why = {"unshare", EPERM};
  } else if (full_failed) {
    *pid_why = *full_failed;
  } else if (ProbeOptions(policy, options, pid_why)) {
    found.mount_namespace = found.pid_namespace = true;
    return found;
  }
  options.pid_namespace = false;
  found.mount_namespace = ProbeOptions(policy, options, mount_why);
  return found;
}

}  // namespace

std::string LandlockUnavailableMessage(Mode mode, int err) {
  const char* what = err == ENOSYS       ? "Landlock is not supported by this kernel"
                     : err == EOPNOTSUPP ? "Landlock is disabled on this kernel"
                                         : "Landlock is not available here";
  return fmt::format(
      "sandbox: cannot enforce {}: {} (landlock_create_ruleset: {}). {}, or enable Landlock "
      "(CONFIG_SECURITY_LANDLOCK, lsm=landlock).",
      ModeName(mode), what, std::strerror(err), kDangerAdvice);
}

Result<PreparedPtr> Prepare(const Policy& policy, const PreflightReport& report) {
  PrepareOptions options;
  options.mount_namespace = report.mount_namespace;
  options.pid_namespace = report.pid_namespace;
  options.write_watch = report.write_watch;
  return Prepare(policy, options);
}

Result<PreparedPtr> Prepare(const Policy& policy) {
  PreflightReport found;
  if (!policy.unrestricted()) {
    ProbeFailure mount_why, pid_why;
    Isolation isolation = ProbeIsolation(policy, &mount_why, &pid_why, std::nullopt);
    found.mount_namespace = isolation.mount_namespace;
    found.pid_namespace = isolation.pid_namespace;
    found.write_watch = !FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_WATCH");
  }
  return Prepare(policy, found);
}

namespace {

// Which namespaces the sandbox gets here; an error when even its core (Landlock, seccomp, the
// capability drop) cannot be enforced. *mount_why and *pid_why: why a namespace could not be
// had. Where the full sandbox applies (the common case), one probe says so: it takes every
// step of the core. Otherwise the core is probed alone, then what namespaces remain.
Result<Isolation> ProbeSandbox(const Policy& policy, ProbeFailure* mount_why,
                               ProbeFailure* pid_why) {
  std::optional<ProbeFailure> full_failed;
  if (!FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_SECCOMP") &&
      !FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_USERNS") && !FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_PIDNS")) {
    ProbeFailure why;
    if (ProbeOptions(policy, FullOptions(), &why)) {
      Isolation isolation;
      isolation.mount_namespace = isolation.pid_namespace = true;
      return isolation;
    }
    full_failed = why;
  }
  // Landlock + seccomp (+ the capability drop) must work, or nothing runs.
  PrepareOptions core;
  core.mount_namespace = false;
  Result<PreparedPtr> prepared = Prepare(policy, core);
  if (!prepared.ok()) return prepared.error();
  std::optional<ProbeFailure> failure;
  if (FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_SECCOMP")) {
    failure = ProbeFailure{"prctl(PR_SET_SECCOMP)", EINVAL};
  } else {
    Result<std::optional<ProbeFailure>> probed = ProbeInChild(**prepared);
    if (!probed.ok()) return probed.error();
    failure = *probed;
  }
  if (failure) return MakeError(CannotEnforce(policy.mode, *failure));

  // The namespaces are best effort: without them, say loudly what is not protected, to
  // every user (an unprivileged one loses the carve-outs and the tree containment as well).
  return ProbeIsolation(policy, mount_why, pid_why, full_failed);
}

// What a run without the mount namespace or the PID namespace does not protect, as a
// degradation and a warning each.
void ReportDegradations(const Policy& policy, const ProbeFailure& mount_why,
                        const ProbeFailure& pid_why, PreflightReport* report) {
  auto degrade = [&](std::string text) {
    report->degradations.push_back(text);
    report->warnings.push_back(std::move(text));
  };
  if (!report->mount_namespace) {
    const std::string cause = Cause(mount_why);
    if (policy.mode == Mode::kWorkspaceWrite) {
      degrade(fmt::format(
          "sandbox: .git, .agentexec, .codex and protected_paths are writable in this run: "
          "could not create a mount namespace ({})",
          cause));
    }
    // Landlock does not cover metadata: without the read-only tree any user keeps chmod,
    // utimes and xattrs on the files it owns outside the roots, and root on every file.
    degrade(fmt::format("sandbox: {} in this run: could not create a mount namespace ({})",
                        MetadataExposure(::geteuid() == 0), cause));
    // Hiding the host's Unix sockets takes the namespace (host_sockets.h).
    if (!policy.network_access) {
      degrade(fmt::format(
          "sandbox: host Unix sockets (e.g. /var/run/docker.sock) are reachable in this run: "
          "could not create a mount namespace ({})",
          cause));
    }
    // The private /dev/shm needs the namespace; the host's stays read-only rather than shared.
    if (!PrivateDevShmPath(policy).empty()) {
      degrade(fmt::format(
          "sandbox: /dev/shm is not writable in this run, so POSIX shared memory and semaphores "
          "(e.g. Python's multiprocessing locks) fail: could not create a mount namespace ({})",
          cause));
    }
  }
  if (!report->pid_namespace) {
    degrade(fmt::format(
        "sandbox: processes a command leaves running (setsid, daemons) can outlive it in this "
        "run: could not create a PID namespace ({})",
        Cause(report->mount_namespace ? pid_why : mount_why)));
  }
}

Status RefuseDegradedIfFullRequired(const Policy& policy, const PreflightReport& report) {
  if (!policy.require_full_isolation || report.degradations.empty()) return {};
  std::string reasons;
  for (const std::string& d : report.degradations) {
    reasons += reasons.empty() ? "" : "; ";
    reasons += d.substr(std::string_view("sandbox: ").size());
  }
  return MakeError(fmt::format(
      "sandbox: cannot enforce {} with full isolation (require_full_isolation = true): {}",
      ModeName(policy.mode), reasons));
}

}  // namespace

Result<PreflightReport> Preflight(const Policy& policy) {
  PreflightReport report;
  report.warnings = policy.warnings;  // skipped roots: shown with the kernel's findings
  if (policy.unrestricted()) {
    report.description = "no sandbox";
    return report;
  }
  int abi = FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK") ? (errno = ENOSYS, -1) : landlock::Abi();
  if (abi < 1) return MakeError(LandlockUnavailableMessage(policy.mode, errno));
  report.landlock_abi = abi;

  ProbeFailure mount_why, pid_why;
  Result<Isolation> isolation = ProbeSandbox(policy, &mount_why, &pid_why);
  if (!isolation.ok()) return isolation.error();
  report.mount_namespace = isolation->mount_namespace;
  report.pid_namespace = isolation->pid_namespace;
  report.write_watch = !FakeEnv("AGENTEXEC_SANDBOX_FAKE_NO_WATCH");
  report.description = fmt::format("landlock abi {} + seccomp", abi);
  if (report.mount_namespace) report.description += " + mount namespace";
  if (report.pid_namespace) report.description += " + pid namespace";
  ReportDegradations(policy, mount_why, pid_why, &report);
  if (Status full = RefuseDegradedIfFullRequired(policy, report); !full.ok()) return full.error();
  return report;
}

}  // namespace ae::sandbox
