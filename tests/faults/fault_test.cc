// The fault suite: hostile model servers and misbehaving commands, end to end
// through the real binary. Every case asserts: each stdout line is one JSON object, the last
// one is turn.completed or turn.failed, the documented exit code, a generous wall bound (to
// keep CI from hanging, not a timing assertion), peak RSS (recorded; bounded outside
// sanitizer builds) and that no process is left running in the workspace afterwards.
#include <dirent.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

// --- Pending fixes -----------------------------------------------------------------------
// Cases that fail because of a bug whose fix is still under way skip with the fix they wait
// for; empty: every case runs.
const std::map<std::string, std::string> kPending = {};
#define SKIP_IF_PENDING()                                                                          \
  do {                                                                                             \
    auto pending = kPending.find(::testing::UnitTest::GetInstance()->current_test_info()->name()); \
    if (pending != kPending.end()) GTEST_SKIP() << "pending: " << pending->second;                 \
  } while (0)
// -------------------------------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

constexpr long kMaxRssKb = 512 * 1024;  // outside sanitizer builds
constexpr int kWallBoundS = 240;

std::string Message(const std::string& text) {
  return R"({"type":"message","text":")" + text + R"("})";
}
std::string Call(const std::string& name, const std::string& arguments_json_string) {
  return R"({"type":"function_call","name":")" + name + R"(","arguments":)" +
         arguments_json_string + "}";
}
std::string Turn(const std::vector<std::string>& items) {
  std::string s = R"({"items":[)";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + items[i];
  return s + R"(],"usage":{"input_tokens":1,"output_tokens":1}})";
}
std::string Turns(const std::vector<std::string>& turns) {
  std::string s = R"({"turns":[)";
  for (size_t i = 0; i < turns.size(); ++i) s += (i ? "," : "") + turns[i];
  return s + "]}";
}
// A JSON string literal holding `s` (ASCII and the escapes we need only).
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string TypeOf(const std::string& line) {
  rapidjson::Document d;
  d.Parse(line.data(), line.size());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("type") || !d["type"].IsString()) {
    return "";
  }
  return d["type"].GetString();
}

// Pids of processes whose working directory is inside `root`.
std::vector<int> ProcessesIn(const std::string& root) {
  std::vector<int> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* e = ::readdir(proc)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == ::getpid()) continue;
    std::error_code ec;
    std::string cwd =
        std::filesystem::read_symlink("/proc/" + std::string(e->d_name) + "/cwd", ec).string();
    if (!ec && (cwd == root || cwd.rfind(root + "/", 0) == 0)) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_IF_PENDING(); }

  void Serve(const std::string& turns, const std::vector<std::string>& faults = {},
             const std::string& wire = "responses", int stream_max_retries = 0,
             int idle_timeout_ms = 20000) {
    std::string script = ws_.WriteFile("turns.json", turns);
    server_ = std::make_unique<TestModelServer>();  // a fresh server (and port) per call
    Result<int> port = server_->Start(script, faults, kWallBoundS);
    ASSERT_TRUE(port.ok()) << port.message();
    MockProvider provider;
    provider.wire = wire;
    provider.stream_max_retries = stream_max_retries;
    provider.stream_idle_timeout_ms = idle_timeout_ms;
    ws_.WriteFile("agentexec-home/config.toml", MockProviderConfig(*server_, provider));
  }

  RunOutput Run(std::vector<std::string> args = {"--json", "-s", "workspace-write", "go"}) {
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env({{"MOCK_KEY", "test-key"}});
    options.timeout_s = kWallBoundS;
    return RunAgentexec(args, options);
  }

  // The checks every case makes; returns the terminal event's line.
  std::string Expect(const RunOutput& out, int exit_code, const std::string& terminal) {
    RecordProperty("peak_rss_kb", std::to_string(out.max_rss_kb));
    RecordProperty("seconds", std::to_string(out.seconds));
    std::printf("[ faults   ] peak RSS %ld KiB, %.2f s, %zu stdout bytes\n", out.max_rss_kb,
                out.seconds, out.out.size());
    EXPECT_LT(out.seconds, kWallBoundS) << "hit the wall bound";
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out.substr(0, 4000);
    EXPECT_EQ(out.exit_code, exit_code) << out.err.substr(0, 4000);
    if (!kSanitized) {
      EXPECT_LT(out.max_rss_kb, kMaxRssKb);
    }
    std::vector<std::string> lines = out.lines();
    std::string last = lines.empty() ? "" : lines.back();
    EXPECT_EQ(TypeOf(last), terminal) << out.out.substr(0, 4000) << "\n" << out.err;
    std::vector<int> left = ProcessesIn(ws_.root());
    EXPECT_TRUE(left.empty()) << left.size() << " process(es) left in the workspace, e.g. pid "
                              << (left.empty() ? 0 : left[0]);
    return last;
  }

  std::string FailedMessage(const std::string& line) {
    rapidjson::Document d;
    d.Parse(line.data(), line.size());
    if (d.HasParseError() || !d.HasMember("error")) return "";
    return d["error"]["message"].GetString();
  }

  // The items the run completed, by type.
  std::map<std::string, int> CompletedItems(const RunOutput& out) {
    std::map<std::string, int> n;
    for (const std::string& l : out.lines()) {
      rapidjson::Document d;
      d.Parse(l.data(), l.size());
      if (TypeOf(l) == "item.completed") ++n[d["item"]["type"].GetString()];
    }
    return n;
  }

  Workspace ws_;
  std::unique_ptr<TestModelServer> server_;
};

