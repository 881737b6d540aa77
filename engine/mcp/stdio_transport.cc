#include "engine/mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/exec_path.h"
#include "sandbox/spawn.h"

namespace ae {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLineBytes = 16 << 20;  // one JSON-RPC message
constexpr size_t kStderrTailBytes = 4096;
constexpr int kExitGraceMs = 300;  // after stdin closes, before SIGTERM; again before SIGKILL

// What codex passes through to MCP servers from its own environment.
constexpr const char* kDefaultEnvVars[] = {"HOME", "LOGNAME", "PATH", "SHELL",  "USER",
                                           "LANG", "LC_ALL",  "TERM", "TMPDIR", "TZ"};

int64_t MsUntil(Clock::time_point t) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return d < 0 ? 0 : d;
}

bool WaitExit(const sandbox::Process& process, int64_t ms, siginfo_t* info) {
  auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  while (!process.HasExited(info)) {
    if (Clock::now() >= deadline) return false;
    ::usleep(5000);
  }
  return true;
}

// Writes to a pipe whose reader died must fail with EPIPE, not kill us with SIGPIPE, even
// when the embedding program did not ignore SIGPIPE: block it on this thread and swallow it.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = ::write(fd, data, n);
  int err = errno;
  if (w < 0 && err == EPIPE) {
    struct timespec zero {};
    ::sigtimedwait(&pipe_set, nullptr, &zero);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return w;
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::vector<std::string> McpServerEnvironment(const McpServerSpec& spec) {
  std::map<std::string, std::string> env;
  for (const char* name : kDefaultEnvVars) {
    if (const char* v = std::getenv(name)) env[name] = v;
  }
  for (const std::string& name : spec.env_vars) {
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Result<std::unique_ptr<StdioTransport>> StdioTransport::Spawn(const McpServerSpec& spec) {
  if (spec.command.empty()) return MakeError("no command configured (set `command`)");
  std::vector<std::string> env = McpServerEnvironment(spec);
  std::string path = FindExecutable(spec.command, env);
  if (path.empty()) {
    return MakeError(fmt::format("command '{}' not found in PATH", spec.command));
  }

  Fd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return MakeError(fmt::format("eventfd: {}", strerror(errno)));

  // The one spawner every child of agentexec goes through (sandbox/spawn.h): its own session
  // (so stopping the server also stops what it started: npx → node, uv → python), tied to
  // this thread by the parent-death signal, stdin and stderr as pipes of their own.
  sandbox::SpawnSpec child;
  child.argv.push_back(spec.command);
  child.argv.insert(child.argv.end(), spec.args.begin(), spec.args.end());
  child.cwd = spec.cwd;
  child.env = std::move(env);
  child.stdin_pipe = true;
  child.separate_stderr = true;
  Result<sandbox::Spawned> spawned = sandbox::Spawn(child);
  if (!spawned.ok()) return spawned.error();
  if (!spawned->process) {
    if (spawned->failed_step == "chdir") {
      return MakeError(
          fmt::format("cannot enter cwd '{}': {}", spec.cwd, strerror(spawned->failed_errno)));
    }
    return MakeError(fmt::format("cannot run '{}': {}: {}", path, spawned->failed_step,
                                 strerror(spawned->failed_errno)));
  }
  sandbox::Process& process = *spawned->process;
  Fd in_w = process.TakeInput();
  Fd out_r = process.TakeOutput();
  Fd err_r = process.TakeError();
  // Blocking reads for the reader thread; the writer waits with poll on a full pipe.
  ::fcntl(out_r.get(), F_SETFL, ::fcntl(out_r.get(), F_GETFL) & ~O_NONBLOCK);
  ::fcntl(in_w.get(), F_SETFL, ::fcntl(in_w.get(), F_GETFL) | O_NONBLOCK);
  std::unique_ptr<StdioTransport> t(new StdioTransport());
  t->pid_ = process.pid();
  t->process_.emplace(std::move(process));
  t->stdin_w_ = std::move(in_w);
  t->stdout_r_ = std::move(out_r);
  t->stderr_r_ = std::move(err_r);
  t->stop_ = std::move(stop);
  return t;
}

StdioTransport::~StdioTransport() {
  Shutdown();
}

void StdioTransport::StartReader(LineHandler on_line, CloseHandler on_close) {
  reader_ =
      std::thread([this, on_line = std::move(on_line), on_close = std::move(on_close)]() mutable {
        // A thread entry point: an escaping exception would be std::terminate.
        try {
          ReadLoop(std::move(on_line), std::move(on_close));
        } catch (...) {
        }
      });
}

Status StdioTransport::WriteLine(const std::string& line, int64_t timeout_ms,
                                 CancelToken* /*cancel: a pipe write is bounded by timeout_ms*/) {
  std::lock_guard lock(write_mu_);
  if (!stdin_w_) return MakeError("the server's stdin is closed");
  std::string data = line + "\n";
  size_t off = 0;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (off < data.size()) {
    ssize_t w = WriteNoSigpipe(stdin_w_.get(), data.data() + off, data.size() - off);
    if (w > 0) {
      off += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      int64_t left = MsUntil(deadline);
      if (left == 0) {
        return MakeError(
            fmt::format("timed out after {} ms writing to the server's stdin "
                        "(it is not reading)",
                        timeout_ms));
      }
      struct pollfd p {
        stdin_w_.get(), POLLOUT, 0
      };
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
      continue;
    }
    return MakeError(fmt::format("cannot write to the server's stdin: {}",
                                 errno == EPIPE ? "it closed its stdin" : strerror(errno)));
  }
  return {};
}

void StdioTransport::AppendStderr(const char* data, size_t n) {
  std::lock_guard lock(stderr_mu_);
  stderr_tail_.append(data, n);
  if (stderr_tail_.size() > 2 * kStderrTailBytes) {
    stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
  }
}

std::string StdioTransport::StderrTail() const {
  std::lock_guard lock(stderr_mu_);
  std::string tail = stderr_tail_.size() > kStderrTailBytes
                         ? stderr_tail_.substr(stderr_tail_.size() - kStderrTailBytes)
                         : stderr_tail_;
  return Trim(tail);
}

std::string StdioTransport::ExitDescription() {
  siginfo_t info{};
  // The server closed stdout; it is usually exiting, give it a moment to say how.
  if (!WaitExit(*process_, 200, &info)) return "closed its stdout";
  if (info.si_code == CLD_EXITED) return fmt::format("exited with code {}", info.si_status);
  return fmt::format("was killed by signal {} ({})", info.si_status, strsignal(info.si_status));
}

void StdioTransport::ReadLoop(LineHandler on_line, CloseHandler on_close) {
  std::string buf;
  char chunk[65536];
  bool out_open = true, err_open = true;
  std::string why;
  while (out_open) {
    struct pollfd fds[3] = {{stdout_r_.get(), POLLIN, 0},
                            {err_open ? stderr_r_.get() : -1, POLLIN, 0},
                            {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      why = fmt::format("poll failed: {}", strerror(errno));
      break;
    }
    if (fds[2].revents != 0) return;  // Shutdown: nobody is waiting for a close reason
    if (err_open && fds[1].revents != 0) {
      ssize_t n = ::read(stderr_r_.get(), chunk, sizeof chunk);
      if (n > 0) {
        AppendStderr(chunk, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        err_open = false;
      }
    }
    if (fds[0].revents == 0) continue;
    ssize_t n = ::read(stdout_r_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out_open = false;
      break;
    }
    buf.append(chunk, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string line = buf.substr(start, nl - start);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) on_line(std::move(line));
    }
    buf.erase(0, start);
    if (buf.size() > kMaxLineBytes) {
      why = fmt::format("wrote a line longer than {} MiB on stdout", kMaxLineBytes >> 20);
      break;
    }
  }
  if (why.empty()) {
    // Collect what the server said on its way out before describing its end.
    while (err_open) {
      struct pollfd p {
        stderr_r_.get(), POLLIN, 0
      };
      if (::poll(&p, 1, 100) <= 0) break;
      ssize_t n = ::read(stderr_r_.get(), chunk, sizeof chunk);
      if (n <= 0) break;
      AppendStderr(chunk, static_cast<size_t>(n));
    }
    why = stopping_ ? "has been shut down" : ExitDescription();
  }
  on_close(std::move(why));
  // Keep draining stderr so a chatty server never blocks on a full pipe, until Shutdown.
  while (err_open) {
    struct pollfd fds[2] = {{stderr_r_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    ssize_t n = ::read(stderr_r_.get(), chunk, sizeof chunk);
    if (n <= 0 && !(n < 0 && errno == EINTR)) return;
    if (n > 0) AppendStderr(chunk, static_cast<size_t>(n));
  }
}

void StdioTransport::Shutdown() {
  std::lock_guard lock(shutdown_mu_);
  if (process_ && !process_->reaped()) {
    stopping_ = true;
    {
      std::lock_guard wlock(write_mu_);
      stdin_w_.reset();  // the MCP way to ask a stdio server to leave
    }
    siginfo_t info{};
    if (!WaitExit(*process_, kExitGraceMs, &info)) {
      process_->Signal(SIGTERM);
      WaitExit(*process_, kExitGraceMs, &info);
    }
    // Whatever is left of the session (children of the server) goes too, then the reap.
    int code = 0, sig = 0;
    process_->Reap(&code, &sig);
  }
  if (reader_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_.get(), &one, sizeof one);
    reader_.join();
  }
}

}  // namespace ae
