// The private /dev/shm: with the mount namespace, confined commands (read-only and
// workspace-write) get a fresh tmpfs on /dev/shm, so POSIX semaphores and shared memory work
// (Python's multiprocessing), nothing they write there reaches the host's /dev/shm, and the
// rest of /dev stays unwritable. Without the namespace the host's /dev/shm stays read-only
// and the run says so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/landlock.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::Bin;
using testing::Exists;
using testing::Ran;
using testing::RealPath;
using testing::RunProcess;
using testing::ScratchDir;
using testing::WriteText;

constexpr const char* kLockAndShm =
    "import multiprocessing, multiprocessing.shared_memory as s\n"
    "lock = multiprocessing.Lock()\n"
    "with lock: pass\n"
    "m = s.SharedMemory(create=True, size=4096)\n"
    "m.buf[0] = 7\n"
    "print('lock and shm', m.buf[0])\n"
    "m.close(); m.unlink()\n";

class DevShm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (landlock::Abi() < 1) {
      GTEST_SKIP() << "Landlock is not available on this kernel: " << std::strerror(errno);
    }
    if (!Exists("/dev/shm")) GTEST_SKIP() << "this host has no /dev/shm";
    ws_ = RealPath(dir_.path());
    // Names unique to this process, so parallel runs do not meet in the host's /dev/shm.
    name_ = "ae-shm-test-" + std::to_string(::getpid());
  }
  void TearDown() override {
    for (const char* suffix : {"", "-host", "-added"})
      ::unlink(("/dev/shm/" + name_ + suffix).c_str());
    ::unlink(("/dev/" + name_).c_str());
  }
  Ran Sandbox(const std::string& mode, std::vector<std::string> command,
              std::vector<std::string> extra = {},
              std::vector<std::pair<std::string, std::string>> env = {}) {
    std::vector<std::string> argv = {Bin(), "sandbox", "-s", mode};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return RunProcess(argv, ws_, env);
  }
  Ran Script(const std::string& mode, const std::string& script,
             std::vector<std::pair<std::string, std::string>> env = {}) {
    return Sandbox(mode, {"/bin/sh", "-c", script}, {}, env);
  }
  void RequireMountNamespace() {
    Ran check = Sandbox("read-only", {"true"});
    ASSERT_EQ(check.exit_code, 0) << check.output;
    if (check.output.find("could not create a mount namespace") != std::string::npos) {
      GTEST_SKIP() << "no mount namespace on this host, so no private /dev/shm: " << check.output;
    }
  }
  void RequirePython() {
    if (RunProcess({"python3", "-c", "pass"}, "/").exit_code != 0) {
      GTEST_SKIP() << "python3 is not installed";
    }
  }
  ScratchDir dir_;
  std::string ws_, name_;
};

TEST_F(DevShm, MultiprocessingWorksInBothConfinedModes) {
  RequirePython();
  RequireMountNamespace();
  for (const char* mode : {"workspace-write", "read-only"}) {
    Ran ran = Sandbox(mode, {"python3", "-c", kLockAndShm});
    EXPECT_EQ(ran.exit_code, 0) << mode << ": " << ran.output;
    EXPECT_EQ(ran.output, "lock and shm 7\n") << mode;
  }
}

// Without CAP_SYS_ADMIN the namespace comes with a user namespace; the tmpfs works there too.
TEST_F(DevShm, MultiprocessingWorksForAnUnprivilegedUser) {
  RequirePython();
  RequireMountNamespace();
  if (RunProcess({"setpriv", "--version"}, "/").exit_code != 0) {
    GTEST_SKIP() << "setpriv is not installed";
  }
  const std::vector<std::string> nobody = {"setpriv", "--reuid=65534", "--regid=65534",
                                           "--clear-groups", "--"};
  std::vector<std::string> argv = nobody;
  // As nobody, with no user config (root's is not readable to it).
  argv.insert(argv.end(),
              {Bin(), "sandbox", "--ignore-user-config", "-s", "read-only", "--", "true"});
  Ran check = RunProcess(argv, "/");
  if (check.exit_code != 0 || !check.output.empty()) {
    GTEST_SKIP() << "no user namespace for an unprivileged user here: " << check.output;
  }
  argv = nobody;
  argv.insert(argv.end(), {Bin(), "sandbox", "--ignore-user-config", "-s", "read-only", "--",
                           "python3", "-c", kLockAndShm});
  Ran ran = RunProcess(argv, "/");
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.output, "lock and shm 7\n");
}