const std::string kOk = Turns({Turn({Message("ok")})});

// --- broken streams ----------------------------------------------------------------------

TEST_F(FaultTest, GarbageBodyFailsTheTurnAfterRetries) {
  Serve(kOk, {"hostile=junk"}, "responses", 1);
  RunOutput out = Run();
  std::string last = Expect(out, 1, "turn.failed");
  EXPECT_EQ(server_->RequestCount(), 2);
  EXPECT_FALSE(FailedMessage(last).empty());
}

TEST_F(FaultTest, TruncatedJsonIsRetriedAndTheTurnRecovers) {
  for (const char* wire : {"responses", "chat"}) {
    SCOPED_TRACE(wire);
    Serve(kOk, {"hostile=truncated_json:requests=1"}, wire, 1);
    RunOutput out = Run();
    Expect(out, 0, "turn.completed");
    EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
  }
}

TEST_F(FaultTest, UnknownEventsAndCommentsAreSkipped) {
  Serve(kOk, {"hostile=unknown_events"});
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
}

TEST_F(FaultTest, EventsAfterCompletionAreIgnored) {
  for (const char* wire : {"responses", "chat"}) {
    SCOPED_TRACE(wire);
    Serve(kOk, {"hostile=after_completion"}, wire);
    RunOutput out = Run();
    Expect(out, 0, "turn.completed");
    EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
    EXPECT_EQ(CompletedItems(out)["command_execution"], 0);
    EXPECT_EQ(out.out.find("SHOULD-NOT-RUN"), std::string::npos);
    EXPECT_EQ(server_->RequestCount(), 1);
  }
}

TEST_F(FaultTest, A100MegabyteEventFailsTheTurnWithinItsBound) {
  Serve(kOk, {"hostile=huge_event"});
  RunOutput out = Run();
  std::string last = Expect(out, 1, "turn.failed");
  EXPECT_NE(FailedMessage(last).find("stream disconnected before completion"), std::string::npos)
      << last;
}

TEST_F(FaultTest, AMillionDeltasStreamThrough) {
  for (const char* wire : {"responses", "chat"}) {
    SCOPED_TRACE(wire);
    Serve(kOk, {"hostile=million_deltas"}, wire);
    RunOutput out = Run();
    Expect(out, 0, "turn.completed");
    EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
  }
}

TEST_F(FaultTest, WrongContentTypeFailsAtOnce) {
  Serve(kOk, {"content_type=application/json"}, "responses", 2);
  RunOutput out = Run();
  std::string last = Expect(out, 1, "turn.failed");
  EXPECT_EQ(FailedMessage(last),
            "unexpected content type `application/json` from " + server_->base_url() +
                "/responses (expected text/event-stream): {\"error\":{\"message\":\"not a "
                "stream\"}}");
  EXPECT_EQ(server_->RequestCount(), 1);
}

TEST_F(FaultTest, Html200FailsAtOnce) {
  Serve(kOk, {"hostile=html"}, "responses", 2);
  RunOutput out = Run();
  std::string last = Expect(out, 1, "turn.failed");
  EXPECT_EQ(FailedMessage(last).rfind("unexpected content type `text/html; charset=utf-8`", 0), 0u)
      << last;
  EXPECT_EQ(server_->RequestCount(), 1);
}

TEST_F(FaultTest, HtmlLabelledAsAStreamFailsTheTurn) {
  Serve(kOk, {"hostile=html_as_stream"}, "responses", 1);
  RunOutput out = Run();
  Expect(out, 1, "turn.failed");
  EXPECT_EQ(server_->RequestCount(), 2);
}

