// agentexec as a confused deputy: it opens files with its own rights, outside the sandbox, at
// paths a confined command (or a pull request) can prepare. Each test plants the trap the way
// an attacker would — a command under workspace-write, or a symlink committed to the
// repository — and checks that agentexec's own read or write does not follow it out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/agentexec_runner.h"

namespace ae::e2e {
namespace {

namespace fs = std::filesystem;

// Every session file under `home`, concatenated: what the model was sent is recorded there.
std::string AllSessions(const std::string& home) {
  std::string all;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(home + "/sessions", ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) all += Slurp(it->path().string());
  }
  return all;
}

class DeputyIoTest : public ::testing::Test {
 protected:
  // The scripted model runs `cmd` under workspace-write whose only writable root is the
  // repository (no /tmp), then answers "Done.".
  RunOutput RunCommand(const std::string& cmd, std::vector<std::string> args) {
    std::string turns = R"({"turns":[
      {"items":[{"type":"function_call","name":"shell","arguments":{"command":["bash","-c",")" +
                        cmd + R"("]}}]},
      {"items":[{"type":"message","text":"Done."}]}]})";
    std::string script = ws_.WriteFile("turns.json", turns);
    std::vector<std::string> full =
        ScriptedArgs(script, {"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c",
                              "sandbox_workspace_write.exclude_tmpdir_env_var=true", "--json", "-s",
                              "workspace-write"});
    full.insert(full.end(), args.begin(), args.end());
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env();
    RunOutput out = RunAgentexec(full, options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }

  Workspace ws_;
};

