// Runs the real agentexec binary as a user or CI job would: its own environment, a working
// directory, stdin as /dev/null, given bytes, or a pipe left open; stdout, stderr and the
// exit code come back. Also checks the --json rule: every stdout line is one JSON object.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ae::e2e {

struct RunOptions {
  std::string cwd;
  std::map<std::string, std::string> env;  // the whole environment of the child
  std::optional<std::string> stdin_data;   // nullopt: /dev/null
  bool stdin_left_open = false;            // a pipe nobody writes to or closes
  int timeout_s = 60;
  int signal_after_ms = 0;  // send `signal` this long after start (0: never)
  int signal = 0;
  // Runs `wrapper... agentexec args...` instead (e.g. a shell pipeline or `unshare -m`).
  std::vector<std::string> wrapper;
  // Runs a copy of agentexec that every user may run (tests/support/reachable.h): for a
  // wrapper that switches to another user.
  bool reachable_binary = false;
};

struct RunOutput {
  int exit_code = -1;   // 128+N when killed by signal N
  long max_rss_kb = 0;  // peak resident set of agentexec and the children it waited for
  double seconds = 0;   // wall time until it exited
  std::string out;
  std::string err;
  std::vector<std::string> lines() const;  // stdout lines without their newlines
};

RunOutput RunAgentexec(const std::vector<std::string>& args, const RunOptions& options);

// `-c model_provider=scripted -c model_providers.scripted.script="<script>"`, then `args`: the
// arguments of a run on the scripted provider.
std::vector<std::string> ScriptedArgs(const std::string& script,
                                      const std::vector<std::string>& args = {});

// The whole file at `path` ("" when it cannot be read).
std::string Slurp(const std::string& path);

// "" when every line of `out` is one JSON object; else a description of the first bad line.
std::string CheckJsonLines(const std::string& out);

// Replaces the thread id in a thread.started line with <thread>, and turn.completed /
// turn.failed's duration_ms with <ms>.
std::string NormalizeThreadId(const std::string& line);

// The function_call_output lines of the sessions saved under AGENTEXEC_HOME `home` (what the
// model was sent), in order.
std::vector<std::string> FunctionCallOutputs(const std::string& home);

// A scratch workspace: a git repository, an AGENTEXEC_HOME and a HOME, removed at the end.
class Workspace {
 public:
  Workspace();
  ~Workspace();
  const std::string& root() const { return root_; }
  std::string repo() const { return root_ + "/repo"; }
  std::string home() const { return root_ + "/agentexec-home"; }
  // The child environment: PATH, HOME, AGENTEXEC_HOME, LANG, plus `extra`.
  std::map<std::string, std::string> Env(
      const std::map<std::string, std::string>& extra = {}) const;
  // Writes `content` to root()/name and returns its path.
  std::string WriteFile(const std::string& name, const std::string& content) const;

 private:
  std::string root_;
};

}  // namespace ae::e2e
