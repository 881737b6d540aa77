// The apply_patch parser, planner and commit (engine/tools/apply_patch) on arbitrary patch
// text, in a fresh scratch directory per input. Invariants: no crash; errors have messages;
// a plan names every file it touches once; after a successful commit every file holds
// exactly the planned content (or is gone), and nothing else in the directory changed.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "engine/tools/apply_patch/applier.h"
#include "engine/tools/apply_patch/parser.h"
#include "sandbox/confined_fs.h"
#include "sandbox/policy.h"
#include "tests/fuzz/fuzz_util.h"

namespace fs = std::filesystem;

namespace {

const std::string& Base() {
  // tmpfs when there is one: a commit fsyncs every file it writes.
  return ae::fuzz::ScratchDir(fs::is_directory("/dev/shm") ? "/dev/shm/ae-fuzz-patch-XXXXXX"
                                                           : "/tmp/ae-fuzz-patch-XXXXXX");
}

const std::map<std::string, std::string>& Fixture() {
  static const std::map<std::string, std::string> files{
      {"a.txt", "alpha\nbeta\ngamma\ndelta\n"},
      {"sub/b.txt", "one\ntwo\nthree\n"},
      {"empty.txt", ""},
      {"noeol.txt", "last line without newline"},
      {"crlf.txt", "x\r\ny\r\n"},
  };
  return files;
}

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Path -> content of every regular file under `root`.
std::map<std::string, std::string> Snapshot(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out[e.path().string()] = Slurp(e.path());
  }
  return out;
}

bool Inside(const std::string& root, const std::string& abs) {
  return abs.size() > root.size() + 1 && abs.compare(0, root.size() + 1, root + "/") == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ae::Result<ae::patch::Patch> patch = ae::patch::ParsePatch(text);
  if (!patch.ok()) {
    ae::fuzz::Check(!patch.message().empty(), "a parse error without a message");
    return 0;
  }
  const std::string root = Base() + "/run";
  // Only paths inside the scratch directory: the harness must not read or write elsewhere.
  for (const ae::patch::Hunk& h : patch->hunks) {
    // Known bug (apply_patch/known/nul_in_path.patch): open() stops at the NUL, so the file
    // written is not the one planned.
    if (ae::fuzz::kPendingPatchNulPath &&
        (h.path.find('\0') != std::string::npos || h.move_to.find('\0') != std::string::npos)) {
      return 0;
    }
    if (!Inside(root, ae::patch::ResolvePath(root, h.path))) return 0;
    if (!h.move_to.empty() && !Inside(root, ae::patch::ResolvePath(root, h.move_to))) return 0;
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  for (const auto& [name, content] : Fixture()) {
    fs::create_directories(fs::path(root + "/" + name).parent_path());
    std::ofstream(root + "/" + name, std::ios::binary) << content;
  }
  std::map<std::string, std::string> before = Snapshot(root);

  (void)ae::patch::NamedChanges(*patch, root);
  // The workspace-write policy a run has: the patch planner and commit open every file
  // beneath the root through ConfinedFs, as the apply_patch tool does.
  ae::sandbox::Policy policy;
  policy.mode = ae::sandbox::Mode::kWorkspaceWrite;
  policy.writable_roots = {root};
  policy.read_only_carveouts = {root + "/.git", root + "/.agentexec"};
  const ae::sandbox::ConfinedFs cfs(policy);
  ae::Result<ae::patch::Plan> plan = ae::patch::PlanPatch(*patch, root, cfs);
  if (!plan.ok()) {
    ae::fuzz::Check(!plan.message().empty(), "a plan error without a message");
    ae::fuzz::Check(Snapshot(root) == before, "a failed plan changed files");
    return 0;
  }
  std::map<std::string, std::string> expected = before;
  std::string last;
  for (const ae::patch::FileOp& op : plan->ops) {
    ae::fuzz::Check(op.path > last, "plan ops not sorted or not unique", op.path);
    last = op.path;
    if (op.content) {
      expected[op.path] = *op.content;
    } else {
      expected.erase(op.path);
    }
  }
  ae::Status committed = ae::patch::Commit(*plan, cfs);
  if (!committed.ok()) {
    ae::fuzz::Check(!committed.message().empty(), "a commit error without a message");
    ae::fuzz::Check(Snapshot(root) == before, "a failed commit left files changed");
    return 0;
  }
  ae::fuzz::Check(Snapshot(root) == expected, "the files differ from the plan");
  return 0;
}
