#include "engine/instructions.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <filesystem>
#include <vector>

#include "base/fd.h"
#include "base/read_file.h"

namespace ae {
namespace {

constexpr const char* kBaseInstructions =
    R"(You are a coding agent run by agentexec, a headless runner in a CI pipeline or script. You work alone in the user's repository: nobody will answer questions or approve anything during this run, so make reasonable decisions yourself and finish the task in this turn.

# How to work
- Read before you change. Inspect the repository with shell commands (`rg`, `ls`, `cat`, `sed -n`) and keep what you read short.
- Make the smallest change that fully solves the task. Keep the existing style; do not reformat unrelated code.
- Edit files with the `apply_patch` tool, never with shell redirection or `sed -i`.
- Check your work: run the relevant tests or build steps when they exist, and fix what you broke.
- For multi-step work, keep a short plan with `update_plan` and update it as steps finish.
- Commands have time limits; avoid interactive programs and anything that waits for input.

# Tools
- `exec_command` runs a shell command (`cmd`) with `bash -lc` in the working directory (or `workdir`) and returns its exit code and output.
- `apply_patch` edits files. Its input is a patch:
  *** Begin Patch
  *** Add File: path/new.txt
  +line
  *** Update File: path/old.txt
  @@ optional context header
   unchanged line
  -removed line
  +added line
  *** Delete File: path/gone.txt
  *** End Patch
  Paths are relative to the working directory. Give a few unchanged lines around each change so it can be located.
- `update_plan` records your plan: a list of steps, each pending, in_progress or completed.

# Final answer
End with a concise message for the person who will read the CI log: what you changed and why, and how you verified it (or why you could not). If you could not finish, say what is left.)";

std::string Permissions(const TurnContext& turn) {
  const sandbox::Policy& p = turn.sandbox;
  std::string text = "<permissions instructions>\n";
  switch (p.mode) {
    case sandbox::Mode::kReadOnly:
      text += "The sandbox is `read-only`: commands may read any file but cannot write anywhere.";
      break;
    case sandbox::Mode::kWorkspaceWrite:
      text +=
          "The sandbox is `workspace-write`: commands may read any file and write only under the "
          "writable roots; `.git` and `.agentexec` inside them stay read-only.";
      break;
    case sandbox::Mode::kDangerFullAccess:
      text += "There is no sandbox (`danger-full-access`): commands can read and write anything.";
      break;
  }
  text += p.unrestricted() || p.network_access ? " Network access is enabled."
                                               : " Network access is disabled.";
  text += "\n";
  if (turn.approval == ApprovalPolicy::kOnFailure) {
    text +=
        "Approval policy is `on-failure`: a command the sandbox blocks is retried once outside "
        "the sandbox automatically.\n";
  } else {
    text +=
        "Approval policy is `never`: nobody can grant more permissions. If the sandbox blocks "
        "a command, work within the limits instead.\n";
  }
  if (p.mode == sandbox::Mode::kWorkspaceWrite && !p.writable_roots.empty()) {
    text += "The writable roots are";
    for (size_t i = 0; i < p.writable_roots.size(); ++i) {
      text += fmt::format("{} `{}`", i == 0 ? "" : ",", p.writable_roots[i]);
    }
    text += ".\n";
  }
  text += "</permissions instructions>";
  return text;
}

}  // namespace

std::string DeveloperInstructions(const TurnContext& turn, const std::string& extra) {
  std::string text = kBaseInstructions;
  text += "\n\n" + Permissions(turn);
  if (!extra.empty()) text += "\n\n" + extra;
  return text;
}

std::string EnvironmentContext(const TurnContext& turn, const std::string& date,
                               const std::string& timezone) {
  const sandbox::Policy& p = turn.sandbox;
  std::string text = "<environment_context>\n";
  text += fmt::format("  <cwd>{}</cwd>\n", turn.cwd);
  text += "  <shell>bash</shell>\n";
  text += fmt::format("  <current_date>{}</current_date>\n", date);
  if (!timezone.empty()) text += fmt::format("  <timezone>{}</timezone>\n", timezone);
  text +=
      fmt::format("  <approval_policy>{}</approval_policy>\n", ApprovalPolicyName(turn.approval));
  text += fmt::format("  <sandbox_mode>{}</sandbox_mode>\n", sandbox::ModeName(p.mode));
  text += fmt::format("  <network_access>{}</network_access>\n",
                      p.unrestricted() || p.network_access ? "enabled" : "restricted");
  if (p.mode == sandbox::Mode::kWorkspaceWrite) {
    text += "  <writable_roots>\n";
    for (const std::string& root : p.writable_roots) {
      text += fmt::format("    <root>{}</root>\n", root);
    }
    text += "  </writable_roots>\n";
  }
  text += "</environment_context>";
  return text;
}

std::string ProjectDocs(const std::string& cwd, size_t max_bytes,
                        std::vector<std::string>* warnings) {
  if (max_bytes == 0) return {};
  // Directories from the git root (or cwd when not in a repository) down to cwd.
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  fs::path dir(cwd);
  while (true) {
    dirs.push_back(dir);
    std::error_code ec;
    if (fs::exists(dir / ".git", ec)) break;
    if (!dir.has_parent_path() || dir.parent_path() == dir) {
      dirs = {fs::path(cwd)};
      break;
    }
    dir = dir.parent_path();
  }
  // Every doc is read beneath the top directory: a symlink may point within it, never out.
  const fs::path& top = dirs.back();
  Fd top_fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top_fd) return {};
  std::string docs;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (docs.size() >= max_bytes) break;
    // As codex: in each directory the first of these that exists is the one read, so an
    // AGENTS.override.md (even an empty one) shadows the AGENTS.md beside it.
    Result<std::string> part = MakeError("", kFileNotFound);
    fs::path name;
    for (const char* candidate : {"AGENTS.override.md", "AGENTS.md"}) {
      name = *it / candidate;
      const fs::path rel = it->lexically_relative(top) / candidate;
      part = ReadRegularFileBeneath(top_fd.get(), rel.string(), max_bytes - docs.size());
      if (part.ok() || part.error().code != kFileNotFound) break;
    }
    if (!part.ok()) {
      if (part.error().code != kFileNotFound && warnings != nullptr) {
        warnings->push_back(
            fmt::format("{} is not sent to the model: {}", name.string(), part.message()));
      }
      continue;
    }
    if (part->empty()) continue;
    if (!docs.empty()) docs += "\n\n";
    docs += *part;
  }
  if (docs.empty()) return {};
  return fmt::format("# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{}\n</INSTRUCTIONS>", cwd,
                     docs);
}

}  // namespace ae
