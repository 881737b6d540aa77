#include "tests/support/agentexec_runner.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/event_schema_check.h"
#include "tests/support/reachable.h"

namespace ae::e2e {

namespace fs = std::filesystem;

std::vector<std::string> RunOutput::lines() const {
  std::vector<std::string> result;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    result.push_back(out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return result;
}

RunOutput RunAgentexec(const std::vector<std::string>& args, const RunOptions& options) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    std::abort();
  }
  std::vector<std::string> argv_s = options.wrapper;
  argv_s.push_back(options.reachable_binary ? test::ReachableExecutable(AGENTEXEC_BIN)
                                            : std::string(AGENTEXEC_BIN));
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (const auto& [k, v] : options.env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid == 0) {
    if (options.stdin_data || options.stdin_left_open) {
      ::dup2(in_pipe[0], 0);
    } else {
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
    }
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) ::_exit(99);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(98);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(in_pipe[0]);
  if (options.stdin_data) {
    // Small prompts only: fits the pipe buffer, so this cannot block.
    [[maybe_unused]] ssize_t n =
        ::write(in_pipe[1], options.stdin_data->data(), options.stdin_data->size());
  }
  if (!options.stdin_left_open) ::close(in_pipe[1]);

  RunOutput result;
  const auto start = std::chrono::steady_clock::now();
  bool signalled = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
    if (elapsed > options.timeout_s * 1000) {
      ::kill(pid, SIGKILL);
      break;
    }
    if (options.signal_after_ms > 0 && !signalled && elapsed >= options.signal_after_ms) {
      ::kill(pid, options.signal);
      signalled = true;
    }
    if (::poll(fds, 2, 50) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  result.max_rss_kb = usage.ru_maxrss;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.stdin_left_open) ::close(in_pipe[1]);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Every --json stream the suite produces is validated against the published schema.
  for (const std::string& a : args) {
    if (a == "--json" || a == "--experimental-json") {
      EXPECT_EQ(CheckJsonLines(result.out), "") << "stdout of agentexec --json:\n" << result.out;
      break;
    }
  }
  return result;
}

std::vector<std::string> ScriptedArgs(const std::string& script,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> full{"-c", "model_provider=scripted", "-c",
                                "model_providers.scripted.script=\"" + script + "\""};
  full.insert(full.end(), args.begin(), args.end());
  return full;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string CheckJsonLines(const std::string& out) {
  if (!out.empty() && out.back() != '\n') return "stdout does not end with a newline";
  RunOutput o;
  o.out = out;
  int n = 0;
  for (const std::string& line : o.lines()) {
    ++n;
    rapidjson::Document d;
    // Strict: valid UTF-8 (kParseValidateEncodingFlag), and iterative so a deep line is a
    // failure here, not a crash of the test.
    if (d.Parse<rapidjson::kParseValidateEncodingFlag | rapidjson::kParseIterativeFlag>(line.data(),
                                                                                        line.size())
            .HasParseError() ||
        !d.IsObject()) {
      return "line " + std::to_string(n) + " is not a JSON object: " + line;
    }
  }
  return test::ValidateEventStream(out);
}

std::string NormalizeThreadId(const std::string& line) {
  static const std::regex id(
      R"("thread_id":"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")");
  // duration_ms (turn.completed / turn.failed) is the one value that varies run to run.
  static const std::regex ms(R"("duration_ms":[0-9]+)");
  return std::regex_replace(std::regex_replace(line, id, R"("thread_id":"<thread>")"), ms,
                            R"("duration_ms":<ms>)");
}

Workspace::Workspace() {
  char tmpl[] = "/tmp/ae-e2e-XXXXXX";
  root_ = ::mkdtemp(tmpl);
  fs::create_directories(repo());
  fs::create_directories(home());
  fs::create_directories(root_ + "/user-home");
  std::string cmd = "git init -q '" + repo() + "'";
  if (std::system(cmd.c_str()) != 0) std::abort();
}

Workspace::~Workspace() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::map<std::string, std::string> Workspace::Env(
    const std::map<std::string, std::string>& extra) const {
  std::map<std::string, std::string> env{
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", root_ + "/user-home"},
      {"AGENTEXEC_HOME", home()},
      {"LANG", "C.UTF-8"},
  };
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

std::string Workspace::WriteFile(const std::string& name, const std::string& content) const {
  std::string path = root_ + "/" + name;
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::vector<std::string> FunctionCallOutputs(const std::string& home) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::exists(home + "/sessions", ec)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(home + "/sessions", ec)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("function_call_output") != std::string::npos) out.push_back(line);
    }
  }
  return out;
}

}  // namespace ae::e2e
