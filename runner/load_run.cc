#include "runner/load_run.h"

#include "base/duration.h"
#include "base/path.h"
#include "config/git_check.h"

namespace ae {
namespace {

std::vector<FlagSetting> FlagsFrom(const CliArgs& args) {
  std::vector<FlagSetting> flags;
  if (args.model) flags.push_back({"model", *args.model, "--model"});
  if (args.oss) flags.push_back({"model_provider", "ollama", "--oss"});
  // The flags' enums go in as their names, the form every config layer holds.
  auto mode = [](sandbox::Mode m) { return std::string(sandbox::ModeName(m)); };
  auto policy = [](ApprovalPolicy p) { return std::string(ApprovalPolicyName(p)); };
  if (args.sandbox) flags.push_back({"sandbox_mode", mode(*args.sandbox), "--sandbox"});
  if (args.full_auto) {
    flags.push_back({"sandbox_mode", mode(sandbox::Mode::kWorkspaceWrite), "--full-auto"});
  }
  if (args.approval) {
    flags.push_back({"approval_policy", policy(*args.approval), "--ask-for-approval"});
  }
  if (args.dangerously_bypass) {
    const char* flag = "--dangerously-bypass-approvals-and-sandbox";
    flags.push_back({"sandbox_mode", mode(sandbox::Mode::kDangerFullAccess), flag});
    flags.push_back({"approval_policy", policy(ApprovalPolicy::kNever), flag});
  }
  if (args.max_turns) {
    flags.push_back({"max_turns", std::to_string(*args.max_turns), "--max-turns", true});
  }
  if (args.max_tokens) {
    flags.push_back({"max_tokens", std::to_string(*args.max_tokens), "--max-tokens", true});
  }
  if (args.timeout_ms)
    flags.push_back({"timeout", FormatDurationMs(*args.timeout_ms), "--timeout"});
  return flags;
}

}  // namespace

LayerRequest LayerRequestFrom(const CliArgs& args) {
  LayerRequest request;
  request.cd = args.cd;
  request.profile = args.profile;
  request.overrides = args.config_overrides;
  request.flags = FlagsFrom(args);
  request.ignore_user_config = args.ignore_user_config;
  request.strict = args.strict_config;
  // A run that reads no user config and writes no session needs no home (a container with
  // neither variable set); anything else does.
  request.needs_home = !(args.ephemeral && args.ignore_user_config && !args.resume);
  return request;
}

Result<LoadedRun> LoadRun(const CliArgs& args, const Environment& env) {
  LoadedRun run;
  Result<LoadedLayers> layers = LoadLayers(LayerRequestFrom(args), env);
  if (!layers.ok()) return layers.error();
  run.home = std::move(layers->home);
  const std::string cwd = std::move(layers->cwd);
  run.config = std::move(layers->config);
  // --oss without a model anywhere: the local default, as codex does.
  if (args.oss && !run.config.sources.contains("model")) {
    run.config.model = "gpt-oss:20b";
    run.config.sources["model"] = "--oss";
  }
  ApplyModelTable(run.config);
  run.warnings = run.config.warnings;
  run.print_config = args.print_config;
  run.json = args.json;
  run.color = args.color;
  run.ephemeral = args.ephemeral;
  run.timeout_ms = ClampDurationMs(run.config.timeout_ms);
  if (args.output_last_message) {
    run.output_last_message = ResolvedPath(env.cwd, *args.output_last_message);
  }
  if (args.resume) run.resume = ResumeTarget{args.resume_last, args.session_id.value_or("")};
  if (args.print_config) return run;

  if (Status git = CheckGitRepo(cwd, args.skip_git_repo_check); !git.ok()) return git.error();

  const SessionInputs inputs{.cwd = cwd,
                             .process_cwd = env.cwd,
                             .add_dirs = args.add_dirs,
                             .allow_hosts = args.allow_hosts,
                             .output_schema = args.output_schema,
                             .images = args.images,
                             .getenv = env.getenv};
  Result<SessionConfig> session = BuildSessionConfig(run.config, inputs);
  if (!session.ok()) return MakeError("error: " + session.message());
  run.session = std::move(*session);
  run.session.progress = args.progress;
  return run;
}

}  // namespace ae
