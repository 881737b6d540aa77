#include "engine/instructions.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

namespace fs = std::filesystem;

TEST(InstructionsTest, EnvironmentContextForWorkspaceWrite) {
  TurnContext turn;
  turn.cwd = "/w";
  turn.sandbox.mode = sandbox::Mode::kWorkspaceWrite;
  turn.sandbox.writable_roots = {"/w", "/tmp"};
  EXPECT_EQ(EnvironmentContext(turn, "2026-11-22", "UTC"),
            "<environment_context>\n"
            "  <cwd>/w</cwd>\n"
            "  <shell>bash</shell>\n"
            "  <current_date>2026-11-22</current_date>\n"
            "  <timezone>UTC</timezone>\n"
            "  <approval_policy>never</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n"
            "  <network_access>restricted</network_access>\n"
            "  <writable_roots>\n"
            "    <root>/w</root>\n"
            "    <root>/tmp</root>\n"
            "  </writable_roots>\n"
            "</environment_context>");
}

TEST(InstructionsTest, PermissionsSayWhatTheSandboxAllows) {
  TurnContext turn;
  turn.sandbox.mode = sandbox::Mode::kReadOnly;
  std::string text = DeveloperInstructions(turn, "Always run make lint.");
  EXPECT_NE(text.find("The sandbox is `read-only`: commands may read any file but cannot write "
                      "anywhere. Network access is disabled."),
            std::string::npos);
  EXPECT_NE(text.find("Approval policy is `never`"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 21), "Always run make lint.");
}

TEST(InstructionsTest, AgentsMdFromRootToCwdWithinBudget) {
  test::ScratchDir scratch("ae-agents");
  fs::path root = scratch.path();
  fs::create_directories(root / ".git");
  fs::create_directories(root / "sub");
  std::ofstream(root / "AGENTS.md") << "root rules";
  std::ofstream(root / "sub" / "AGENTS.md") << "sub rules";
  std::string cwd = (root / "sub").string();
  std::vector<std::string> warnings;
  EXPECT_EQ(ProjectDocs(cwd, 1000, &warnings),
            "# AGENTS.md instructions for " + cwd +
                "\n\n<INSTRUCTIONS>\nroot rules\n\nsub rules\n</INSTRUCTIONS>");
  EXPECT_EQ(ProjectDocs(cwd, 4, &warnings),
            "# AGENTS.md instructions for " + cwd + "\n\n<INSTRUCTIONS>\nroot\n</INSTRUCTIONS>");
  EXPECT_EQ(ProjectDocs(cwd, 0, &warnings), "");
  EXPECT_TRUE(warnings.empty());
}

// The global file, $AGENTEXEC_HOME/AGENTS.md (or $CODEX_HOME's), goes before the project's
// in the same message, worded as codex 0.171 sends it (observed against the loopback server):
// trimmed, a "--- project-doc ---" line between, no "for CWD" when it is alone.
TEST(InstructionsTest, GlobalInstructionsComeFirstAsCodexSendsThem) {
  test::ScratchDir scratch("ae-agents-global");
  fs::path root = scratch.path();
  fs::path ours = root / "agentexec-home", codex = root / "codex-home", repo = root / "repo";
  fs::create_directories(ours);
  fs::create_directories(codex);
  fs::create_directories(repo / ".git");
  std::ofstream(codex / "AGENTS.md") << "  codex global\n\n";
  std::vector<std::string> warnings;
  const std::vector<std::string> homes = {ours.string(), codex.string()};
  // Ours has none: codex's home is read.
  const std::string global = GlobalInstructions(homes, 1000, &warnings);
  EXPECT_EQ(global, "codex global");
  EXPECT_EQ(ProjectDocs(repo.string(), 1000, &warnings, global),
            "# AGENTS.md instructions\n\n<INSTRUCTIONS>\ncodex global\n</INSTRUCTIONS>");
  std::ofstream(repo / "AGENTS.md") << "PROJECT DOC\n";
  EXPECT_EQ(ProjectDocs(repo.string(), 1000, &warnings, global),
            "# AGENTS.md instructions for " + repo.string() +
                "\n\n<INSTRUCTIONS>\ncodex global\n\n--- project-doc ---\n\nPROJECT "
                "DOC\n\n</INSTRUCTIONS>");
  // Ours wins over codex's; an override over the AGENTS.md beside it; blank means none.
  std::ofstream(ours / "AGENTS.md") << "our global";
  EXPECT_EQ(GlobalInstructions(homes, 1000, &warnings), "our global");
  std::ofstream(ours / "AGENTS.override.md") << "our override";
  EXPECT_EQ(GlobalInstructions(homes, 1000, &warnings), "our override");
  std::ofstream(ours / "AGENTS.override.md") << " \n";
  EXPECT_EQ(GlobalInstructions(homes, 1000, &warnings), "");
  EXPECT_TRUE(warnings.empty());
  // Read under the project's rules: a link to /proc is refused and said.
  fs::remove(ours / "AGENTS.override.md");
  fs::remove(ours / "AGENTS.md");
  fs::create_symlink("/proc/self/environ", ours / "AGENTS.md");
  EXPECT_EQ(GlobalInstructions(homes, 1000, &warnings), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind((ours / "AGENTS.md").string() + " is not sent to the model: ", 0), 0u)
      << warnings[0];
}

