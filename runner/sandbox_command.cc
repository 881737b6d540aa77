// `agentexec sandbox`: confine this very process (still single-threaded here) with the
// prepared sandbox and execvp the command. With a PID namespace this process stays behind as
// the supervisor (sandbox/containment.h) and exits as the command does; without one, the
// command replaces it (unless it leads a process group, when setsid needs a fork).
#include "runner/sandbox_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/child.h"
#include "base/result.h"
#include "sandbox/policy.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared.h"

namespace ae {
namespace {

constexpr int kUsage = 2;
constexpr int kSandboxUnavailable = 3;

void PrintLine(const std::string& line) {
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
}

// The value of `-c key=value` as TOML when it parses, else as a bare string (as codex does).
toml::node_view<const toml::node> ParseValue(const toml::table& holder) {
  return holder["v"];
}

Status ApplyOverride(const std::string& text, sandbox::Settings* settings, bool* mode_set) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return MakeError(fmt::format("-c expects key=value, got '{}'", text));
  }
  const std::string key = text.substr(0, eq);
  const std::string raw = text.substr(eq + 1);
  toml::table holder;
  try {
    holder = toml::parse("v = " + raw);
  } catch (const toml::parse_error&) {
    holder.insert("v", raw);
  }
  auto value = ParseValue(holder);
  auto boolean = [&](bool* out) -> Status {
    if (std::optional<bool> b = value.value<bool>()) {
      *out = *b;
      return {};
    }
    return MakeError(fmt::format("-c {} expects true or false, got '{}'", key, raw));
  };
  if (key == "sandbox_mode") {
    Result<sandbox::Mode> mode = sandbox::ParseMode(value.value_or(raw));
    if (!mode.ok()) return mode.error();
    settings->mode = *mode;
    *mode_set = true;
  } else if (key == "sandbox_workspace_write.network_access") {
    return boolean(&settings->network_access);
  } else if (key == "sandbox_workspace_write.exclude_tmpdir_env_var") {
    return boolean(&settings->exclude_tmpdir_env_var);
  } else if (key == "sandbox_workspace_write.exclude_slash_tmp") {
    return boolean(&settings->exclude_slash_tmp);
  } else if (key == "require_full_isolation") {
    return boolean(&settings->require_full_isolation);
  } else if (key == "sandbox_workspace_write.writable_roots") {
    const toml::array* array = value.as_array();
    if (array == nullptr) {
      return MakeError(fmt::format("-c {} expects an array of paths, got '{}'", key, raw));
    }
    settings->writable_roots.clear();
    for (const toml::node& item : *array) {
      std::optional<std::string> path = item.value<std::string>();
      if (!path) return MakeError(fmt::format("-c {} expects an array of paths", key));
      settings->writable_roots.push_back(*path);
    }
  }
  // Other keys belong to a full run's configuration and do not affect this command.
  return {};
}

}  // namespace

int SandboxCommandMain(int argc, char** argv) {
  CLI::App app{"Run one command under the agentexec sandbox; its exit status is passed through.",
               "agentexec sandbox"};
  std::string mode_text;
  std::vector<std::string> add_dirs;
  std::vector<std::string> overrides;
  app.add_option("-s,--sandbox", mode_text,
                 "read-only (default), workspace-write or danger-full-access");
  app.add_option("--add-dir", add_dirs, "another writable directory (workspace-write)")
      ->allow_extra_args(false)
      ->take_all();
  app.add_option("-c,--config", overrides,
                 "key=value: sandbox_mode, sandbox_workspace_write.*, require_full_isolation")
      ->allow_extra_args(false)
      ->take_all();
  app.prefix_command();
  app.footer(
      "Everything after -- is the command.\nExample: agentexec sandbox -s workspace-write -- "
      "make test\nExit status: the command's; 2 usage; 3 the mode cannot be enforced here; "
      "126/127 the command cannot be run / was not found.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    PrintLine(fmt::format("agentexec sandbox: {}", e.what()));
    return kUsage;
  }
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) {
    PrintLine("agentexec sandbox: no command given (agentexec sandbox [-s MODE] -- COMMAND ...)");
    return kUsage;
  }

  sandbox::Settings settings;
  bool mode_set = false;
  for (const std::string& text : overrides) {
    if (Status s = ApplyOverride(text, &settings, &mode_set); !s.ok()) {
      PrintLine("agentexec sandbox: " + s.message());
      return kUsage;
    }
  }
  if (!mode_text.empty()) {
    Result<sandbox::Mode> mode = sandbox::ParseMode(mode_text);
    if (!mode.ok()) {
      PrintLine("agentexec sandbox: " + mode.message());
      return kUsage;
    }
    settings.mode = *mode;
  }
  settings.add_dirs = add_dirs;

  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    PrintLine(fmt::format("agentexec sandbox: cannot read the working directory: {}",
                          std::strerror(errno)));
    return kSandboxUnavailable;
  }
  Result<sandbox::Policy> policy = sandbox::BuildPolicy(settings, cwd);
  if (!policy.ok()) {
    PrintLine(policy.message());
    return kSandboxUnavailable;
  }

  if (!policy->unrestricted()) {
    Result<sandbox::PreflightReport> report = sandbox::Preflight(*policy);
    if (!report.ok()) {
      PrintLine(report.message());
      return kSandboxUnavailable;
    }
    for (const std::string& warning : report->warnings) PrintLine(warning);
    sandbox::PrepareOptions options;
    options.mount_namespace = report->mount_namespace;
    options.pid_namespace = report->pid_namespace;
    Result<sandbox::PreparedPtr> prepared = sandbox::Prepare(*policy, options);
    if (!prepared.ok()) {
      PrintLine(prepared.message());
      return kSandboxUnavailable;
    }
    if (!policy->network_access) ::setenv("CODEX_SANDBOX_NETWORK_DISABLED", "1", 1);
    // The command gets 0, 1 and 2 as given and nothing else: an inherited descriptor keeps
    // the powers it was opened with (a file outside the roots, a socket, a directory to
    // fchmod), which no confinement applied afterwards takes away.
    CloseOnExecFrom3();
    const char* step = "";
    int err = 0;
    std::fflush(nullptr);
    if (!sandbox::ApplyInChild(**prepared, &step, &err)) {
      PrintLine(fmt::format("agentexec sandbox: {}: {}", step, std::strerror(err)));
      return kSandboxUnavailable;
    }
  }

  std::vector<char*> args;
  for (std::string& arg : command) args.push_back(arg.data());
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  PrintLine(fmt::format("agentexec sandbox: {}: {}", command.front(), std::strerror(err)));
  return err == ENOENT ? 127 : 126;
}

}  // namespace ae
