#include "test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandbox/landlock.h"

namespace ae::sandbox::testing {

void WorkspaceWriteTest::SetUp() {
  if (landlock::Abi() < 1) {
    GTEST_SKIP() << "Landlock is not available on this kernel: " << std::strerror(errno);
  }
  base_ = dir_.path();
  Sh("mkdir ws outside && git init -q ws", base_);
  Result<Policy> p = BuildPolicy(WorkspaceWriteSettings(), base_ + "/ws");
  ASSERT_TRUE(p.ok()) << p.message();
  policy_ = *p;
}

Ran RunProcess(const std::vector<std::string>& argv, const std::string& cwd,
               const std::vector<std::pair<std::string, std::string>>& set_env,
               const std::vector<std::string>& unset_env) {
  Ran ran;
  int out[2];
  if (::pipe(out) != 0) return ran;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::close(out[1]);
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    if (::chdir(cwd.c_str()) != 0) ::_exit(120);
    for (const auto& [name, value] : set_env) ::setenv(name.c_str(), value.c_str(), 1);
    for (const std::string& name : unset_env) ::unsetenv(name.c_str());
    std::vector<char*> args = ExecArray(argv);
    ::execvp(args[0], args.data());
    ::_exit(121);
  }
  ::close(out[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) ran.output.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) ran.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) ran.signal = WTERMSIG(status);
  return ran;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<int> ProcessesWith(const std::string& marker) {
  std::vector<int> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    if (std::atoi(name.c_str()) == ::getpid()) continue;
    std::string cmdline = ReadText(entry.path().string() + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    // The daemon's own command line, not that of whoever passed the marker on.
    if (cmdline.rfind("sleep " + marker, 0) == 0) found.push_back(std::atoi(name.c_str()));
  }
  return found;
}

bool GoneWithin(const std::string& marker, int ms) {
  for (int waited = 0; waited <= ms; waited += 20) {
    if (ProcessesWith(marker).empty()) return true;
    ::usleep(20 * 1000);
  }
  for (int pid : ProcessesWith(marker)) ::kill(pid, SIGKILL);
  return false;
}

void Sh(const std::string& command, const std::string& cwd) {
  Ran ran = RunProcess({"/bin/sh", "-c", command}, cwd);
  ASSERT_EQ(ran.exit_code, 0) << command << "\n" << ran.output;
}

std::string RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  std::free(real);
  return out;
}

std::vector<char*> ExecArray(const std::vector<std::string>& strings) {
  std::vector<char*> array;
  // exec(3) takes char* const[] but writes nothing through it.
  for (const std::string& s : strings) array.push_back(const_cast<char*>(s.c_str()));
  array.push_back(nullptr);
  return array;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    old_ = old;
    had_ = true;
  }
  if (value != nullptr) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (had_) {
    ::setenv(name_.c_str(), old_.c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

Policy CarvedOutPolicy(const std::string& ws) {
  Policy policy;
  policy.mode = Mode::kWorkspaceWrite;
  policy.writable_roots = {ws};
  policy.read_only_carveouts = {ws + "/.git", ws + "/.agentexec"};
  return policy;
}

Settings WorkspaceWriteSettings() {
  Settings s;
  s.mode = Mode::kWorkspaceWrite;
  s.exclude_slash_tmp = true;
  s.exclude_tmpdir_env_var = true;
  return s;
}

Result<PreflightReport> PreflightFaking(const char* fake, const Policy& policy) {
  ScopedEnv faked(fake, "1");
  return Preflight(policy);
}

void ListenOnLoopback(int type, int backlog, int* fd, sockaddr_in* addr) {
  *fd = ::socket(AF_INET, type, 0);
  *addr = {};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(*fd, reinterpret_cast<sockaddr*>(addr), sizeof *addr), 0);
  ASSERT_EQ(::listen(*fd, backlog), 0);
  socklen_t len = sizeof *addr;
  ::getsockname(*fd, reinterpret_cast<sockaddr*>(addr), &len);
}

}  // namespace ae::sandbox::testing