// Attack: agentexec used to write -o FILE through FILE.tmp-<its pid>, opened with O_TRUNC and
// following symlinks. A command that cannot know the pid (it runs in its own PID namespace)
// plants every candidate as a symlink to a file outside its writable roots.
TEST_F(DeputyIoTest, PlantedTempSymlinksBesideTheOutputFileAreNotFollowed) {
  const std::string victim = ws_.root() + "/victim.txt";
  std::ofstream(victim) << "precious";
  const std::string out_file = ws_.repo() + "/out/last.txt";
  // The command also tries the victim directly: the sandbox stops that, so only agentexec
  // could change it.
  RunOutput out =
      RunCommand("perl -e 'symlink($ARGV[0], \\\"out/last.txt.tmp-$_\\\") or die for 1..32768' " +
                     victim + " && echo planted; echo pwned > " + victim,
                 // 32768 watched symlink calls take seconds on a loaded machine: not the
                 // default 10 s command timeout.
                 {"-c", "command_timeout_ms=300000", "-o", out_file, "go"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find(R"("aggregated_output":"planted\n)"), std::string::npos) << out.out;
  EXPECT_EQ(Slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(out_file));
  EXPECT_EQ(Slurp(out_file), "Done.");
}

// Attack: -o FILE's directory exists before the turn (agentexec made it); a command replaces
// it with a symlink to a directory outside its writable roots.
TEST_F(DeputyIoTest, OutputDirectoryReplacedBySymlinkFailsClosed) {
  const std::string elsewhere = ws_.root() + "/elsewhere";
  fs::create_directories(elsewhere);
  const std::string out_dir = ws_.repo() + "/out";
  const std::string out_file = out_dir + "/last.txt";
  RunOutput out = RunCommand("mv out out.orig && ln -s " + elsewhere + " out && echo swapped",
                             {"-o", out_file, "go"});
  EXPECT_NE(out.out.find(R"("aggregated_output":"swapped\n")"), std::string::npos) << out.out;
  EXPECT_FALSE(fs::exists(elsewhere + "/last.txt"));
  EXPECT_FALSE(fs::exists(ws_.repo() + "/out.orig/last.txt"));
  EXPECT_EQ(out.exit_code, 5) << out.err;
  EXPECT_NE(out.err.find("error: cannot write --output-last-message '" + out_file +
                         "': its directory '" + out_dir + "' was replaced during the run\n"),
            std::string::npos)
      << out.err;
  // The answer is not lost: it is in the event stream.
  EXPECT_NE(out.out.find(R"("type":"agent_message","text":"Done."})"), std::string::npos)
      << out.out;
}

// Attack: a pull request commits AGENTS.md as a symlink to /proc/self/environ. Read by
// agentexec, that is agentexec's environment (the API key), sent to the model as project
// instructions.
TEST_F(DeputyIoTest, AgentsMdSymlinkToProcEnvironIsNotSent) {
  fs::create_symlink("/proc/self/environ", ws_.repo() + "/AGENTS.md");
  std::string script =
      ws_.WriteFile("turns.json", R"({"turns":[{"items":[{"type":"message","text":"Hello."}]}]})");
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env({{"AE_DEPUTY_CANARY", "canary-7f3a91"}});
  RunOutput out = RunAgentexec(ScriptedArgs(script, {"--json", "hi"}), options);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const std::string sessions = AllSessions(ws_.home());
  ASSERT_NE(sessions.find("environment_context"), std::string::npos) << sessions;
  EXPECT_EQ(sessions.find("canary-7f3a91"), std::string::npos) << sessions;
  EXPECT_NE(out.out.find(R"("type":"error","message":")" + ws_.repo() +
                         "/AGENTS.md is not sent to the model: a symbolic link leads outside "
                         "the directory it is read from\"}}"),
            std::string::npos)
      << out.out;
}

// The same link planted where the user expects an image or a schema: refused before the turn,
// nothing sent. (A pipe, `--output-schema <(...)`, still works: base/read_file_test.)
TEST_F(DeputyIoTest, ImageAndSchemaLinkedToProcEnvironAreRefused) {
  fs::create_symlink("/proc/self/environ", ws_.repo() + "/shot.png");
  fs::create_symlink("/proc/self/environ", ws_.repo() + "/schema.json");
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env();
  RunOutput image = RunAgentexec({"--json", "-i", "shot.png", "hi"}, options);
  EXPECT_EQ(image.exit_code, 2);
  EXPECT_EQ(image.err, "error: --image shot.png: cannot read: on the proc pseudo file system\n");
  EXPECT_EQ(image.out, "");
  RunOutput schema = RunAgentexec({"--json", "--output-schema", "schema.json", "hi"}, options);
  EXPECT_EQ(schema.exit_code, 2);
  EXPECT_EQ(schema.err,
            "error: --output-schema schema.json: cannot read: on the proc pseudo file system\n");
}

// A pull request commits .agentexec/config.toml as a symlink to a file outside the repository
// (another project's config, a secret whose first line a parse error would quote): not read.
TEST_F(DeputyIoTest, ProjectConfigLinkedOutOfTheRepositoryIsRefused) {
  const std::string outside = ws_.WriteFile("outside.toml", "model = \"from-outside\"\n");
  fs::create_directories(ws_.repo() + "/.agentexec");
  fs::create_symlink(outside, ws_.repo() + "/.agentexec/config.toml");
  std::string script =
      ws_.WriteFile("turns.json", R"({"turns":[{"items":[{"type":"message","text":"Hello."}]}]})");
  RunOptions options;
  options.cwd = ws_.repo();
  options.env = ws_.Env();
  RunOutput out = RunAgentexec(ScriptedArgs(script, {"--json", "hi"}), options);
  EXPECT_EQ(out.exit_code, 2) << out.out;
  EXPECT_EQ(out.err, "error: " + ws_.repo() +
                         "/.agentexec/config.toml: cannot read: a symbolic link leads outside "
                         "the directory it is read from\n");
  // A link that stays inside the repository is the repository's own file: read.
  fs::remove(ws_.repo() + "/.agentexec/config.toml");
  std::ofstream(ws_.repo() + "/shared.toml") << "model = \"from-inside\"\n";
  fs::create_symlink("../shared.toml", ws_.repo() + "/.agentexec/config.toml");
  out = RunAgentexec(ScriptedArgs(script, {"--json", "hi"}), options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
}

}  // namespace
}  // namespace ae::e2e
