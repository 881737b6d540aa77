#include "runner/load_run.h"

#include <gtest/gtest.h>

#include "config/git_check.h"
#include "test_util.h"

namespace ae {
namespace {

using ::ae::testing::FakeEnvironment;
using ::ae::testing::MakeDir;
using ::ae::testing::TempDir;
using ::ae::testing::WriteFile;

class LoadRunTest : public ::testing::Test {
 protected:
  LoadRunTest() {
    MakeDir(repo() + "/.git");
    MakeDir(repo() + "/sub/dir");
    MakeDir(home());
  }
  std::string home() const { return tmp_ / "home"; }
  std::string repo() const { return tmp_ / "repo"; }

  Result<LoadedRun> Load(std::vector<std::string> words, std::string cwd = "") {
    std::vector<const char*> argv = {"agentexec"};
    for (const std::string& w : words) argv.push_back(w.c_str());
    Result<CliArgs> args = ParseCli(static_cast<int>(argv.size()), argv.data());
    EXPECT_TRUE(args.ok()) << args.message();
    if (!args.ok()) return args.error();
    return LoadRun(*args, FakeEnvironment(vars_, cwd.empty() ? repo() : cwd));
  }

  TempDir tmp_;
  std::map<std::string, std::string> vars_ = {{"AGENTEXEC_HOME", tmp_ / "home"},
                                              {"HOME", tmp_ / "userhome"}};
};

TEST_F(LoadRunTest, Defaults) {
  Result<LoadedRun> run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  const SessionConfig& s = run->session;
  EXPECT_EQ(s.cwd, repo());
  EXPECT_EQ(s.provider.id, "openai");
  EXPECT_EQ(s.provider.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(s.provider.env_key, "OPENAI_API_KEY");
  EXPECT_EQ(s.provider.wire_api, "responses");
  EXPECT_EQ(s.provider.request_max_retries, 4);
  EXPECT_EQ(s.provider.stream_max_retries, 5);
  EXPECT_EQ(s.provider.stream_idle_timeout_ms, 300000);
  EXPECT_EQ(s.model.model, "gpt-5.5");
  EXPECT_EQ(s.sandbox.mode, sandbox::Mode::kReadOnly);
  EXPECT_EQ(s.approval, ApprovalPolicy::kNever);
  EXPECT_EQ(s.shell_env.inherit, ShellEnvPolicy::Inherit::kAll);
  EXPECT_EQ(s.command_timeout_ms, 10000);
  EXPECT_EQ(s.max_turns, 0);
  EXPECT_EQ(s.project_doc_max_bytes, 32768u);
  EXPECT_FALSE(s.output_schema_json.has_value());
  EXPECT_EQ(run->home, home());
  EXPECT_EQ(run->timeout_ms, 0);
  EXPECT_FALSE(run->resume.has_value());
  EXPECT_EQ(run->color, "auto");
}

TEST_F(LoadRunTest, HomeDefaultsToDotAgentexecAndMayBeRelative) {
  vars_.erase("AGENTEXEC_HOME");
  Result<LoadedRun> run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->home, tmp_ / "userhome/.agentexec");
  vars_["AGENTEXEC_HOME"] = "rel/h";
  run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->home, repo() + "/rel/h");
}

// A container with neither HOME nor AGENTEXEC_HOME can still run what needs no home.
TEST_F(LoadRunTest, NoHomeIsFineForAnEphemeralRunWithoutUserConfig) {
  vars_.clear();
  EXPECT_EQ(Load({"hi"}).message(),
            "error: cannot find the agentexec home: set AGENTEXEC_HOME (or HOME), or run with "
            "--ephemeral --ignore-user-config, which need none");
  EXPECT_EQ(Load({"--ephemeral", "hi"}).message(), Load({"hi"}).message());
  Result<LoadedRun> run = Load({"--ephemeral", "--ignore-user-config", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->home, "");
  EXPECT_EQ(Load({"--ephemeral", "--ignore-user-config", "resume", "--last"}).message(),
            Load({"hi"}).message());
}

// Someone coming from codex: their config is not read, and the run says so.
TEST_F(LoadRunTest, ACodexConfigThatIsNotReadIsNamed) {
  const std::string codex = tmp_ / "codex-home";
  MakeDir(codex);
  WriteFile(codex + "/config.toml", "model = \"o3\"\n");
  vars_["CODEX_HOME"] = codex;
  Result<LoadedRun> run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  const std::string note = "codex's config " + codex +
                           "/config.toml is not read: agentexec reads " + home() +
                           "/config.toml (the same keys; copy or link the file there, "
                           "or set AGENTEXEC_HOME=" +
                           codex + ")";
  EXPECT_EQ(run->session.warnings, std::vector<std::string>{note});
  // Not once agentexec has a config of its own, nor when the homes are one directory.
  WriteFile(home() + "/config.toml", "");
  EXPECT_TRUE(Load({"hi"})->session.warnings.empty());
  vars_["AGENTEXEC_HOME"] = codex;
  EXPECT_TRUE(Load({"hi"})->session.warnings.empty());
}

TEST_F(LoadRunTest, GitCheck) {
  const std::string outside = tmp_ / "plain";
  MakeDir(outside);
  Result<LoadedRun> run = Load({"hi"}, outside);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.message(),
            "Not inside a trusted directory and --skip-git-repo-check was not specified.");
  EXPECT_TRUE(Load({"--skip-git-repo-check", "hi"}, outside).ok());
  EXPECT_TRUE(Load({"--print-config"}, outside).ok());  // a diagnostic needs no repository
  EXPECT_TRUE(Load({"hi"}, repo() + "/sub/dir").ok());
  EXPECT_FALSE(Load({"-C", outside, "hi"}).ok());
  EXPECT_TRUE(Load({"-C", repo(), "hi"}, outside).ok());
}

TEST(GitRoot, FindsTheNearestDotGitDirectoryOrFile) {
  TempDir tmp;
  MakeDir(tmp / "a/.git");
  MakeDir(tmp / "a/b/c");
  WriteFile(tmp / "a/b/.git", "gitdir: /elsewhere\n");  // a worktree or submodule
  EXPECT_EQ(FindGitRoot(tmp / "a/b/c"), tmp / "a/b");
  EXPECT_EQ(FindGitRoot(tmp / "a"), tmp / "a");
  EXPECT_EQ(FindGitRoot(tmp / "a/"), tmp / "a");
  EXPECT_EQ(FindGitRoot(tmp.path()), std::nullopt);
  EXPECT_TRUE(CheckGitRepo(tmp.path(), /*skip_git_repo_check=*/true).ok());
  EXPECT_EQ(CheckGitRepo(tmp.path(), false).message(), kNotInGitRepoMessage);
}

TEST_F(LoadRunTest, CdIsResolvedAndChecked) {
  Result<LoadedRun> run = Load({"-C", "sub/dir", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.cwd, repo() + "/sub/dir");
  EXPECT_EQ(Load({"-C", "missing", "hi"}).message(),
            "error: -C missing: No such file or directory");
  WriteFile(repo() + "/file", "");
  EXPECT_EQ(Load({"-C", "file", "hi"}).message(), "error: -C file: Not a directory");
  EXPECT_EQ(Load({"hi"}, tmp_ / "gone").message(),
            "error: working directory " + tmp_ / "gone" + ": No such file or directory");
}

TEST_F(LoadRunTest, ProjectConfigComesFromTheGitRootOfTheSessionDirectory) {
  WriteFile(repo() + "/.agentexec/config.toml", "model = \"repo-model\"\n");
  Result<LoadedRun> run = Load({"-C", repo() + "/sub", "hi"}, tmp_.path());
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.model.model, "repo-model");
}

TEST_F(LoadRunTest, FlagsBeatConfig) {
  WriteFile(home() + "/config.toml",
            "model = \"from-file\"\nsandbox_mode = \"read-only\"\nmax_turns = 3\n"
            "timeout = \"1m\"\n");
  Result<LoadedRun> run = Load({"-m", "flag-model", "--full-auto", "-a", "on-failure",
                                "--max-turns", "9", "--timeout", "90s", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.model.model, "flag-model");
  EXPECT_EQ(run->session.sandbox.mode, sandbox::Mode::kWorkspaceWrite);
  EXPECT_EQ(run->session.approval, ApprovalPolicy::kOnFailure);
  EXPECT_EQ(run->session.max_turns, 9);
  EXPECT_EQ(run->timeout_ms, 90000);
  EXPECT_EQ(run->config.sources["sandbox_mode"], "--full-auto");
  EXPECT_EQ(run->config.sources["approval_policy"], "--ask-for-approval");
  EXPECT_EQ(run->config.sources["max_turns"], "--max-turns");
  EXPECT_EQ(run->config.sources["timeout"], "--timeout");
  EXPECT_EQ(run->config.sources["model"], "--model");
}

TEST_F(LoadRunTest, Yolo) {
  WriteFile(home() + "/config.toml", "approval_policy = \"on-failure\"\n");
  Result<LoadedRun> run = Load({"--yolo", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.sandbox.mode, sandbox::Mode::kDangerFullAccess);
  EXPECT_EQ(run->session.approval, ApprovalPolicy::kNever);
  EXPECT_EQ(run->config.sources["approval_policy"], "--dangerously-bypass-approvals-and-sandbox");
}

TEST_F(LoadRunTest, OssSelectsOllamaAndItsDefaultModel) {
  Result<LoadedRun> run = Load({"--oss", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.provider.id, "ollama");
  EXPECT_EQ(run->session.provider.wire_api, "chat");
  EXPECT_EQ(run->session.provider.base_url, "http://localhost:11434/v1");
  EXPECT_EQ(run->session.provider.env_key, "");
  EXPECT_EQ(run->session.model.model, "gpt-oss:20b");
  run = Load({"--oss", "-m", "qwen3", "hi"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->session.model.model, "qwen3");
}

TEST_F(LoadRunTest, CustomProvider) {
  WriteFile(home() + "/config.toml",
            "model_provider = \"mock\"\n"
            "[model_providers.mock]\n"
            "base_url = \"http://127.0.0.1:9/v1/\"\n"
            "env_key = \"MOCK_KEY\"\n"
            "wire_api = \"chat\"\n"
            "http_headers = { X-A = \"1\" }\n"
            "env_http_headers = { X-B = \"B_VAR\" }\n"
            "query_params = { api-version = \"2025\" }\n"
            "request_max_retries = 1\n"
            "stream_max_retries = 0\n"
            "stream_idle_timeout_ms = 500\n");
  Result<LoadedRun> run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  const ProviderInfo& p = run->session.provider;
  EXPECT_EQ(p.id, "mock");
  EXPECT_EQ(p.name, "mock");
  EXPECT_EQ(p.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(p.env_key, "MOCK_KEY");
  EXPECT_EQ(p.wire_api, "chat");
  EXPECT_EQ(p.http_headers.at("X-A"), "1");
  EXPECT_EQ(p.env_http_headers.at("X-B"), "B_VAR");
  EXPECT_EQ(p.query_params.at("api-version"), "2025");
  EXPECT_EQ(p.request_max_retries, 1);
  EXPECT_EQ(p.stream_max_retries, 0);
  EXPECT_EQ(p.stream_idle_timeout_ms, 500);
  // The variables the key and header values come from never reach commands.
  EXPECT_EQ(run->session.shell_env.credential_vars,
            (std::vector<std::string>{"MOCK_KEY", "B_VAR"}));
}

TEST_F(LoadRunTest, RequireFullIsolationReachesThePolicySettings) {
  Result<LoadedRun> run = Load({"-c", "require_full_isolation=true", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_TRUE(run->session.sandbox.require_full_isolation);
}

TEST_F(LoadRunTest, ProviderErrors) {
  EXPECT_EQ(Load({"-c", "model_provider=nope", "hi"}).message(),
            "error: model_provider 'nope' (from -c) is not defined: add a "
            "[model_providers.nope] table, or use one of ollama, openai, scripted");
  EXPECT_EQ(Load({"-c", "model_provider=scripted", "hi"}).message(),
            "error: model provider 'scripted' replays a script but none is set: set "
            "model_providers.scripted.script (or AGENTEXEC_SCRIPT) to a turns file");
  EXPECT_EQ(Load({"-c", "model_provider=scripted", "-c",
                  "model_providers.scripted.script=/nonexistent/t.json", "hi"})
                .message(),
            "error: model_providers.scripted.script /nonexistent/t.json: cannot read: No such "
            "file or directory");
  EXPECT_EQ(Load({"-c", "model_provider=x", "-c", "model_providers.x.name=X", "hi"}).message(),
            "error: model provider 'x' has no base_url: set model_providers.x.base_url");
}

TEST_F(LoadRunTest, ScriptedProvider) {
  WriteFile(repo() + "/turns.json", "[]");
  vars_["AGENTEXEC_SCRIPT"] = "turns.json";
  Result<LoadedRun> run = Load({"-c", "model_provider=scripted", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.provider.wire_api, "scripted");
  EXPECT_EQ(run->session.provider.script, repo() + "/turns.json");
}

TEST_F(LoadRunTest, OutputSchema) {
  WriteFile(repo() + "/schema.json",
            "{ \"type\": \"object\",\n \"properties\": {}, \"additionalProperties\": false }\n");
  Result<LoadedRun> run = Load({"--output-schema", "schema.json", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->session.output_schema_json,
            "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}");
  WriteFile(repo() + "/loose.json", "{\"type\": \"object\"}");
  EXPECT_EQ(Load({"--output-schema", "loose.json", "hi"}).message(),
            "error: --output-schema loose.json: #: every object needs \"additionalProperties\": "
            "false");

  EXPECT_EQ(Load({"--output-schema", "/nonexistent/schema.json", "hi"}).message(),
            "error: --output-schema /nonexistent/schema.json: cannot read: No such file or "
            "directory");
  WriteFile(repo() + "/array.json", "[1, 2]");
  EXPECT_EQ(Load({"--output-schema", "array.json", "hi"}).message(),
            "error: --output-schema array.json: not a JSON object");
  WriteFile(repo() + "/broken.json", "{\"a\": }");
  EXPECT_EQ(Load({"--output-schema", "broken.json", "hi"}).message(),
            "error: --output-schema broken.json: not a JSON object (Invalid value. at byte "
            "offset 6)");
}

TEST_F(LoadRunTest, Images) {
  WriteFile(repo() + "/a.png", std::string("\x89PNG\r\n\x1a\n", 8));
  Result<LoadedRun> run = Load({"-i", "a.png", "hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  ASSERT_EQ(run->session.images.size(), 1u);
  EXPECT_EQ(run->session.images[0], "data:image/png;base64,iVBORw0KGgo=");
  WriteFile(repo() + "/notes.txt", "hello");
  EXPECT_EQ(Load({"-i", "notes.txt", "hi"}).message(),
            "error: --image notes.txt: not a PNG, JPEG, GIF or WebP image");
  EXPECT_EQ(Load({"-i", "gone.png", "hi"}).message(),
            "error: --image gone.png: cannot read: No such file or directory");
}

TEST_F(LoadRunTest, PathsAndModes) {
  Result<LoadedRun> run = Load({"-o", "out/last.txt", "--add-dir", "extra", "-c",
                                "sandbox_workspace_write.writable_roots=[\"/w\"]", "--json",
                                "--color", "never", "--ephemeral", "resume", "--last", "hi"},
                               repo() + "/sub");
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_EQ(run->output_last_message, repo() + "/sub/out/last.txt");
  EXPECT_EQ(run->session.sandbox.add_dirs, std::vector<std::string>{repo() + "/sub/extra"});
  EXPECT_EQ(run->session.sandbox.writable_roots, std::vector<std::string>{"/w"});
  EXPECT_TRUE(run->json);
  EXPECT_TRUE(run->ephemeral);
  EXPECT_EQ(run->color, "never");
  ASSERT_TRUE(run->resume.has_value());
  EXPECT_TRUE(run->resume->last);
  run = Load({"resume", "0199-abc", "hi"});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->resume->session_id, "0199-abc");
  EXPECT_FALSE(run->resume->last);
}

TEST_F(LoadRunTest, WarningsReachTheSession) {
  WriteFile(home() + "/config.toml", "modle = \"x\"\n");
  Result<LoadedRun> run = Load({"hi"});
  ASSERT_TRUE(run.ok()) << run.message();
  const std::vector<std::string> expected = {
      home() + "/config.toml:1:1: unknown key 'modle' (did you mean 'model'?)"};
  EXPECT_EQ(run->warnings, expected);
  EXPECT_EQ(run->session.warnings, expected);
  EXPECT_EQ(Load({"--strict-config", "hi"}).message(),
            "error: " + home() + "/config.toml:1:1: unknown key 'modle' (did you mean 'model'?)");
}

TEST_F(LoadRunTest, PrintConfigShowsFlagSources) {
  Result<LoadedRun> run = Load({"--print-config", "-s", "workspace-write", "-p", "ci"});
  ASSERT_FALSE(run.ok());  // no such profile
  WriteFile(home() + "/ci.config.toml", "model = \"ci\"\n");
  run = Load({"--print-config", "-s", "workspace-write", "-p", "ci"});
  ASSERT_TRUE(run.ok()) << run.message();
  EXPECT_TRUE(run->print_config);
  const std::string text = FormatConfig(run->config);
  EXPECT_NE(text.find("\nsandbox_mode = \"workspace-write\"  # --sandbox\n"), std::string::npos);
  EXPECT_NE(text.find("\nprofile = \"ci\"  # --profile\n"), std::string::npos);
  EXPECT_NE(text.find("\nmodel = \"ci\"  # profile ci (" + home() + "/ci.config.toml:1)\n"),
            std::string::npos);
}

}  // namespace
}  // namespace ae