// As codex: AGENTS.override.md shadows the AGENTS.md of its own directory only; an empty
// override silences that directory.
TEST(InstructionsTest, AgentsOverrideShadowsAgentsMdInItsDirectory) {
  test::ScratchDir scratch("ae-agents-override");
  fs::path root = scratch.path();
  fs::create_directories(root / ".git");
  fs::create_directories(root / "sub");
  std::ofstream(root / "AGENTS.md") << "root rules";
  std::ofstream(root / "AGENTS.override.md") << "local root rules";
  std::ofstream(root / "sub" / "AGENTS.md") << "sub rules";
  std::string cwd = (root / "sub").string();
  std::vector<std::string> warnings;
  EXPECT_EQ(ProjectDocs(cwd, 1000, &warnings),
            "# AGENTS.md instructions for " + cwd +
                "\n\n<INSTRUCTIONS>\nlocal root rules\n\nsub rules\n</INSTRUCTIONS>");
  std::ofstream(root / "sub" / "AGENTS.override.md") << "";
  EXPECT_EQ(ProjectDocs(cwd, 1000, &warnings),
            "# AGENTS.md instructions for " + cwd +
                "\n\n<INSTRUCTIONS>\nlocal root rules\n</INSTRUCTIONS>");
  // An override is read under the same rules as AGENTS.md: a link out is refused and said.
  fs::remove(root / "AGENTS.override.md");
  fs::create_symlink("/proc/self/environ", root / "AGENTS.override.md");
  EXPECT_EQ(ProjectDocs(cwd, 1000, &warnings), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind((root / "AGENTS.override.md").string() + " is not sent to the "
                                                                       "model: ",
                              0),
            0u)
      << warnings[0];
}

// A pull request commits these as AGENTS.md. agentexec reads them unconfined: followed, the
// first would send its own environment (the API key) to the model. Each is skipped, named.
TEST(InstructionsTest, AgentsMdLinksOutOfTheRepositoryAreNotSent) {
  test::ScratchDir scratch("ae-agents");
  fs::path root = fs::path(scratch.path()) / "repo";
  fs::create_directories(root / ".git");
  fs::create_directories(root / "a" / "b");
  std::ofstream(fs::path(scratch.path()) / "secret") << "outside";
  std::ofstream(root / "rules.md") << "shared rules";
  fs::create_symlink("/proc/self/environ", root / "AGENTS.md");
  fs::create_symlink("../../secret", root / "a" / "AGENTS.md");
  fs::create_symlink("../../rules.md", root / "a" / "b" / "AGENTS.md");  // stays inside: read
  const std::string cwd = (root / "a" / "b").string();
  std::vector<std::string> warnings;
  EXPECT_EQ(
      ProjectDocs(cwd, 1000, &warnings),
      "# AGENTS.md instructions for " + cwd + "\n\n<INSTRUCTIONS>\nshared rules\n</INSTRUCTIONS>");
  const std::string why =
      "is not sent to the model: a symbolic link leads outside the "
      "directory it is read from";
  EXPECT_EQ(warnings, (std::vector<std::string>{(root / "AGENTS.md").string() + " " + why,
                                                (root / "a" / "AGENTS.md").string() + " " + why}));
}

// Outside a repository the search starts and ends at cwd; a FIFO or a directory named
// AGENTS.md is refused without blocking, and said.
TEST(InstructionsTest, AgentsMdThatIsNotARegularFileIsSkippedAndSaid) {
  test::ScratchDir scratch("ae-agents");
  const std::string cwd = scratch.path();
  ASSERT_EQ(::mkfifo((cwd + "/AGENTS.md").c_str(), 0600), 0);
  std::vector<std::string> warnings;
  EXPECT_EQ(ProjectDocs(cwd, 1000, &warnings), "");
  EXPECT_EQ(warnings, (std::vector<std::string>{cwd + "/AGENTS.md is not sent to the model: not "
                                                      "a regular file"}));
}

}  // namespace
}  // namespace ae
