#include "engine/instructions.h"

#include <gtest/gtest.h>

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
  EXPECT_EQ(ProjectDocs(cwd, 1000),
            "# AGENTS.md instructions for " + cwd +
                "\n\n<INSTRUCTIONS>\nroot rules\n\nsub rules\n</INSTRUCTIONS>");
  EXPECT_EQ(ProjectDocs(cwd, 4),
            "# AGENTS.md instructions for " + cwd + "\n\n<INSTRUCTIONS>\nroot\n</INSTRUCTIONS>");
  EXPECT_EQ(ProjectDocs(cwd, 0), "");
}

}  // namespace
}  // namespace ae
