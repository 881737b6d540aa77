// RunProcess against real processes: exit statuses, ordering, timeouts that kill whole
// trees, bounded drains, bounded memory, cancellation.
#include "sandbox/spawn.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/support/scratch_dir.h"

namespace ae::sandbox {
namespace {

RunResult RunArgv(std::vector<std::string> argv, RunLimits limits = {}, std::string cwd = "/") {
  CancelToken cancel;
  SpawnSpec spec{std::move(argv), std::move(cwd), {"PATH=/usr/bin:/bin"}, nullptr};
  auto r = RunProcess(spec, limits, cancel);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.message());
  return r.ok() ? std::move(r).value() : RunResult{};
}

RunResult Sh(const std::string& script, RunLimits limits = {}) {
  return RunArgv({"/bin/sh", "-c", script}, limits);
}

// The default limits but for a timeout of `ms`.
RunLimits TimeoutAfter(int64_t ms) {
  RunLimits limits;
  limits.timeout_ms = ms;
  return limits;
}

// A process is gone when kill(pid, 0) fails with ESRCH, or when only its zombie is left
// (reparented to an init that has not reaped it yet).
bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (std::getline(stat, line)) {
      auto close = line.rfind(')');
      if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::vector<pid_t> Pids(const std::string& text) {
  std::vector<pid_t> pids;
  std::istringstream in(text);
  pid_t p;
  while (in >> p) pids.push_back(p);
  return pids;
}

TEST(Spawn, ExitCode) {
  RunResult r = Sh("exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.setup_error.has_value());
  EXPECT_EQ(Sh("true").exit_code, 0);
}

TEST(Spawn, StdoutAndStderrInArrivalOrder) {
  RunResult r = Sh("echo out1; echo err1 >&2; echo out2; echo err2 >&2");
  EXPECT_EQ(r.output, "out1\nerr1\nout2\nerr2\n");
  EXPECT_EQ(r.total_bytes, r.output.size());
  EXPECT_FALSE(r.truncated);
}

TEST(Spawn, KilledBySignalGives128PlusSignal) {
  RunResult r = Sh("kill -TERM $$");
  EXPECT_EQ(r.exit_code, 143);
  EXPECT_EQ(r.term_signal, SIGTERM);
}

TEST(Spawn, CommandNotFoundIs127) {
  RunResult r = RunArgv({"no-such-command-agentexec"});
  EXPECT_EQ(r.exit_code, 127);
  ASSERT_TRUE(r.setup_error.has_value());
  EXPECT_EQ(*r.setup_error, "execve: no-such-command-agentexec: No such file or directory");
  EXPECT_EQ(r.output, *r.setup_error + "\n");
}

TEST(Spawn, NotExecutableIs126) {
  char dir[] = "/tmp/ae-spawn-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  std::string file = std::string(dir) + "/script";
  std::ofstream(file) << "#!/bin/sh\necho hi\n";
  ::chmod(file.c_str(), 0644);
  RunResult r = RunArgv({file});
  EXPECT_EQ(r.exit_code, 126);
  ASSERT_TRUE(r.setup_error.has_value());
  EXPECT_EQ(*r.setup_error, "execve: Permission denied");
  ::unlink(file.c_str());
  ::rmdir(dir);
}

TEST(Spawn, MissingWorkdirIsASetupError) {
  RunResult r = RunArgv({"/bin/true"}, {}, "/nonexistent/agentexec-dir");
  EXPECT_EQ(r.exit_code, 126);
  ASSERT_TRUE(r.setup_error.has_value());
  EXPECT_EQ(*r.setup_error, "chdir: No such file or directory");
}

TEST(Spawn, StdinIsDevNullAndEnvIsExactlyTheSpec) {
  EXPECT_EQ(Sh("cat; echo done").output, "done\n");
  RunResult r = RunArgv({"/bin/sh", "-c", "env | sort"});
  EXPECT_EQ(r.output, "PATH=/usr/bin:/bin\nPWD=/\n");
}

TEST(Spawn, WorkdirIsUsed) {
  RunResult r = RunArgv({"/bin/pwd"}, {}, "/tmp");
  EXPECT_EQ(r.output, "/tmp\n");
}

TEST(Spawn, TimeoutKillsTheWholeTree) {
  RunResult r = Sh("sleep 100 & echo $!; sleep 100 & echo $!; echo $$; wait", TimeoutAfter(1000));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  std::vector<pid_t> pids = Pids(r.output);
  ASSERT_EQ(pids.size(), 3u) << r.output;
  for (pid_t p : pids) EXPECT_TRUE(ProcessGone(p)) << "survivor " << p;
}

TEST(Spawn, GrandchildHoldingThePipeDoesNotHang) {
  RunLimits limits;
  limits.timeout_ms = 0;  // no timeout: only the bounded drain can end this
  limits.drain_ms = 200;
  RunResult r = Sh("sleep 100 & echo $!", limits);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  std::vector<pid_t> pids = Pids(r.output);
  ASSERT_EQ(pids.size(), 1u) << r.output;
  EXPECT_TRUE(ProcessGone(pids[0]));
}

TEST(Spawn, OutputAfterExitIsDrained) {
  // The main process exits first; its child keeps writing briefly to the pipe.
  RunLimits limits;
  limits.drain_ms = 5000;
  RunResult r = Sh("(sleep 0.2; echo late) & echo early", limits);
  EXPECT_EQ(r.output, "early\nlate\n");
}

TEST(Spawn, HugeOutputStaysWithinTheCap) {
  RunLimits limits;
  limits.max_output_bytes = 1 << 20;
  RunResult r = Sh("head -c 67108864 /dev/zero; echo tail-end", limits);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.total_bytes, 67108864u + 9);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.output.size(), size_t{1} << 20);
  EXPECT_EQ(r.head_bytes, size_t{1} << 19);
  EXPECT_EQ(r.output.substr(r.output.size() - 9), "tail-end\n");
}

TEST(Spawn, HeadAndTailAreExact) {
  std::string all;
  for (int i = 1; i <= 20000; ++i) all += std::to_string(i) + "\n";
  RunLimits limits;
  limits.max_output_bytes = 1001;
  RunResult r = Sh("seq 1 20000", limits);
  ASSERT_TRUE(r.truncated);
  EXPECT_EQ(r.total_bytes, all.size());
  EXPECT_EQ(r.head_bytes, 500u);
  EXPECT_EQ(r.output.substr(0, 500), all.substr(0, 500));
  EXPECT_EQ(r.output.substr(500), all.substr(all.size() - 501));

  limits.max_output_bytes = all.size();  // exactly fits: nothing lost
  RunResult whole = Sh("seq 1 20000", limits);
  EXPECT_FALSE(whole.truncated);
  EXPECT_EQ(whole.output, all);
}

TEST(Spawn, BinaryBytesArePassedThroughRaw) {
  RunResult r = Sh("printf 'a\\377\\000b'");
  EXPECT_EQ(r.output, std::string("a\xff\0b", 4));
}

TEST(Spawn, CancellationKillsPromptly) {
  CancelToken cancel;
  std::string marker = "/tmp/ae-spawn-cancel-" + std::to_string(::getpid());
  ::unlink(marker.c_str());
  SpawnSpec spec{
      {"/bin/sh", "-c", "sleep 100 & echo $!; touch " + marker + "; wait"}, "/", {}, nullptr};
  RunLimits limits;
  limits.timeout_ms = 0;
  std::thread canceller;
  auto r = RunProcess(spec, limits, cancel, [&](int) {
    canceller = std::thread([&] {
      while (::access(marker.c_str(), F_OK) != 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      cancel.Cancel(CancelReason::kSigint);
    });
  });
  ::unlink(marker.c_str());
  canceller.join();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 128 + SIGKILL);
  std::vector<pid_t> pids = Pids(r->output);
  ASSERT_EQ(pids.size(), 1u) << r->output;
  EXPECT_TRUE(ProcessGone(pids[0]));
}

// The kernel would read each string only up to the NUL: the command would not be the one shown.
TEST(Spawn, ANulByteInAnyStringIsRefusedBeforeTheFork) {
  CancelToken cancel;
  test::ScratchDir dir;
  const std::string marker = dir.path() + "/ran";
  SpawnSpec cmd{{"/bin/sh", "-c", std::string("true\0; touch ", 13) + marker}, "", {}};
  auto r = RunProcess(cmd, RunLimits{}, cancel);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->exit_code, 126);
  EXPECT_EQ(r->output, "execve: argv[2] holds a NUL byte\n");
  EXPECT_FALSE(std::filesystem::exists(marker));
  SpawnSpec env{{"/bin/true"}, "", {"A=1", std::string("SECRET=x\0y", 10)}};
  EXPECT_EQ(RunProcess(env, RunLimits{}, cancel)->output, "execve: environ[1] holds a NUL byte\n");
  SpawnSpec cwd{{"/bin/true"}, std::string("/tmp\0/x", 7), {}};
  EXPECT_EQ(RunProcess(cwd, RunLimits{}, cancel)->output,
            "chdir: the working directory holds a NUL byte\n");
}

