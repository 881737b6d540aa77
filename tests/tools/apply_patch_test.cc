// apply_patch: a table of patches over a real directory — each grammar feature, each fuzz
// level, moves, deletes, every error message, all-or-nothing commits, sandbox refusals.
#include <sys/stat.h>

#include <map>
#include <regex>

#include "base/utf8.h"
#include "engine/tools/apply_patch/parser.h"
#include "engine/tools/apply_patch/seek.h"
#include "engine/tools/apply_patch/tool.h"
#include "tool_fixture.h"

namespace ae::testing {
namespace {

struct Case {
  const char* name;
  std::map<std::string, std::string> before;
  std::string patch;
  // After: path -> content; a path mapped to "<absent>" must not exist.
  std::map<std::string, std::string> after;
  std::string output;  // exact, with "Wall time: W" and "<root>" for the variable parts
};

constexpr char kAbsent[] = "<absent>";

std::string Success(const std::string& lines) {
  return "Exit code: 0\nWall time: W seconds\nOutput:\nSuccess. Updated the following files:\n" +
         lines;
}
std::string Failed(const std::string& message) {
  return "apply_patch verification failed: " + message;
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"add",
       {},
       "*** Begin Patch\n*** Add File: hello.txt\n+hello\n+world\n*** End Patch",
       {{"hello.txt", "hello\nworld\n"}},
       Success("A hello.txt\n")},
      {"add_nested_dirs_and_empty_line",
       {},
       "*** Begin Patch\n*** Add File: a/b/c.txt\n+x\n+\n+y\n*** End Patch\n",
       {{"a/b/c.txt", "x\n\ny\n"}},
       Success("A a/b/c.txt\n")},
      {"delete",
       {{"gone.txt", "bye\n"}},
       "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
       {{"gone.txt", kAbsent}},
       Success("D gone.txt\n")},
      {"update_with_bare_context_marker",
       {{"f.txt", "a\nb\nc\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n a\n-b\n+B\n c\n*** End Patch",
       {{"f.txt", "a\nB\nc\n"}},
       Success("M f.txt\n")},
      {"first_chunk_without_marker",
       {{"f.txt", "a\nb\nc\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n a\n-b\n+B\n*** End Patch",
       {{"f.txt", "a\nB\nc\n"}},
       Success("M f.txt\n")},
      {"context_marker_with_text_picks_the_right_place",
       {{"f.py", "def f():\n    pass\ndef g():\n    pass\n"}},
       "*** Begin Patch\n*** Update File: f.py\n@@ def g():\n-    pass\n+    return 1\n*** End "
       "Patch",
       {{"f.py", "def f():\n    pass\ndef g():\n    return 1\n"}},
       Success("M f.py\n")},
      {"several_chunks",
       {{"f.txt", "1\n2\n3\n4\n5\n6\n7\n8\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-2\n+two\n@@\n 6\n-7\n+seven\n*** End Patch",
       {{"f.txt", "1\ntwo\n3\n4\n5\n6\nseven\n8\n"}},
       Success("M f.txt\n")},
      {"end_of_file_prefers_the_last_match",
       {{"f.txt", "x\ny\nx\ny\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n x\n-y\n+z\n*** End of File\n*** End Patch",
       {{"f.txt", "x\ny\nx\nz\n"}},
       Success("M f.txt\n")},
      {"pure_addition_after_context",
       {{"f.txt", "head\nmid\ntail\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@ head\n+inserted\n*** End Patch",
       {{"f.txt", "head\ninserted\nmid\ntail\n"}},
       Success("M f.txt\n")},
      {"pure_addition_without_context_appends",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n+b\n*** End Patch",
       {{"f.txt", "a\nb\n"}},
       Success("M f.txt\n")},
      {"move_with_edit",
       {{"old.txt", "a\nb\n"}},
       "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new/dir/new.txt\n@@\n-a\n+A\n*** "
       "End Patch",
       {{"old.txt", kAbsent}, {"new/dir/new.txt", "A\nb\n"}},
       Success("M new/dir/new.txt\n")},
      {"add_update_delete_in_one_patch",
       {{"f.txt", "one\n"}, {"gone.txt", "x\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+uno\n*** Add File: "
       "b/new.txt\n+new\n*** "
       "Delete File: gone.txt\n*** End Patch",
       {{"f.txt", "uno\n"}, {"b/new.txt", "new\n"}, {"gone.txt", kAbsent}},
       Success("A b/new.txt\nM f.txt\nD gone.txt\n")},
      {"fuzz_trailing_whitespace",
       {{"f.txt", "foo   \nbar\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-foo\n+FOO\n*** End Patch",
       {{"f.txt", "FOO\nbar\n"}},
       Success("M f.txt\n")},
      {"fuzz_surrounding_whitespace",
       {{"f.txt", "\t  foo\nbar\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-foo\n+FOO\n*** End Patch",
       {{"f.txt", "FOO\nbar\n"}},
       Success("M f.txt\n")},
      {"fuzz_unicode_punctuation",
       {{"f.txt", "a \u2013 b \u201cq\u201d it\u2019s\u00a0x\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-a - b \"q\" it's x\n+plain\n*** End Patch",
       {{"f.txt", "plain\n"}},
       Success("M f.txt\n")},
      {"heredoc_wrapper",
       {},
       "<<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+h\n*** End Patch\nEOF\n",
       {{"h.txt", "h\n"}},
       Success("A h.txt\n")},
      {"heredoc_wrapper_with_command",
       {},
       "apply_patch <<EOF\n*** Begin Patch\n*** Add File: h.txt\n+h\n*** End Patch\nEOF",
       {{"h.txt", "h\n"}},
       Success("A h.txt\n")},
      {"whitespace_around_markers",
       {{"f.txt", "a\n"}},
       "  *** Begin Patch  \n*** Update File:  f.txt \n@@\n-a\n+b\n  *** End Patch  ",
       {{"f.txt", "b\n"}},
       Success("M f.txt\n")},
      {"crlf_file_keeps_crlf",
       {{"f.txt", "a\r\nb\r\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-b\n+c\n*** End Patch",
       {{"f.txt", "a\r\nc\r\n"}},
       Success("M f.txt\n")},
      {"missing_final_newline_is_added",
       {{"f.txt", "a\nb"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-b\n+c\n*** End Patch",
       {{"f.txt", "a\nc\n"}},
       Success("M f.txt\n")},
      {"trailing_empty_context_line_stands_for_the_final_newline",
       {{"f.txt", "a\nb\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n a\n-b\n+c\n\n*** End Patch",
       {{"f.txt", "a\nc\n"}},
       Success("M f.txt\n")},
      // Errors: nothing changes, the message is exact.
      {"err_first_line",
       {},
       "bad",
       {},
       Failed("invalid patch: The first line of the patch must be '*** Begin Patch'")},
      {"err_last_line",
       {},
       "*** Begin Patch\nbad",
       {},
       Failed("invalid patch: The last line of the patch must be '*** End Patch'")},
      {"err_bad_header",
       {},
       "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
       {},
       Failed("invalid hunk at line 2, '*** Frobnicate File: x' is not a valid hunk header. Valid "
              "hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: "
              "{path}'")},
      {"err_empty_update",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("invalid hunk at line 2, Update file hunk for path 'f.txt' is empty")},
      {"err_unexpected_line",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\nxyz\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("invalid hunk at line 4, Unexpected line found in update hunk: 'xyz'. Every line "
              "should start with ' ' (context line), '+' (added line), or '-' (removed line)")},
      {"err_second_chunk_without_marker",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\nzzz\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("invalid hunk at line 6, Expected update hunk to start with a @@ context marker, "
              "got: 'zzz'")},
      {"err_marker_without_lines",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("invalid hunk at line 4, Update hunk does not contain any lines")},
      {"err_no_hunks", {}, "*** Begin Patch\n*** End Patch", {}, Failed("No files were modified.")},
      {"err_lines_not_found",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-nothere\n-either\n+x\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("Failed to find expected lines in <root>/f.txt:\nnothere\neither")},
      {"err_context_not_found",
       {{"f.txt", "a\n"}},
       "*** Begin Patch\n*** Update File: f.txt\n@@ def h():\n-a\n+b\n*** End Patch",
       {{"f.txt", "a\n"}},
       Failed("Failed to find context 'def h():' in <root>/f.txt")},
      {"err_update_missing_file",
       {},
       "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch",
       {{"nope.txt", kAbsent}},
       Failed("Failed to read file to update <root>/nope.txt: No such file or directory (os "
              "error 2)")},
      {"err_delete_missing_file",
       {},
       "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch",
       {},
       Failed("Failed to read <root>/nope.txt: No such file or directory (os error 2)")},
      {"err_second_file_fails_verification_first_untouched",
       {{"a.txt", "a\n"}, {"b.txt", "b\n"}},
       "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: new.txt\n+n\n*** Update "
       "File: b.txt\n@@\n-nomatch\n+B\n*** End Patch",
       {{"a.txt", "a\n"}, {"b.txt", "b\n"}, {"new.txt", kAbsent}},
       Failed("Failed to find expected lines in <root>/b.txt:\nnomatch")},
  };
  return cases;
}

class ApplyPatchTest : public ToolTest {
 protected:
  std::string Normalize(std::string out) const {
    out = std::regex_replace(out, std::regex("Wall time: [0-9]+\\.[0-9] seconds"),
                             "Wall time: W seconds");
    size_t pos;
    while ((pos = out.find(root_)) != std::string::npos) out.replace(pos, root_.size(), "<root>");
    return out;
  }
  std::unique_ptr<ToolRouter> router_ = MakeDefaultRouter();
};

TEST_F(ApplyPatchTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    for (const auto& [path, content] : c.before) Write(path, content);
    size_t first_event = sink_.events.size();
    ToolResult r = Call(*router_, "apply_patch", c.patch, /*custom=*/true);
    EXPECT_EQ(Normalize(r.output), c.output);
    bool ok = c.output.starts_with("Exit code: 0");
    EXPECT_EQ(r.success, ok);
    EXPECT_TRUE(r.custom);
    for (const auto& [path, content] : c.after) {
      if (content == kAbsent) {
        EXPECT_FALSE(Exists(path)) << path;
      } else {
        EXPECT_EQ(Read(path), content) << path;
      }
    }
    // Every patch, applied or not, gets one file_change item: started, then completed.
    std::vector<Item> items = Items(first_event);
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].id, items[1].id);
    const auto& done = std::get<FileChangeItem>(items[1].details);
    EXPECT_EQ(std::get<FileChangeItem>(items[0].details).status, ItemStatus::kInProgress);
    EXPECT_EQ(done.status, ok ? ItemStatus::kCompleted : ItemStatus::kFailed);
    for (size_t i = 0; i < done.changes.size(); ++i) {
      EXPECT_TRUE(done.changes[i].path.starts_with(root_ + "/"));
      if (i > 0) {
        EXPECT_LT(done.changes[i - 1].path, done.changes[i].path);
      }
    }
  }
}

TEST_F(ApplyPatchTest, ItemListsChangesSortedWithDiffs) {
  Write("f.txt", "one\n");
  Write("gone.txt", "x\n");
  Write("old.txt", "m\n");
  Call(*router_, "apply_patch",
       "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+uno\n*** Add File: b/new.txt\n+new\n"
       "*** Delete File: gone.txt\n*** Update File: old.txt\n*** Move to: moved.txt\n@@\n-m\n+M\n"
       "*** End Patch",
       true);
  const auto& item = Completed<FileChangeItem>();
  ASSERT_EQ(item.changes.size(), 5u);
  std::vector<std::pair<std::string, FileChangeKind>> got;
  for (const auto& c : item.changes) got.emplace_back(c.path, c.kind);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, FileChangeKind>>{
                     {Path("b/new.txt"), FileChangeKind::kAdd},
                     {Path("f.txt"), FileChangeKind::kUpdate},
                     {Path("gone.txt"), FileChangeKind::kDelete},
                     {Path("moved.txt"), FileChangeKind::kAdd},
                     {Path("old.txt"), FileChangeKind::kDelete}}));
  EXPECT_EQ(item.changes[0].diff, "--- /dev/null\n+++ b/b/new.txt\n@@ -0,0 +1,1 @@\n+new\n");
  EXPECT_EQ(item.changes[1].diff, "--- a/f.txt\n+++ b/f.txt\n@@ -1,1 +1,1 @@\n-one\n+uno\n");
  EXPECT_EQ(item.changes[2].diff, "--- a/gone.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n");
  EXPECT_EQ(item.changes[3].diff,
            "rename from old.txt\nrename to moved.txt\n--- a/old.txt\n+++ b/moved.txt\n"
            "@@ -1,1 +1,1 @@\n-m\n+M\n");
}

TEST_F(ApplyPatchTest, DiffHasContextAndLineNumbers) {
  std::string file;
  for (int i = 1; i <= 20; ++i) file += std::to_string(i) + "\n";
  Write("f.txt", file);
  Call(*router_, "apply_patch",
       "*** Begin Patch\n*** Update File: f.txt\n@@\n 9\n-10\n+ten\n+TEN\n 11\n@@\n-18\n*** End "
       "Patch",
       true);
  EXPECT_EQ(Completed<FileChangeItem>().changes[0].diff,
            "--- a/f.txt\n+++ b/f.txt\n"
            "@@ -7,7 +7,8 @@\n 7\n 8\n 9\n-10\n+ten\n+TEN\n 11\n 12\n 13\n"
            "@@ -15,6 +16,5 @@\n 15\n 16\n 17\n-18\n 19\n 20\n");
}

TEST_F(ApplyPatchTest, MoveKeepsTheMode) {
  Write("run.sh", "echo a\n");
  ::chmod(Path("run.sh").c_str(), 0751);
  Write("keep.sh", "echo k\n");
  ::chmod(Path("keep.sh").c_str(), 0700);
  ToolResult r =
      Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo "
           "a\n+echo b\n*** Update File: keep.sh\n@@\n-echo k\n+echo K\n*** End Patch",
           true);
  ASSERT_TRUE(r.success) << r.output;
  struct stat st {};
  ASSERT_EQ(::stat(Path("bin/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0751u);
  ASSERT_EQ(::stat(Path("keep.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(Read("keep.sh"), "echo K\n");
}

TEST_F(ApplyPatchTest, AllOrNothingWhenAWriteFailsMidway) {
  // The second file's name leaves no room for its temp file's name (ENAMETOOLONG), a failure
  // that only shows when writing, after a.txt has already been replaced.
  Write("a.txt", "a\n");
  std::string long_name(250, 'z');
  ToolResult r = Call(*router_, "apply_patch",
                      "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: "
                      "sub/" +
                          long_name + "\n+x\n*** End Patch",
                      true);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch failed: Failed to write file <root>/sub/" + long_name +
                ": File name too long (os error 36)\n(no file was changed: the patch was rolled "
                "back)");
  EXPECT_EQ(Read("a.txt"), "a\n");
  EXPECT_FALSE(Exists("sub"));  // the directory made for the add is gone too
  EXPECT_EQ(Completed<FileChangeItem>().status, ItemStatus::kFailed);
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string().find(".ae-tmp-"), std::string::npos) << e.path();
  }
}

TEST_F(ApplyPatchTest, AcceptedAsAFunctionWithInput) {
  ToolResult r = Call(*router_, "apply_patch",
                      "{\"input\":\"*** Begin Patch\\n*** Add File: f.txt\\n+x\\n*** End Patch\"}");
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_FALSE(r.custom);
  EXPECT_EQ(Read("f.txt"), "x\n");
  r = Call(*router_, "apply_patch", "{\"patch\":\"x\"}");
  EXPECT_EQ(r.output, "failed to parse function arguments: missing string field `input`");
}

TEST_F(ApplyPatchTest, ReadOnlySandboxRefusesEveryWrite) {
  turn_.sandbox.mode = sandbox::Mode::kReadOnly;
  Write("f.txt", "a\n");
  ToolResult r = Call(*router_, "apply_patch",
                      "*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+b\n*** End Patch", true);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch rejected: writing <root>/f.txt is not allowed: the sandbox is read-only, "
            "so apply_patch cannot change any file. No file was changed.");
  EXPECT_EQ(Read("f.txt"), "a\n");
  const auto& item = Completed<FileChangeItem>();
  EXPECT_EQ(item.status, ItemStatus::kFailed);
  ASSERT_EQ(item.changes.size(), 1u);
  EXPECT_EQ(item.changes[0].path, Path("f.txt"));
}

TEST_F(ApplyPatchTest, WorkspaceWriteRefusesOutsideTheRootsAndTheCarveOuts) {
  std::filesystem::create_directories(Path("ws/.git"));
  std::filesystem::create_directories(Path("other"));
  ConfineTo("ws");

  ToolResult r =
      Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Add File: inside.txt\n+ok\n*** Add File: ../other/x.txt\n"
           "+no\n*** End Patch",
           true);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch rejected: writing <root>/other/x.txt is not allowed: it is outside the "
            "writable roots of the workspace-write sandbox (<root>/ws). No file was changed.");
  EXPECT_FALSE(Exists("ws/inside.txt"));
  EXPECT_FALSE(Exists("other/x.txt"));

  r = Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Add File: .git/hooks/x\n+no\n*** End Patch", true);
  EXPECT_FALSE(r.success);
  EXPECT_FALSE(Exists("ws/.git/hooks/x"));

  // A symlink inside the workspace does not lead a write outside it.
  std::filesystem::create_directory_symlink(Path("other"), Path("ws/link"));
  r = Call(*router_, "apply_patch", "*** Begin Patch\n*** Add File: link/y.txt\n+no\n*** End Patch",
           true);
  EXPECT_FALSE(r.success) << r.output;
  EXPECT_FALSE(Exists("other/y.txt"));

  r = Call(*router_, "apply_patch", "*** Begin Patch\n*** Add File: inside.txt\n+ok\n*** End Patch",
           true);
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_EQ(Read("ws/inside.txt"), "ok\n");
}

TEST(PatchParser, HunksAndChunks) {
  auto p = patch::ParsePatch(
      "*** Begin Patch\n*** Add File: a.py\n+x\n*** Delete File: d.py\n*** Update File: u.py\n"
      "*** Move to: v.py\n@@ def f():\n-    pass\n+    return 1\n@@\n+tail\n*** End of File\n"
      "*** End Patch");
  ASSERT_TRUE(p.ok()) << p.message();
  ASSERT_EQ(p->hunks.size(), 3u);
  EXPECT_EQ(p->hunks[0].contents, "x\n");
  EXPECT_EQ(p->hunks[1].kind, patch::Hunk::Kind::kDelete);
  const auto& u = p->hunks[2];
  EXPECT_EQ(u.move_to, "v.py");
  ASSERT_EQ(u.chunks.size(), 2u);
  EXPECT_EQ(u.chunks[0].context, "def f():");
  EXPECT_EQ(u.chunks[0].old_lines, std::vector<std::string>{"    pass"});
  EXPECT_EQ(u.chunks[0].new_lines, std::vector<std::string>{"    return 1"});
  EXPECT_FALSE(u.chunks[1].context.has_value());
  EXPECT_TRUE(u.chunks[1].end_of_file);
}

// The kernel reads a path only up to its first NUL, so such a path would write another file
// than the one the patch names (found by tests/fuzz/apply_patch_fuzz.cc).
TEST(PatchParser, APathHoldingNulIsRefused) {
  using namespace std::string_literals;
  auto add = patch::ParsePatch("*** Begin Patch\n*** Add File: a.py\0.sh\n+x\n*** End Patch"s);
  ASSERT_FALSE(add.ok());
  EXPECT_EQ(add.message(), "invalid hunk at line 2, the path holds a NUL byte");
  auto move = patch::ParsePatch(
      "*** Begin Patch\n*** Update File: u.py\n*** Move to: v\0w\n@@\n-a\n+b\n*** End Patch"s);
  ASSERT_FALSE(move.ok());
  EXPECT_EQ(move.message(), "invalid hunk at line 2, the path holds a NUL byte");
}

TEST(PatchSeek, FuzzLevelsInOrder) {
  std::vector<std::string_view> lines = {"a  ", "  a", "a\u2014b"};
  EXPECT_EQ(patch::SeekSequence(lines, {"a  "}, 0, false), 0u);  // exact
  EXPECT_EQ(patch::SeekSequence(lines, {"a"}, 0, false), 0u);    // trailing whitespace
  EXPECT_EQ(patch::SeekSequence(lines, {"a"}, 1, false), 1u);    // surrounding whitespace
  EXPECT_EQ(patch::SeekSequence(lines, {"a-b"}, 0, false), 2u);  // punctuation
  EXPECT_EQ(patch::SeekSequence(lines, {"zzz"}, 0, false), std::nullopt);
  EXPECT_EQ(patch::SeekSequence(lines, {}, 2, false), 2u);
  EXPECT_EQ(patch::NormalizePunctuation("  \u201cx\u201d \u2018y\u2019\u00a0\u2212 "),
            "\"x\" 'y' -");
}

}  // namespace
}  // namespace ae::testing

namespace ae::testing {
namespace {

TEST(HeredocPatch, RecognisesOnlyAPureApplyPatchScript) {
  auto p = ExtractHeredocPatch("apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF\n");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->patch, "*** Begin Patch\n*** End Patch\n");
  EXPECT_EQ(p->cd, "");
  p = ExtractHeredocPatch("cd 'sub dir' && applypatch <<PATCH\nbody\nPATCH");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->patch, "body\n");
  EXPECT_EQ(p->cd, "sub dir");
  EXPECT_FALSE(ExtractHeredocPatch("echo hi; apply_patch <<EOF\nx\nEOF").has_value());
  EXPECT_FALSE(ExtractHeredocPatch("apply_patch <<EOF\nx\nEOF\necho after").has_value());
  EXPECT_FALSE(ExtractHeredocPatch("apply_patch <<EOF\nx\n").has_value());
  EXPECT_FALSE(ExtractHeredocPatch("cd $HOME && apply_patch <<EOF\nx\nEOF").has_value());
  EXPECT_FALSE(ExtractHeredocPatch("apply_patchx <<EOF\nx\nEOF").has_value());
}

TEST_F(ApplyPatchTest, ExecCommandHeredocIsAppliedAsAPatch) {
  std::filesystem::create_directories(Path("sub"));
  ToolResult r = Call(
      *router_, "exec_command",
      R"({"cmd":"cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: viaexec.txt\n+hi\n*** End Patch\nEOF\n"})");
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_EQ(Normalize(r.output),
            "Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: W seconds\nOutput:\n"
            "Success. Updated the following files:\nA viaexec.txt\n");
  EXPECT_EQ(Read("sub/viaexec.txt"), "hi\n");
  EXPECT_EQ(Trace(), (std::vector<std::string>{"started item_0 file_change",
                                               "completed item_0 file_change"}));

  r = Call(
      *router_, "shell",
      R"({"command":["apply_patch","*** Begin Patch\n*** Delete File: sub/viaexec.txt\n*** End Patch"]})");
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_FALSE(Exists("sub/viaexec.txt"));
}

}  // namespace
}  // namespace ae::testing

namespace ae::testing {
namespace {

TEST_F(ApplyPatchTest, BinaryBytesInAFileStayOutOfTheEvents) {
  Write("bin.txt", std::string("keep\xff\xfe\nold\n"));
  ToolResult r =
      Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Update File: bin.txt\n@@\n keep\xEF\xBF\xBD\n-old\n+new\n"
           "*** End Patch",
           true);
  // The replacement character in the patch does not match the raw bytes: nothing changes.
  EXPECT_FALSE(r.success);
  r = Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Update File: bin.txt\n@@\n-old\n+new\n*** End Patch", true);
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_EQ(Read("bin.txt"), std::string("keep\xff\xfe\nnew\n"));
  const auto& item = Completed<FileChangeItem>(1);
  EXPECT_TRUE(IsValidUtf8(item.changes[0].diff));
  EXPECT_NE(item.changes[0].diff.find(" keep\xEF\xBF\xBD\xEF\xBF\xBD\n-old\n+new\n"),
            std::string::npos)
      << item.changes[0].diff;
}

}  // namespace
}  // namespace ae::testing

namespace ae::testing {
namespace {

// A model that runs `mkfifo p` and then patches `p`: refused at once, never opened (opening a
// FIFO blocks until a writer comes), and reported as a failed file_change.
TEST_F(ApplyPatchTest, SpecialFilesAreRefusedNotOpened) {
  ASSERT_EQ(::mkfifo(Path("p").c_str(), 0644), 0);
  ToolResult r = Call(*router_, "apply_patch",
                      "*** Begin Patch\n*** Update File: p\n@@\n-a\n+b\n*** End Patch", true);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch verification failed: Failed to read file to update <root>/p: <root>/p "
            "is a FIFO; apply_patch only changes regular files");
  EXPECT_EQ(Completed<FileChangeItem>().status, ItemStatus::kFailed);
  r = Call(*router_, "apply_patch", "*** Begin Patch\n*** Add File: p\n+x\n*** End Patch", true);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch verification failed: Failed to write file <root>/p: <root>/p is a FIFO; "
            "apply_patch only changes regular files");
  r = Call(*router_, "apply_patch", "*** Begin Patch\n*** Delete File: p\n*** End Patch", true);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch verification failed: Failed to read <root>/p: <root>/p is a FIFO; "
            "apply_patch only changes regular files");
  struct stat st {};
  ASSERT_EQ(::lstat(Path("p").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(ApplyPatchTest, GitDirectoriesStayReadOnlyAtAnyDepth) {
  std::filesystem::create_directories(Path("ws/.git/hooks"));
  std::filesystem::create_directories(Path("ws/vendor/lib/.git/hooks"));
  ConfineTo("ws");
  const std::string refused =
      " is not allowed: .git and .agentexec directories stay read-only in the workspace-write "
      "sandbox. No file was changed.";
  // An absolute path into .git, a nested repository's .git, .agentexec below the root.
  for (const std::string& path :
       {Path("ws/.git/hooks/pre-commit"), std::string("vendor/lib/.git/hooks/pre-commit"),
        std::string("sub/../.git/config"), std::string("a/.agentexec/config.toml")}) {
    ToolResult r = Call(*router_, "apply_patch",
                        "*** Begin Patch\n*** Add File: " + path + "\n+x\n*** End Patch", true);
    EXPECT_FALSE(r.success) << path;
    EXPECT_TRUE(r.output.starts_with("apply_patch rejected: writing ")) << r.output;
    EXPECT_TRUE(r.output.ends_with(refused)) << r.output;
  }
  EXPECT_FALSE(Exists("ws/.git/hooks/pre-commit"));
  EXPECT_FALSE(Exists("ws/vendor/lib/.git/hooks/pre-commit"));
  EXPECT_FALSE(Exists("ws/.git/config"));
  EXPECT_FALSE(Exists("ws/a"));
  // A symlink planted in the workspace does not lead there either.
  std::filesystem::create_directory_symlink(Path("ws/.git/hooks"), Path("ws/h"));
  ToolResult r = Call(*router_, "apply_patch",
                      "*** Begin Patch\n*** Add File: h/pre-commit\n+x\n*** End Patch", true);
  EXPECT_EQ(Normalize(r.output), "apply_patch rejected: writing <root>/ws/h/pre-commit" + refused);
  EXPECT_FALSE(Exists("ws/.git/hooks/pre-commit"));
}

TEST_F(ApplyPatchTest, ASymlinkAsTheLastComponentIsCheckedWhereItLands) {
  std::filesystem::create_directories(Path("ws"));
  std::filesystem::create_directories(Path("other"));
  Write("other/target.txt", "a\n");
  Write("ws/real.txt", "a\n");
  std::filesystem::create_symlink(Path("other/target.txt"), Path("ws/out.txt"));
  std::filesystem::create_symlink(Path("ws/real.txt"), Path("ws/in.txt"));
  ConfineTo("ws");
  ToolResult r = Call(*router_, "apply_patch",
                      "*** Begin Patch\n*** Update File: out.txt\n@@\n-a\n+b\n*** End Patch", true);
  EXPECT_EQ(Normalize(r.output),
            "apply_patch rejected: writing <root>/ws/out.txt is not allowed: it is outside the "
            "writable roots of the workspace-write sandbox (<root>/ws). No file was changed.");
  EXPECT_EQ(Read("other/target.txt"), "a\n");
  // Inside the workspace a write through a symlink lands on its target, as a command's would.
  r = Call(*router_, "apply_patch",
           "*** Begin Patch\n*** Update File: in.txt\n@@\n-a\n+b\n*** End Patch", true);
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_EQ(Read("ws/real.txt"), "b\n");
  EXPECT_TRUE(std::filesystem::is_symlink(Path("ws/in.txt")));
}

}  // namespace
}  // namespace ae::testing
