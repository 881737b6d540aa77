#include "outputs/human_sink.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include "base/fd.h"

namespace ae {
namespace {

// Runs the sink over `events` and returns what it wrote.
std::string Render(const std::vector<Event>& events, HumanSinkOptions opt = {}) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Fd r(fds[0]), w(fds[1]);
  {
    HumanSink sink(w.get(), opt);
    for (const Event& e : events) sink.Emit(e);
  }
  w.reset();
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(r.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(HumanSinkTest, HeaderPromptMessageAndTokens) {
  HumanSinkOptions opt;
  opt.version = "0.1.0";
  opt.prompt = "fix it";
  SessionInfo info{"/w", "gpt-5", "openai", "never", "read-only, network off", ""};
  std::string out = Render({ThreadStarted{"t-1", info}, TurnStarted{},
                            ItemCompleted{Item{"item_0", AgentMessageItem{"Fixed."}}},
                            TurnCompleted{Usage{1000, 200, 0, 1, 0}, TurnStats{1234, 1, {}}}},
                           opt);
  EXPECT_EQ(out,
            "agentexec v0.1.0\n--------\nworkdir: /w\nmodel: gpt-5\nprovider: openai\n"
            "approval: never\nsandbox: read-only, network off\nsession id: t-1\n--------\n"
            "user\nfix it\nagent\nFixed.\ntokens used\n801\n"
            "done in 1.2s: 1 request, 801 tokens, 0 commands, 0 files changed\n");
}

TEST(HumanSinkTest, CommandShowsStatusAndFirstLines) {
  HumanSinkOptions opt;
  opt.command_output_lines = 2;
  CommandExecutionItem running{"/bin/bash -lc 'seq 5'", "", std::nullopt, ItemStatus::kInProgress};
  CommandExecutionItem done{"/bin/bash -lc 'seq 5'", "1\n2\n3\n4\n5\n", 3, ItemStatus::kFailed};
  std::string out =
      Render({ItemStarted{Item{"item_1", running}}, ItemCompleted{Item{"item_1", done}}}, opt);
  // The duration varies; everything else is exact.
  EXPECT_EQ(out.substr(0, 27), "exec\n/bin/bash -lc 'seq 5'\n");
  EXPECT_NE(out.find(" exited 3 in "), std::string::npos) << out;
  EXPECT_NE(out.find("ms:\n1\n2\n… +3 lines\n\n"), std::string::npos) << out;
}

TEST(HumanSinkTest, ParallelCommandResultsNameTheirCommand) {
  CommandExecutionItem a{"/bin/bash -lc 'sleep 1'", "", std::nullopt, ItemStatus::kInProgress};
  CommandExecutionItem b{"/bin/bash -lc true", "", std::nullopt, ItemStatus::kInProgress};
  CommandExecutionItem a_done{"/bin/bash -lc 'sleep 1'", "", 0, ItemStatus::kCompleted};
  CommandExecutionItem b_done{"/bin/bash -lc true", "", 0, ItemStatus::kCompleted};
  std::string out =
      Render({ItemStarted{Item{"item_1", a}}, ItemStarted{Item{"item_2", b}},
              ItemCompleted{Item{"item_2", b_done}}, ItemCompleted{Item{"item_1", a_done}}});
  // b's result follows b's header directly; a's result repeats a's header.
  size_t b_header = out.find("exec\n/bin/bash -lc true\n succeeded");
  size_t a_again = out.rfind("exec\n/bin/bash -lc 'sleep 1'\n succeeded");
  EXPECT_NE(b_header, std::string::npos) << out;
  EXPECT_NE(a_again, std::string::npos) << out;
  EXPECT_LT(b_header, a_again);
}

TEST(HumanSinkTest, PlanMarksDoneCurrentAndPending) {
  TodoListItem plan{{{"Read", true}, {"Edit", false}, {"Test", false}}};
  EXPECT_EQ(Render({ItemStarted{Item{"item_0", plan}}}), "plan\n  ✓ Read\n  → Edit\n  • Test\n");
}

TEST(HumanSinkTest, ErrorsAndWarnings) {
  EXPECT_EQ(Render({ItemCompleted{Item{"item_0", ErrorItem{"unknown key 'x'"}}},
                    StreamError{"Reconnecting... 1/5 (timeout)"},
                    TurnFailed{"timeout", ErrorCode::kTimeout, {}, TurnStats{61000, 2, {}}}}),
            "warning: unknown key 'x'\nretry: Reconnecting... 1/5 (timeout)\n"
            "failed (timeout) after 1m01s: 2 requests, 0 tokens, 0 commands, 0 files changed\n");
}

TEST(HumanSinkTest, ACompactionIsOneLine) {
  EXPECT_EQ(Render({ItemCompleted{Item{"item_4", ContextCompactionItem{182311, 9874}}}}),
            "context compacted: 182,311 -> 9,874 tokens\n");
}

TEST(HumanSinkTest, ColourOnlyWhenAsked) {
  HumanSinkOptions opt;
  opt.color = true;
  std::string out = Render({StreamError{"bad"}}, opt);
  EXPECT_EQ(out, "\x1b[31mERROR: bad\x1b[0m\n");
}

TEST(HumanSinkTest, Thousands) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1701), "1,701");
  EXPECT_EQ(WithThousands(1234567), "1,234,567");
}

}  // namespace
}  // namespace ae

namespace ae {
namespace {

// What a command prints or the model says cannot drive the user's terminal.
TEST(HumanSinkTest, ControlAndEscapeSequencesAreShownNotInterpreted) {
  EXPECT_EQ(NeutralizeForTerminal("a\tb\nc"), "a\tb\nc");
  EXPECT_EQ(NeutralizeForTerminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");  // OSC title
  EXPECT_EQ(NeutralizeForTerminal("\x1b]52;c;ZXZpbA==\x1b\\"), "\\x1b]52;c;ZXZpbA==\\x1b\\");
  EXPECT_EQ(NeutralizeForTerminal("\x1b[2J\x1b[31mred"), "\\x1b[2J\\x1b[31mred");  // CSI
  EXPECT_EQ(NeutralizeForTerminal("\xc2\x9b"
                                  "31m \xc2\x9d"
                                  "0;t"),
            "\\x9b31m \\x9d0;t");  // C1
  EXPECT_EQ(NeutralizeForTerminal("crlf\r\nover\rwrite\x7f\x08"), "crlf\nover\\x0dwrite\\x7f\\x08");
  EXPECT_EQ(NeutralizeForTerminal("caf\xc3\xa9 \xff"), "caf\xc3\xa9 \xEF\xBF\xBD");
}

TEST(HumanSinkTest, CommandOutputAndModelTextReachTheTerminalNeutralised) {
  CommandExecutionItem c{"printf '\x1b]0;t\x07'", "\x1b]52;c;aGk=\x07out\n", 0,
                         ItemStatus::kCompleted};
  std::string out = Render({ItemStarted{Item{"item_0", c}}, ItemCompleted{Item{"item_0", c}},
                            ItemCompleted{Item{"item_1", AgentMessageItem{"done\x1b[8m hidden"}}},
                            ItemCompleted{Item{"item_2", ReasoningItem{"\x9b"}}}});
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_NE(out.find("printf '\\x1b]0;t\\x07'\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\\x1b]52;c;aGk=\\x07out\n"), std::string::npos) << out;
  EXPECT_NE(out.find("agent\ndone\\x1b[8m hidden\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace ae
