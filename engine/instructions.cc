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

namespace {

// In `dir_fd` (beneath it), the first of AGENTS.override.md and AGENTS.md that exists, as
// codex reads each directory: an override, even an empty one, shadows the AGENTS.md beside
// it. kFileNotFound when neither is there; `name` is the one read (or refused).
Result<std::string> ReadAgentsFile(int dir_fd, const std::filesystem::path& rel_dir,
                                   const std::filesystem::path& dir, size_t max_bytes,
                                   std::filesystem::path* name) {
  Result<std::string> part = MakeError("", kFileNotFound);
  for (const char* candidate : {"AGENTS.override.md", "AGENTS.md"}) {
    *name = dir / candidate;
    part = ReadRegularFileBeneath(dir_fd, (rel_dir / candidate).string(), max_bytes);
    if (part.ok() || part.error().code != kFileNotFound) break;
  }
  return part;
}

std::string Trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

}  // namespace

std::string GlobalInstructions(const std::vector<std::string>& homes, size_t max_bytes,
                               std::vector<std::string>* warnings) {
  for (const std::string& home : homes) {
    if (home.empty()) continue;
    Fd home_fd(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!home_fd) continue;
    std::filesystem::path name;
    Result<std::string> part = ReadAgentsFile(home_fd.get(), ".", home, max_bytes, &name);
    if (!part.ok()) {
      if (part.error().code == kFileNotFound) continue;
      if (warnings != nullptr) {
        warnings->push_back(
            fmt::format("{} is not sent to the model: {}", name.string(), part.message()));
      }
      return {};
    }
    return Trimmed(*part);
  }
  return {};
}

namespace {

// The project's AGENTS.md files from the git root (or cwd outside a repository) down to cwd,
// joined, within max_bytes.
std::string ProjectDocText(const std::string& cwd, size_t max_bytes,
                           std::vector<std::string>* warnings) {
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
  std::string docs;
  for (auto it = dirs.rbegin(); top_fd && it != dirs.rend(); ++it) {
    if (docs.size() >= max_bytes) break;
    fs::path name;
    Result<std::string> part = ReadAgentsFile(top_fd.get(), it->lexically_relative(top), *it,
                                              max_bytes - docs.size(), &name);
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
  return docs;
}

}  // namespace

std::string ProjectDocs(const std::string& cwd, size_t max_bytes,
                        std::vector<std::string>* warnings, const std::string& global) {
  std::string docs = max_bytes == 0 ? std::string() : ProjectDocText(cwd, max_bytes, warnings);
  if (docs.empty() && global.empty()) return {};
  if (docs.empty()) {
    return fmt::format("# AGENTS.md instructions\n\n<INSTRUCTIONS>\n{}\n</INSTRUCTIONS>", global);
  }
  if (!global.empty()) docs = global + "\n\n--- project-doc ---\n\n" + docs;
  return fmt::format("# AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\n{}\n</INSTRUCTIONS>", cwd,
                     docs);
}

}  // namespace ae