TEST_F(FaultTest, EveryErrorStatusFailsTheTurn) {
  for (int code :
       {400, 401, 402, 403, 404, 405, 408, 409, 410, 413, 415, 422, 429, 500, 501, 502, 503, 504}) {
    SCOPED_TRACE(code);
    Serve(kOk, {"status=" + std::to_string(code)});
    RunOutput out = Run();
    std::string last = Expect(out, 1, "turn.failed");
    EXPECT_FALSE(FailedMessage(last).empty()) << last;
  }
}

TEST_F(FaultTest, ConnectionResetBeforeHeaders) {
  Serve(kOk, {"hostile=reset_before_headers:requests=1"}, "responses", 1);
  Expect(Run(), 0, "turn.completed");
  Serve(kOk, {"hostile=reset_before_headers"}, "responses", 1);
  std::string last = Expect(Run(), 1, "turn.failed");
  EXPECT_EQ(FailedMessage(last).rfind("cannot reach 127.0.0.1:", 0), 0u) << last;
}

TEST_F(FaultTest, ConnectionResetAfterHeaders) {
  Serve(kOk, {"hostile=reset_after_headers:requests=1"}, "responses", 1);
  Expect(Run(), 0, "turn.completed");
  Serve(kOk, {"hostile=reset_after_headers"}, "responses", 1);
  std::string last = Expect(Run(), 1, "turn.failed");
  EXPECT_EQ(FailedMessage(last).rfind("stream disconnected before completion", 0), 0u) << last;
}

TEST_F(FaultTest, RedirectsAreNotFollowed) {
  for (int code : {301, 302, 303, 307, 308}) {
    SCOPED_TRACE(code);
    Serve(kOk, {"hostile=redirect_" + std::to_string(code)});
    RunOutput out = Run();
    std::string last = Expect(out, 1, "turn.failed");
    EXPECT_NE(FailedMessage(last).find(std::to_string(code)), std::string::npos) << last;
    EXPECT_EQ(server_->RequestCount(), 1);
  }
}

// --- hostile calls -----------------------------------------------------------------------

