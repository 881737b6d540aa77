// agentexec: parse -> run -> exit code. Nothing else lives here.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "base/secret_env.h"
#include "batch/command.h"
#include "cli/cli.h"
#include "cli/exit_code.h"
#include "runner/apply_patch_command.h"
#include "runner/run_exec.h"
#include "runner/sandbox_command.h"
#include "schema/events_schema.h"

namespace {

int Main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "batch") == 0)
    return ae::RunBatchCommand(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], ae::kRunAsApplyPatchFlag) == 0)
    return ae::RunApplyPatchCommand(argc, argv);
  ae::Result<ae::CliArgs> args = ae::ParseCli(argc, argv);
  if (!args.ok()) {
    std::string message = args.message();
    if (message.empty() || message.back() != '\n') message.push_back('\n');
    std::fputs(message.c_str(), stderr);
    return ae::ToInt(ae::ExitCode::kUsage);
  }
  if (args->help_text) {
    std::fputs(args->help_text->c_str(), stdout);
    return 0;
  }
  if (args->print_schema) {
    std::string_view schema = ae::EventsSchemaJson();
    std::fwrite(schema.data(), 1, schema.size(), stdout);
    return 0;
  }
  if (args->version_text) {
    std::fputs(args->version_text->c_str(), stdout);
    return 0;
  }
  if (args->print_writable_roots) return ae::PrintWritableRoots(*args);
  if (args->sandbox_command) return ae::RunSandboxCommand(*args);
  return ae::RunExec(*args);
}

}  // namespace

// The outermost boundary: nothing ends the process through std::terminate. The session has its
// own (RunSessionGuarded: turn.failed on stdout); this catches the rest, e.g. during setup.
int main(int argc, char** argv, char** envp) {
  // Before anything can call setenv: the key's bytes are overwritten through these pointers
  // once the model client has read it (engine/session.cc).
  ae::RememberStartupEnvironment(envp);
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: internal error: unknown exception\n");
  }
  return ae::ToInt(ae::ExitCode::kTurnFailed);
}
