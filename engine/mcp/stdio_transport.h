// StdioTransport: one MCP server process and its pipes. We write newline-delimited messages
// to its stdin; a reader thread hands each stdout line to a callback and keeps the tail of
// its stderr (never copied to our own stdout or stderr) for error messages.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/fd.h"
#include "base/result.h"
#include "engine/mcp/mcp_config.h"
#include "engine/mcp/transport.h"
#include "sandbox/spawn.h"

namespace ae {

class StdioTransport : public McpTransport {
 public:
  // Handlers are called on the reader thread: each non-empty stdout line, then once on_close
  // with why the stream ended ("exited with code 3", "wrote a line longer than 16 MiB", ...).

  // Forks and execs spec.command. Must run on a thread that outlives the server: the child's
  // PR_SET_PDEATHSIG fires when the forking *thread* exits, not only the process.
  static Result<std::unique_ptr<StdioTransport>> Spawn(const McpServerSpec& spec);
  ~StdioTransport() override;  // Shutdown()

  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  void StartReader(LineHandler on_line, CloseHandler on_close) override;
  // Writes `line` and a newline, waiting at most timeout_ms for the pipe to take it.
  Status WriteLine(const std::string& line, int64_t timeout_ms, CancelToken* cancel) override;
  // The last few KiB the server wrote to stderr, trimmed; empty if none.
  std::string StderrTail() const override;
  pid_t pid() const override { return pid_; }

  // Closes stdin, gives the server a moment to exit, then SIGTERM and SIGKILL to its process
  // group; reaps it and joins the reader. Idempotent.
  void Shutdown() override;

 private:
  StdioTransport() = default;
  void ReadLoop(LineHandler on_line, CloseHandler on_close);
  void AppendStderr(const char* data, size_t n);
  std::string ExitDescription();  // after stdout closed: "exited with code N" or similar

  pid_t pid_ = -1;
  std::optional<sandbox::Process> process_;  // started by sandbox::Spawn
  std::atomic<bool> stopping_{false};        // Shutdown began: an end of stdout is expected
  std::mutex write_mu_;
  Fd stdin_w_;
  Fd stdout_r_;
  Fd stderr_r_;
  Fd stop_;  // eventfd: tells the reader to leave
  std::thread reader_;
  mutable std::mutex stderr_mu_;
  std::string stderr_tail_;
  std::mutex shutdown_mu_;
};

// The environment an MCP server starts with (see McpServerSpec::env), as KEY=VALUE strings.
std::vector<std::string> McpServerEnvironment(const McpServerSpec& spec);

}  // namespace ae