TEST_F(FaultTest, AThousandCallsInOneResponse) {
  std::vector<std::string> calls;
  for (int i = 0; i < 1000; ++i) {
    calls.push_back(Call("update_plan", Quote(R"({"plan":[{"step":"s)" + std::to_string(i) +
                                              R"(","status":"pending"}]})")));
  }
  Serve(Turns({Turn(calls), Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
  ASSERT_EQ(server_->RequestCount(), 2);
  std::string body = server_->Requests()[1].body_json;
  size_t outputs = 0;
  for (size_t p = 0; (p = body.find("\"function_call_output\"", p)) != std::string::npos; ++p) {
    ++outputs;
  }
  EXPECT_EQ(outputs, 1000u);
}

TEST_F(FaultTest, UnknownToolsAreAnsweredNotFatal) {
  Serve(Turns({Turn({Call("no_such_tool", Quote("{}")), Call("", Quote("{}")),
                     Call("exec_command\\u0000x", Quote("{}"))}),
               Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  ASSERT_EQ(server_->RequestCount(), 2);
  std::string body = server_->Requests()[1].body_json;
  EXPECT_NE(body.find("no_such_tool"), std::string::npos);
}

TEST_F(FaultTest, BadArgumentsAreAnsweredNotFatal) {
  Serve(Turns(
      {Turn({Call("exec_command", Quote("not json")), Call("exec_command", Quote("")),
             Call("exec_command", Quote(R"({"cmd":5})")), Call("exec_command", Quote(R"([1,2])")),
             Call("exec_command", Quote(R"({"cmd":"true","timeout_ms":"soon"})")),
             Call("exec_command", Quote(R"({"cmd":"true","workdir":"/nonexistent"})")),
             Call("shell", Quote(R"({"command":"not an array"})")),
             Call("shell", Quote(R"({"command":[]})")),
             Call("update_plan", Quote(R"({"plan":"x"})")),
             Call("apply_patch", Quote(R"({"input":"*** Begin Patch\nnonsense"})"))}),
       Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(out)["agent_message"], 1);
  EXPECT_EQ(server_->RequestCount(), 2);
}

// The kernel reads a string up to its first NUL: `true\0; touch ran` would run `true` while the
// item shows the whole text. Neither command starts, and each says why.
TEST_F(FaultTest, ACommandHoldingANulByteDoesNotStart) {
  Serve(
      Turns({Turn({Call("exec_command", Quote(R"({"cmd":"true\u0000; touch ran","login":false})")),
                   Call("shell", Quote(R"({"command":["touch","ran\u0000x"]})"))}),
             Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  std::vector<std::string> outputs;
  for (const std::string& l : out.lines()) {
    rapidjson::Document d;
    d.Parse(l.data(), l.size());
    if (TypeOf(l) != "item.completed" || d["item"]["type"] != "command_execution") continue;
    EXPECT_EQ(d["item"]["exit_code"].GetInt(), 126) << l;
    outputs.push_back(d["item"]["aggregated_output"].GetString());
  }
  std::sort(outputs.begin(), outputs.end());  // the two calls run side by side
  EXPECT_EQ(outputs, (std::vector<std::string>{"execve: argv[1] holds a NUL byte\n",
                                               "execve: argv[2] holds a NUL byte\n"}));
  EXPECT_FALSE(std::filesystem::exists(ws_.repo() + "/ran"));
  EXPECT_NE(server_->Requests()[1].body_json.find("execve: argv[2] holds a NUL byte"),
            std::string::npos);
}

TEST_F(FaultTest, ACommandPrintingOneGibibyte) {
  Serve(Turns({Turn({Call("exec_command",
                          Quote(R"({"cmd":"head -c 1073741824 /dev/zero | tr '\\\\0' a"})"))}),
               Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(out)["command_execution"], 1);
  // Bounded (the capture keeps its head and tail), not proportional to the gibibyte.
  EXPECT_LT(out.out.size(), 16u << 20) << "the output reached stdout unbounded";
  ASSERT_EQ(server_->RequestCount(), 2);
  EXPECT_LT(server_->Requests()[1].body_json.size(), 16u << 20);
}

TEST_F(FaultTest, BinaryOutputStaysValidJson) {
  Serve(Turns(
      {Turn({Call(
           "exec_command",
           Quote(
               R"({"cmd":"printf '\\\\377\\\\376\\\\000\\\\300\\\\200 \\\\355\\\\240\\\\200'; head -c 65536 /dev/urandom"})"))}),
       Turn({Message("done")})}));
  RunOutput out = Run();
  Expect(out, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(out)["command_execution"], 1);
  ASSERT_EQ(server_->RequestCount(), 2);
}

TEST_F(FaultTest, TwentyConcurrentRunsInOneDirectory) {
  constexpr int kRuns = 20;
  std::vector<std::string> turns;
  for (int i = 0; i < kRuns; ++i) {
    turns.push_back(Turn({Call("exec_command", Quote(R"({"cmd":"echo run >> shared.txt"})"))}));
    turns.push_back(Turn({Message("done")}));
  }
  Serve(Turns(turns));
  std::vector<RunOutput> outs(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) threads.emplace_back([&, i] { outs[i] = Run(); });
  for (std::thread& t : threads) t.join();
  std::set<std::string> threads_seen;
  for (const RunOutput& out : outs) {
    Expect(out, 0, "turn.completed");
    std::vector<std::string> lines = out.lines();
    ASSERT_FALSE(lines.empty());
    threads_seen.insert(lines[0]);
  }
  EXPECT_EQ(threads_seen.size(), static_cast<size_t>(kRuns)) << "thread ids repeat";
  size_t sessions = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(ws_.home() + "/sessions")) {
    if (e.is_regular_file()) ++sessions;
  }
  EXPECT_EQ(sessions, static_cast<size_t>(kRuns));
}

// --- pending: rows of the issue's table whose fixes are on other branches ----------------

TEST_F(FaultTest, DeepArgumentsFailTheCallNotTheProcess) {
  Serve(Turns(
      {Turn({Call("exec_command", Quote(std::string(100000, '[')))}), Turn({Message("done")})}));
  Expect(Run(), 0, "turn.completed");
}

// With --output-schema the final answer is parsed to be validated: it is the model's JSON too.
// Exit 6, the documented code for an answer that does not validate.
TEST_F(FaultTest, AHostileFinalAnswerFailsTheSchemaCheckNotTheProcess) {
  const std::string schema = ws_.WriteFile(
      "schema.json", R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],)"
                     R"("additionalProperties":false})");
  const std::vector<std::string> args = {"--json",          "-s",   "workspace-write",
                                         "--output-schema", schema, "go"};
  Serve(Turns({Turn({Message(std::string(100000, '[') + std::string(100000, ']'))})}));
  EXPECT_EQ(FailedMessage(Expect(Run(args), 6, "turn.failed")),
            "the final answer is not JSON (nested deeper than 512 levels at byte offset 512), so "
            "it does not match --output-schema");
  // A valid answer, a NUL, then anything: not an answer that matches.
  Serve(Turns({Turn({Message(R"({\"a\":\"x\"}\u0000tail)")})}));
  EXPECT_EQ(FailedMessage(Expect(Run(args), 6, "turn.failed")),
            "the final answer is not JSON (a NUL byte is not allowed in JSON text at byte offset "
            "9), so it does not match --output-schema");
}

TEST_F(FaultTest, DeeplyNestedEventFailsTheTurn) {
  Serve(kOk, {"hostile=deep_event"});
  Expect(Run(), 1, "turn.failed");
}

TEST_F(FaultTest, NumberThatOverflowsADoubleKeepsLinesValid) {
  Serve(kOk, {"hostile=huge_number"});
  Expect(Run(), 0, "turn.completed");
}

TEST_F(FaultTest, KeepAliveCommentsDoNotResetTheIdleTimeout) {
  Serve(kOk, {"hostile=keepalive"}, "responses", 0, 1000);
  Expect(Run(), 1, "turn.failed");
}

TEST_F(FaultTest, OneByteASecondDoesNotResetTheIdleTimeout) {
  Serve(kOk, {"hostile=dribble"}, "responses", 0, 1000);
  Expect(Run(), 1, "turn.failed");
}

TEST_F(FaultTest, PatchingAFifoFailsTheCallWithoutBlocking) {
  Serve(Turns(
      {Turn({Call("exec_command", Quote(R"({"cmd":"mkfifo p"})"))}),
       Turn({Call(
           "apply_patch",
           Quote(
               R"({"input":"*** Begin Patch\n*** Update File: p\n@@\n-a\n+b\n*** End Patch"})"))}),
       Turn({Message("done")})}));
  Expect(Run(), 0, "turn.completed");
}

// A command may leave a FIFO wherever agentexec later reads a file it finds itself. Opening one
// blocks before any limit applies (SIGTERM and --timeout included): each is skipped or refused.
TEST_F(FaultTest, AFifoWhereAgentexecReadsAFileNeverBlocks) {
  const std::string repo = ws_.repo();
  // AGENTS.md: skipped, the run goes on.
  ASSERT_EQ(::mkfifo((repo + "/AGENTS.md").c_str(), 0600), 0);
  // A linked worktree's layout: the .git file names a git dir whose `commondir` is a FIFO. Both
  // are read to keep them read-only each time a command's sandbox is set up.
  std::filesystem::remove_all(repo + "/.git");
  std::filesystem::create_directories(ws_.root() + "/gd");
  ASSERT_EQ(::mkfifo((ws_.root() + "/gd/commondir").c_str(), 0600), 0);
  ws_.WriteFile("repo/.git", "gitdir: " + ws_.root() + "/gd\n");
  Serve(Turns(
      {Turn({Call("exec_command", Quote(R"({"cmd":"echo hi"})"))}), Turn({Message("done")})}));
  RunOutput ran = Run();
  Expect(ran, 0, "turn.completed");
  EXPECT_EQ(CompletedItems(ran)["command_execution"], 1);
  // The project's config: refused before the thread starts.
  std::filesystem::create_directories(repo + "/.agentexec");
  ASSERT_EQ(::mkfifo((repo + "/.agentexec/config.toml").c_str(), 0600), 0);
  RunOutput out = Run();
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err,
            "error: " + repo + "/.agentexec/config.toml: cannot read: not a regular file\n");
}

TEST_F(FaultTest, HugeModelTimeoutsAreClampedNotOverflowed) {
  Serve(Turns(
      {Turn({Call("exec_command", Quote(R"({"cmd":"sleep 0.2; echo fine","timeout_ms":9.2e18})")),
             Call("exec_command", Quote(R"({"cmd":"sleep 0.2; echo fine","timeout_ms":1e300})"))}),
       Turn({Message("done")})}));
  RunOutput out = Run({"--json", "-s", "workspace-write", "--timeout", "9999999h", "go"});
  Expect(out, 0, "turn.completed");
  ASSERT_EQ(server_->RequestCount(), 2);
  std::string body = server_->Requests()[1].body_json;
  size_t fine = 0;
  for (size_t p = 0; (p = body.find("fine", p)) != std::string::npos; ++p) ++fine;
  EXPECT_GE(fine, 2u);
}

}  // namespace
}  // namespace ae::e2e
