#include "runner/prompt.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

namespace ae {
namespace {

using namespace std::chrono_literals;

// A pipe standing in for stdin. The write end stays open unless closed, like a CI runner that
// never closes the child's stdin.
struct Pipe {
  Pipe() { EXPECT_EQ(::pipe(fds), 0); }
  ~Pipe() {
    CloseWrite();
    ::close(fds[0]);
  }
  void Write(std::string_view data) {
    ASSERT_EQ(::write(fds[1], data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  void CloseWrite() {
    if (fds[1] >= 0) ::close(fds[1]);
    fds[1] = -1;
  }
  int fds[2] = {-1, -1};
};

// Feeds `bytes` from another thread (more than a pipe holds must not deadlock), then EOF.
Result<std::string> FromStdin(std::string_view bytes) {
  Pipe pipe;
  std::thread writer([&] {
    pipe.Write(bytes);
    pipe.CloseWrite();
  });
  Result<std::string> prompt = ReadPrompt(std::nullopt, pipe.fds[0]);
  writer.join();
  return prompt;
}

TEST(Prompt, ArgumentAloneNeverReadsStdin) {
  // Without append_piped_stdin (review's PROMPT) a prompt argument leaves stdin untouched.
  Pipe pipe;
  pipe.Write("x");  // stays in the pipe if nobody reads it
  auto done = std::async(std::launch::async,
                         [&] { return ReadPrompt(std::string("fix the build"), pipe.fds[0]); });
  // A generous watchdog, not a timing assertion: a read would block until the pipe closes.
  if (done.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "ReadPrompt blocked on stdin although a prompt argument was given";
    pipe.CloseWrite();
  }
  Result<std::string> prompt = done.get();
  ASSERT_TRUE(prompt.ok()) << prompt.message();
  EXPECT_EQ(*prompt, "fix the build");
  ASSERT_EQ(::fcntl(pipe.fds[0], F_SETFL, O_NONBLOCK), 0);
  char c = 0;
  EXPECT_EQ(::read(pipe.fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
}

PromptOptions Appending(std::chrono::milliseconds wait = 30s,
                        std::chrono::milliseconds idle = 30s) {
  PromptOptions options;
  options.append_piped_stdin = true;
  options.first_byte_wait = wait;
  options.idle_limit = idle;
  return options;
}

// `echo "my output" | agentexec "Summarize this concisely"`, as codex's own test has it.
TEST(Prompt, PipedStdinThatEndsIsAppendedAsCodexDoes) {
  for (std::string_view input : {"my output\n", "my output"}) {
    Pipe pipe;
    std::thread writer([&] {
      pipe.Write(input);
      pipe.CloseWrite();
    });
    std::string note;
    Result<std::string> prompt =
        ReadPrompt(std::string("Summarize this concisely"), pipe.fds[0], Appending(), &note);
    writer.join();
    ASSERT_TRUE(prompt.ok()) << prompt.message();
    EXPECT_EQ(*prompt, "Summarize this concisely\n\n<stdin>\nmy output\n</stdin>");
    EXPECT_EQ(note, "");
  }
}

TEST(Prompt, EmptyOrBlankPipedStdinLeavesThePromptAlone) {
  for (std::string_view input : {"", " \n\t"}) {
    Pipe pipe;
    pipe.Write(input);
    pipe.CloseWrite();
    std::string note;
    Result<std::string> prompt = ReadPrompt(std::string("fix it"), pipe.fds[0], Appending(), &note);
    ASSERT_TRUE(prompt.ok()) << prompt.message();
    EXPECT_EQ(*prompt, "fix it");
    EXPECT_EQ(note, "");
  }
}

TEST(Prompt, AFileOnStdinIsAppendedAndDevNullIsNot) {
  char path[] = "/tmp/prompt_stdin_XXXXXX";
  int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ASSERT_EQ(::write(file, "diff --git a b\n", 15), 15);
  ASSERT_EQ(::lseek(file, 0, SEEK_SET), 0);
  EXPECT_EQ(*ReadPrompt(std::string("review this"), file, Appending()),
            "review this\n\n<stdin>\ndiff --git a b\n</stdin>");
  ::close(file);
  ::unlink(path);
  int null = ::open("/dev/null", O_RDONLY);
  EXPECT_EQ(*ReadPrompt(std::string("review this"), null, Appending()), "review this");
  ::close(null);
}

// The CI trap: a runner hands the step a pipe it never closes and never writes to.
TEST(Prompt, APipeThatStaysSilentIsLeftUnreadWithANote) {
  Pipe pipe;
  std::string note;
  Result<std::string> prompt =
      ReadPrompt(std::string("fix the build"), pipe.fds[0], Appending(50ms), &note);
  ASSERT_TRUE(prompt.ok()) << prompt.message();
  EXPECT_EQ(*prompt, "fix the build");
  EXPECT_EQ(note,
            "note: stdin is open but sent nothing within 0.05 s, so only the prompt argument is "
            "used (redirect stdin from /dev/null to skip this wait)");
}

TEST(Prompt, APipeThatSendsThenStallsIsAnErrorNotAHang) {
  Pipe pipe;
  pipe.Write("partial");
  Result<std::string> prompt =
      ReadPrompt(std::string("fix the build"), pipe.fds[0], Appending(30s, 50ms));
  EXPECT_EQ(prompt.message(),
            "error: stdin sent 7 bytes, then nothing for 0.05 s without ending; close it (or "
            "redirect it from a file) so agentexec knows the input is complete");
}

TEST(Prompt, InvalidPipedStdinIsAnErrorNamingStdin) {
  Pipe pipe;
  pipe.Write("ok\xFF");
  pipe.CloseWrite();
  EXPECT_EQ(ReadPrompt(std::string("fix"), pipe.fds[0], Appending()).message(),
            "error: stdin is not valid UTF-8 (byte offset 2)");
}

TEST(Prompt, AbsentOrDashReadsAllOfStdinVerbatim) {
  EXPECT_EQ(*FromStdin("prompt from stdin\n"), "prompt from stdin\n");
  Pipe pipe;
  pipe.Write("dash\n");
  pipe.CloseWrite();
  EXPECT_EQ(*ReadPrompt(std::string("-"), pipe.fds[0]), "dash\n");
  std::string big(300000, 'a');
  EXPECT_EQ(FromStdin(big)->size(), big.size());
}

TEST(Prompt, Utf8BomIsStripped) {
  EXPECT_EQ(*FromStdin("\xEF\xBB\xBFhello"), "hello");
}

TEST(Prompt, Utf16WithBomIsDecoded) {
  // "hé😀" : h, U+00E9, U+1F600 (a surrogate pair).
  const std::string le("\xFF\xFEh\x00\xE9\x00\x3D\xD8\x00\xDE", 10);
  const std::string be("\xFE\xFF\x00h\x00\xE9\xD8\x3D\xDE\x00", 10);
  EXPECT_EQ(*FromStdin(le), "h\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(*FromStdin(be), "h\xC3\xA9\xF0\x9F\x98\x80");
}

TEST(Prompt, BrokenUtf16IsAnError) {
  EXPECT_EQ(FromStdin(std::string("\xFF\xFEh\x00i", 5)).message(),
            "error: prompt is not valid UTF-16 (byte offset 4)");
  EXPECT_EQ(FromStdin(std::string("\xFF\xFEh\x00\x00\xDC", 6)).message(),
            "error: prompt is not valid UTF-16 (byte offset 4)");
}

TEST(Prompt, InvalidUtf8NamesTheOffset) {
  EXPECT_EQ(FromStdin("ok \xC3\x28 bad").message(),
            "error: prompt is not valid UTF-8 (byte offset 3)");
  // Offsets count the bytes as received, BOM included.
  EXPECT_EQ(FromStdin("\xEF\xBB\xBF"
                      "ab\xFF")
                .message(),
            "error: prompt is not valid UTF-8 (byte offset 5)");
  EXPECT_EQ(ReadPrompt(std::string("\xED\xA0\x80"), -1).message(),
            "error: prompt is not valid UTF-8 (byte offset 0)");  // a surrogate
  EXPECT_EQ(FromStdin("truncated \xE2\x82").message(),
            "error: prompt is not valid UTF-8 (byte offset 10)");
}

// Read from stdin, codex's sentence comes first (scripts look for it).
TEST(Prompt, EmptyOrBlankIsAnError) {
  const std::string message = "error: No prompt provided. Pass it as an argument or on stdin.";
  const std::string on_stdin =
      "error: No prompt provided via stdin. Pass it as an argument, or pipe it in.";
  EXPECT_EQ(FromStdin("").message(), on_stdin);
  EXPECT_EQ(FromStdin(" \n\t\r\n").message(), on_stdin);
  EXPECT_EQ(FromStdin("\xEF\xBB\xBF").message(), on_stdin);
  EXPECT_EQ(ReadPrompt(std::string(""), -1).message(), message);
  EXPECT_EQ(ReadPrompt(std::string("  "), -1).message(), message);
}

TEST(Prompt, TerminalOnStdinIsAnErrorAtOnce) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    GTEST_SKIP() << "no pseudo-terminal available";
  }
  int tty = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(tty, 0);
  auto done = std::async(std::launch::async, [&] { return ReadPrompt(std::nullopt, tty); });
  if (done.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "ReadPrompt waited on a terminal";
    ssize_t unused = ::write(master, "\x04", 1);  // EOF at the line discipline: unblock it
    (void)unused;
  }
  EXPECT_EQ(done.get().message(), "error: No prompt provided. Pass it as an argument or on stdin.");
  // With a prompt argument a terminal is a person, not input: never read, never waited on.
  auto with_arg = std::async(std::launch::async, [&] {
    return ReadPrompt(std::string("fix it"), tty, Appending(30s, 30s));
  });
  if (with_arg.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "ReadPrompt read a terminal to append it";
    ssize_t unused = ::write(master, "\x04", 1);
    (void)unused;
  }
  EXPECT_EQ(*with_arg.get(), "fix it");
  ::close(tty);
  ::close(master);
}

TEST(Prompt, UnreadableStdin) {
  EXPECT_EQ(ReadPrompt(std::nullopt, 987654).message(),
            "error: cannot read the prompt from stdin: Bad file descriptor");
}

}  // namespace
}  // namespace ae