TEST(Spawn, EmptyArgvIsAnError) {
  CancelToken cancel;
  auto r = RunProcess(SpawnSpec{}, RunLimits{}, cancel);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "cannot run an empty command");
}

}  // namespace
}  // namespace ae::sandbox

namespace ae::sandbox {
namespace {

long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST(Spawn, TwoHundredMegabytesInBoundedMemory) {
  long before = PeakRssKb();
  if (before < 0) GTEST_SKIP() << "no VmHWM in /proc/self/status";
  RunLimits limits;
  limits.max_output_bytes = 1 << 20;
  RunResult r = Sh("head -c 209715200 /dev/zero", limits);
  EXPECT_EQ(r.total_bytes, 209715200u);
  EXPECT_EQ(r.output.size(), size_t{1} << 20);
  // The peak may grow by the capture and the read buffer, never by the output's size.
  EXPECT_LT(PeakRssKb() - before, 32 * 1024);
}

TEST(Spawn, CommandDiesWithItsParent) {
  std::string marker = "/tmp/ae-spawn-pdeath-" + std::to_string(::getpid());
  ::unlink(marker.c_str());
  pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {  // stands in for agentexec: runs a long command, then gets SIGKILLed
    CancelToken cancel;
    SpawnSpec spec{
        {"/bin/sh", "-c",
         "echo $$ > " + marker + ".tmp && mv " + marker + ".tmp " + marker + " && exec sleep 100"},
        "/",
        {"PATH=/usr/bin:/bin"},
        nullptr};
    RunLimits limits;
    limits.timeout_ms = 0;
    (void)RunProcess(spec, limits, cancel);
    ::_exit(0);
  }
  std::string pid_text;
  while (pid_text.empty()) {
    std::ifstream in(marker);
    std::getline(in, pid_text);
    if (pid_text.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(agent, SIGKILL);
  ::waitpid(agent, nullptr, 0);
  EXPECT_TRUE(ProcessGone(std::stoi(pid_text))) << "the command outlived its parent";
  ::unlink(marker.c_str());
}

}  // namespace
}  // namespace ae::sandbox

namespace ae::sandbox {
namespace {

TEST(Spawn, EndlessWriterStillTimesOut) {
  RunResult r = Sh("yes", TimeoutAfter(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 124);
  EXPECT_GT(r.total_bytes, r.output.size());
}

// Reads `fd` (non-blocking or not) until EOF/EIO or `want` bytes, bounded by 5 s.
std::string ReadFor(int fd, size_t want) {
  std::string out;
  char buf[4096];
  for (int i = 0; i < 500 && out.size() < want; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10) <= 0) continue;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0 && errno != EAGAIN && errno != EINTR) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Reap after the exit (Reap itself kills what is left), bounded by 5 s.
int ExitCodeOf(Process& p) {
  for (int i = 0; i < 500 && !p.HasExited(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int code = -1, sig = -1;
  p.Reap(&code, &sig);
  return code;
}

// The shapes a long-lived child takes (MCP servers, unified exec sessions): a stdin pipe and
// stderr apart, or a pseudo-terminal of its own.
TEST(Spawn, StdinPipeAndSeparateStderr) {
  SpawnSpec spec{
      {"/bin/sh", "-c", "read x; echo out:$x; echo err >&2"}, "/", {"PATH=/usr/bin:/bin"}, nullptr};
  spec.stdin_pipe = true;
  spec.separate_stderr = true;
  auto spawned = Spawn(spec);
  ASSERT_TRUE(spawned.ok()) << spawned.message();
  ASSERT_TRUE(spawned->process.has_value()) << spawned->failure.output;
  Process& p = *spawned->process;
  ASSERT_GE(p.input_fd(), 0);
  ASSERT_EQ(::write(p.input_fd(), "hi\n", 3), 3);
  Fd err = p.TakeError();
  EXPECT_EQ(ReadFor(p.output_fd(), 7), "out:hi\n");
  EXPECT_EQ(ReadFor(err.get(), 4), "err\n");
  EXPECT_EQ(ExitCodeOf(p), 0);
}

TEST(Spawn, TtyIsAFreshTerminalOfTheGivenSize) {
  SpawnSpec spec{{"/bin/sh", "-c", "test -t 0 && test -t 1 && test -t 2 && stty size"},
                 "/",
                 {"PATH=/usr/bin:/bin"},
                 nullptr};
  spec.tty = true;
  spec.tty_rows = 33;
  spec.tty_cols = 101;
  auto spawned = Spawn(spec);
  ASSERT_TRUE(spawned.ok()) << spawned.message();
  ASSERT_TRUE(spawned->process.has_value()) << spawned->failure.output;
  EXPECT_EQ(ReadFor(spawned->process->output_fd(), 8), "33 101\r\n");
  EXPECT_EQ(ExitCodeOf(*spawned->process), 0);
}

TEST(Spawn, AFailureBeforeExecNamesItsStep) {
  auto spawned = Spawn(SpawnSpec{{"/bin/true"}, "/no/such/dir", {"PATH=/usr/bin:/bin"}, nullptr});
  ASSERT_TRUE(spawned.ok()) << spawned.message();
  EXPECT_FALSE(spawned->process.has_value());
  EXPECT_EQ(spawned->failed_step, "chdir");
  EXPECT_EQ(spawned->failed_errno, ENOENT);
  EXPECT_EQ(*spawned->failure.setup_error, "chdir: No such file or directory");
}

// The input goes in whole and then EOF; stderr has its own callback and stays out of the
// captured output.
TEST(Spawn, RunProcessWritesTheInputAndReadsStderrApart) {
  SpawnSpec spec{{"/bin/sh", "-c", "tr a-z A-Z; echo oops >&2"}, "/", {"PATH=/usr/bin:/bin"}};
  spec.stdin_pipe = true;
  spec.separate_stderr = true;
  RunLimits limits;
  limits.input = "hello\n";
  std::string out, err;
  limits.on_output = [&](const char* d, size_t n) { out.append(d, n); };
  limits.on_error = [&](const char* d, size_t n) { err.append(d, n); };
  CancelToken cancel;
  auto r = RunProcess(spec, limits, cancel);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(out, "HELLO\n");
  EXPECT_EQ(r->output, "HELLO\n");
  EXPECT_EQ(err, "oops\n");
}

// A stop descriptor ends the command as cancellation does, and with a grace the command gets
// SIGTERM first: its trap runs and it exits on its own. The loop has no child: a child killed
// by the same SIGTERM would have the shell print "Terminated" first, or not, by timing.
TEST(Spawn, AStopDescriptorSendsSigtermFirstWhenThereIsAGrace) {
  CancelToken stop;
  SpawnSpec spec{{"/bin/sh", "-c", "trap 'echo term; exit 7' TERM; echo up; while :; do :; done"},
                 "/",
                 {"PATH=/usr/bin:/bin"}};
  RunLimits limits;
  limits.timeout_ms = 0;
  limits.stop_fds = {stop.wake_fd()};
  limits.term_grace_ms = 60000;
  limits.on_output = [&](const char* d, size_t n) {
    if (std::string_view(d, n).find("up") != std::string_view::npos)
      stop.Cancel(CancelReason::kSigterm);
  };
  CancelToken cancel;
  auto r = RunProcess(spec, limits, cancel);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->cancelled);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->output, "up\nterm\n");
  EXPECT_EQ(r->exit_code, 7);
}

}  // namespace
}  // namespace ae::sandbox
