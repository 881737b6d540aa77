// Containment through the spawner agentexec's own commands use (RunProcess): a command's whole
// process tree ends at command end, on timeout and on cancellation (turn end, signals); its
// only descriptors are 0-2 with stdin a /dev/null opened inside the confinement. Each attempt
// also runs unconfined, where it must get out (so the test can see an escape), and without the
// PID namespace, where it is a limit the preflight warns about.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/cancel.h"
#include "sandbox/landlock.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"
#include "sandbox/spawn.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::GoneWithin;
using testing::PreflightFaking;
using testing::ProcessesWith;
using testing::ScratchDir;
using testing::Sh;

enum class End { kCommandExits, kTimeout, kCancel };

class Containment : public testing::WorkspaceWriteTest {
 protected:
  // The sandbox as the preflight finds it; `no_pid_namespace` fakes a host without one.
  PreparedPtr Sandbox(bool no_pid_namespace, PreflightReport* report) {
    Result<PreflightReport> found =
        no_pid_namespace ? PreflightFaking("AGENTEXEC_SANDBOX_FAKE_NO_PIDNS", policy_)
                         : Preflight(policy_);
    EXPECT_TRUE(found.ok()) << found.message();
    if (!found.ok()) return PreparedPtr();
    *report = *found;
    Result<PreparedPtr> prepared = Prepare(policy_, *found);
    EXPECT_TRUE(prepared.ok()) << prepared.message();
    return prepared.ok() ? std::move(prepared.value()) : PreparedPtr();
  }

  RunResult Run(std::vector<std::string> argv, const PreparedSandbox* sandbox, int64_t timeout_ms,
                CancelToken& cancel) {
    SpawnSpec spec;
    spec.argv = std::move(argv);
    spec.cwd = base_ + "/ws";
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.sandbox = sandbox;
    RunLimits limits;
    limits.timeout_ms = timeout_ms;
    Result<RunResult> ran = RunProcess(spec, limits, cancel);
    EXPECT_TRUE(ran.ok()) << ran.message();
    return ran.ok() ? *ran : RunResult{};
  }

  // Starts a `mode` daemon under `sandbox`, ends the command by `end`; true when the daemon
  // outlived it (it is then killed).
  bool DaemonSurvives(const PreparedSandbox* sandbox, const std::string& mode, End end) {
    static int count = 0;
    const std::string marker = fmt::format("4{:06d}.{:04d}", ::getpid() % 1000000, ++count);
    std::vector<std::string> argv = {SANDBOX_PROBE, "daemon", mode, marker};
    if (end != End::kCommandExits) argv.push_back("wait");
    CancelToken cancel;
    std::thread canceller;
    if (end == End::kCancel) {
      canceller = std::thread([&] {
        for (int waited = 0; waited < 10000 && ProcessesWith(marker).empty(); waited += 20) {
          ::usleep(20 * 1000);
        }
        cancel.Cancel(CancelReason::kSigterm);
      });
    }
    RunResult ran = Run(argv, sandbox, end == End::kTimeout ? 1500 : 20000, cancel);
    if (canceller.joinable()) canceller.join();
    // (Cancellation may come before the probe's line: it waits only for the daemon.)
    if (end != End::kCancel) {
      EXPECT_EQ(ran.output.find("started"), 0u) << mode << ": " << ran.output;
    }
    if (end == End::kTimeout) {
      EXPECT_TRUE(ran.timed_out);
    }
    if (end == End::kCancel) {
      EXPECT_TRUE(ran.cancelled);
    }
    return !GoneWithin(marker, 1500);
  }
};

constexpr End kEnds[] = {End::kCommandExits, End::kTimeout, End::kCancel};
constexpr const char* kModes[] = {"setsid", "setpgid", "doublefork", "plain"};