TEST_F(DevShm, WritesStayPrivateToTheCommand) {
  RequireMountNamespace();
  const std::string inside = "/dev/shm/" + name_;
  WriteText("/dev/shm/" + name_ + "-host", "host\n");
  for (const char* mode : {"workspace-write", "read-only"}) {
    // The command sees an empty tmpfs of its own (not the host's file), can write and read
    // back, and the mount is nosuid, nodev and noexec.
    Ran ran = Script(mode, "ls /dev/shm/ && echo private > " + inside + " && cat " + inside +
                               " && awk '$2 == \"/dev/shm\" { o = $4 } END { print o }' "
                               "/proc/self/mounts && stat -c 'mode %a' /dev/shm");
    EXPECT_EQ(ran.exit_code, 0) << mode << ": " << ran.output;
    EXPECT_EQ(ran.output.rfind("private\n", 0), 0u) << mode << ": " << ran.output;
    for (const char* flag : {"nosuid", "nodev", "noexec", "mode 1777"}) {
      EXPECT_NE(ran.output.find(flag), std::string::npos)
          << mode << ": " << flag << " in " << ran.output;
    }
    EXPECT_FALSE(Exists(inside)) << mode << ": the private file reached the host's /dev/shm";
  }
  EXPECT_TRUE(Exists("/dev/shm/" + name_ + "-host"));  // and the host's was left alone
}

TEST_F(DevShm, RestOfDevStaysUnwritable) {
  RequireMountNamespace();
  const std::string outside = "/dev/" + name_;
  for (const char* mode : {"workspace-write", "read-only"}) {
    for (const std::string& script :
         {"echo x > " + outside, "echo x > /dev/shm/../" + name_, "mkdir " + outside,
          // A link planted in the private tmpfs does not carry its write right elsewhere.
          "ln -s " + outside + " /dev/shm/link && echo x > /dev/shm/link"}) {
      Ran ran = Script(mode, script);
      EXPECT_NE(ran.exit_code, 0) << mode << ": " << script << ": " << ran.output;
      EXPECT_FALSE(Exists(outside)) << mode << ": " << script;
    }
    // The device rules are unchanged: /dev/null is writable, a new device node is not.
    Ran ran = Script(mode, "echo x > /dev/null && mknod /dev/shm/zero c 1 5");
    EXPECT_NE(ran.exit_code, 0) << mode << ": " << ran.output;
  }
}

// A writable root at or above /dev/shm means the user asked for the host's: no private tmpfs
// hides it.
TEST_F(DevShm, AddDirDevShmWritesToTheHost) {
  RequireMountNamespace();
  const std::string inside = "/dev/shm/" + name_ + "-added";
  Ran ran = Sandbox("workspace-write", {"/bin/sh", "-c", "echo added > " + inside},
                    {"--add-dir", "/dev/shm"});
  EXPECT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(testing::ReadText(inside), "added\n");
}

TEST_F(DevShm, WithoutNamespaceHostShmStaysReadOnly) {
  const std::vector<std::pair<std::string, std::string>> no_userns = {
      {"AGENTEXEC_SANDBOX_FAKE_NO_USERNS", "1"}};
  const std::string inside = "/dev/shm/" + name_;
  for (const char* mode : {"workspace-write", "read-only"}) {
    Ran ran = Script(mode, "echo x > " + inside, no_userns);
    EXPECT_NE(ran.exit_code, 0) << mode << ": " << ran.output;
    EXPECT_NE(ran.output.find("sandbox: /dev/shm is not writable in this run, so POSIX shared "
                              "memory and semaphores (e.g. Python's multiprocessing locks) "
                              "fail: could not create a mount namespace (unshare: Operation "
                              "not permitted)\n"),
              std::string::npos)
        << mode << ": " << ran.output;
    EXPECT_NE(ran.output.find("Permission denied"), std::string::npos)
        << mode << ": " << ran.output;
    EXPECT_FALSE(Exists(inside)) << mode;
  }
  if (RunProcess({"python3", "-c", "pass"}, "/").exit_code == 0) {
    Ran ran = Sandbox("workspace-write", {"python3", "-c", kLockAndShm}, {}, no_userns);
    EXPECT_NE(ran.exit_code, 0) << ran.output;
    EXPECT_NE(ran.output.find("PermissionError"), std::string::npos) << ran.output;
  }
}

}  // namespace
}  // namespace ae::sandbox