TEST_F(Containment, TheWholeTreeEndsWithTheCommand) {
  PreflightReport report;
  PreparedPtr sandbox = Sandbox(false, &report);
  ASSERT_TRUE(sandbox);
  if (!report.pid_namespace) GTEST_SKIP() << "no PID namespace here: " << report.warnings.back();
  int attempts = 0, escapes = 0;
  for (End end : kEnds) {
    for (const char* mode : kModes) {
      ++attempts;
      if (DaemonSurvives(sandbox.get(), mode, end)) {
        ++escapes;
        ADD_FAILURE() << "ESCAPE: a " << mode << " daemon survived end " << static_cast<int>(end);
      }
    }
  }
  std::printf("[ escapes  ] spawner, pid namespace: %d attempts, %d escapes\n", attempts, escapes);
}

TEST_F(Containment, UnconfinedDaemonsSurviveSoTheTestCanSeeIt) {
  int attempts = 0, escapes = 0;
  for (End end : kEnds) {
    for (const char* mode : {"setsid", "doublefork"}) {  // the group kill reaches the others
      ++attempts;
      if (DaemonSurvives(nullptr, mode, end)) {
        ++escapes;
      } else {
        ADD_FAILURE() << "not seen: " << mode << " " << static_cast<int>(end);
      }
    }
  }
  EXPECT_EQ(escapes, attempts);
}

// Without the PID namespace a daemon that leaves the group is a documented limit: the
// preflight says so to every user, and require_full_isolation refuses the run.
TEST_F(Containment, WithoutAPidNamespaceTheLimitIsAnnounced) {
  PreflightReport report;
  PreparedPtr sandbox = Sandbox(true, &report);
  ASSERT_TRUE(sandbox);
  EXPECT_FALSE(report.pid_namespace);
  ASSERT_FALSE(report.degradations.empty());
  EXPECT_EQ(report.degradations.back(),
            "sandbox: processes a command leaves running (setsid, daemons) can outlive it in "
            "this run: could not create a PID namespace (unshare: Operation not permitted)");
  EXPECT_EQ(DescribePrepared(*sandbox).find("pid namespace"), std::string::npos);
  int limits = 0;
  for (End end : kEnds) {
    if (DaemonSurvives(sandbox.get(), "setsid", end)) ++limits;
    EXPECT_FALSE(DaemonSurvives(sandbox.get(), "plain", end));  // the group still dies
  }
  std::printf("[ limits   ] spawner without a pid namespace: %d of 3 setsid daemons survive\n",
              limits);
  policy_.require_full_isolation = true;
  Result<PreflightReport> refused = PreflightFaking("AGENTEXEC_SANDBOX_FAKE_NO_PIDNS", policy_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(),
            "sandbox: cannot enforce workspace-write with full isolation (require_full_isolation "
            "= true): processes a command leaves running (setsid, daemons) can outlive it in this "
            "run: could not create a PID namespace (unshare: Operation not permitted)");
}

// The command holds 0, 1 and 2 only, and its stdin cannot reach the host's /dev/null.
TEST_F(Containment, OnlyStdioAndAFreshDevNull) {
  PreflightReport report;
  PreparedPtr sandbox = Sandbox(false, &report);
  ASSERT_TRUE(sandbox);
  // A descriptor of ours without close-on-exec, as a library might leave one.
  int leaked = ::open((base_ + "/ws").c_str(), O_RDONLY);
  ASSERT_GE(leaked, 3);
  CancelToken cancel;
  RunResult fds = Run({SANDBOX_PROBE, "only-stdio"}, sandbox.get(), 10000, cancel);
  EXPECT_EQ(fds.exit_code, 1) << fds.output;
  EXPECT_NE(fds.output.find("denied: descriptors beyond 0-2"), std::string::npos) << fds.output;
  ::close(leaked);
  if (!report.mount_namespace) GTEST_SKIP() << "no mount namespace: stdin is the host's /dev/null";
  RunResult chmod = Run({SANDBOX_PROBE, "fd-fchmod", "0"}, sandbox.get(), 10000, cancel);
  EXPECT_EQ(chmod.output, "denied: fchmod: Read-only file system (errno 30)\n");
  RunResult unconfined = Run({SANDBOX_PROBE, "fd-fchmod", "0"}, nullptr, 10000, cancel);
  if (::geteuid() == 0) {
    EXPECT_EQ(unconfined.output, "ok\n");  // the same mode again: harmless
  }
}

}  // namespace
}  // namespace ae::sandbox
