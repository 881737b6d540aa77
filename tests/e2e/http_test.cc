// The real binary against the loopback test model server: request bodies, both wires, the
// retry and failure shapes, missing key, output schema, --timeout and signals.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"
#include "tests/support/turn_lines.h"

namespace ae::e2e {
namespace {

// The golden turn.failed of a model_error after one request that reported no usage
// (Normalized: the duration as <ms>).
std::string ModelErrorBeforeAnyUsage(const std::string& message) {
  return test::TurnFailedLine(message, "model_error", {}, {}, 1);
}

constexpr const char* kToolTurns = R"({"turns":[
  {"items":[
    {"type":"reasoning","summary":["**Checking**","Looking at the repo."]},
    {"type":"message","phase":"commentary","text":"Running echo."},
    {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo hi"},"call_id":"call_1"}],
   "usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":7}},
  {"items":[{"type":"message","text":"Done."}],
   "usage":{"input_tokens":1001,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":7}}]})";

constexpr const char* kAnswer = R"({"turns":[{"items":[{"type":"message","text":"ok"}],
  "usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0}}]})";

// What kToolTurns' first request shows: the thread, the reasoning, the commentary, the command.
const std::vector<std::string> kToolTurnsOpening = {
    R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
    R"({"type":"turn.started"})",
    R"({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Checking**\nLooking at the repo."}})",
    R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Running echo."}})",
    R"({"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"","exit_code":null,"status":"in_progress"}})",
    R"({"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"hi\n","exit_code":0,"status":"completed"}})",
};

// kToolTurnsOpening, then `rest`.
std::vector<std::string> AfterToolTurnsOpening(std::vector<std::string> rest) {
  std::vector<std::string> all = kToolTurnsOpening;
  all.insert(all.end(), rest.begin(), rest.end());
  return all;
}

class HttpTest : public ::testing::Test {
 protected:
  // Starts the server and points agentexec's config at it.
  void Serve(const std::string& turns, const std::vector<std::string>& faults = {},
             const std::string& wire = "responses", int stream_max_retries = 2) {
    Serve(server_, turns, faults, wire, stream_max_retries);
  }
  void Serve(TestModelServer& server, const std::string& turns,
             const std::vector<std::string>& faults = {}, const std::string& wire = "responses",
             int stream_max_retries = 2) {
    std::string script = ws_.WriteFile("turns.json", turns);
    Result<int> port = server.Start(script, faults, 60);
    ASSERT_TRUE(port.ok()) << port.message();
    MockProvider provider;
    provider.wire = wire;
    provider.stream_max_retries = stream_max_retries;
    ws_.WriteFile("agentexec-home/config.toml", MockProviderConfig(server, provider));
  }

  RunOutput Run(std::vector<std::string> args, RunOptions options = {},
                std::map<std::string, std::string> env = {{"MOCK_KEY", "test-key"}}) {
    options.cwd = ws_.repo();
    options.env = ws_.Env(env);
    RunOutput out = RunAgentexec(args, options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }

  std::vector<std::string> Normalized(const RunOutput& out) {
    std::vector<std::string> lines = out.lines();
    for (std::string& l : lines) l = NormalizeThreadId(l);
    return lines;
  }

  Workspace ws_;
  TestModelServer server_;
};

TEST_F(HttpTest, ResponsesWireReasoningCommentaryAndACommand) {
  Serve(kToolTurns);
  RunOutput out = Run({"--json", "-s", "workspace-write", "say hi"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(
      Normalized(out),
      AfterToolTurnsOpening(
          {R"({"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}})",
           test::TurnCompletedLine({2001, 400, 0, 100, 14}, {1001, 200, 0, 50, 7}, 2)}));

  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].path, "/v1/responses");
  EXPECT_EQ(requests[0].headers["authorization"], "Bearer test-key");
  rapidjson::Document second;
  second.Parse(requests[1].body_json.c_str());
  ASSERT_TRUE(second.IsObject());
  const rapidjson::Value& input = second["input"];
  ASSERT_TRUE(input.IsArray());
  const rapidjson::Value& last = input[input.Size() - 1];
  EXPECT_STREQ(last["type"].GetString(), "function_call_output");
  EXPECT_STREQ(last["call_id"].GetString(), "call_1");
  std::string output = last["output"].GetString();
  EXPECT_NE(output.find("hi\n"), std::string::npos) << output;
  EXPECT_EQ(second["store"].GetBool(), false);
  EXPECT_EQ(second["stream"].GetBool(), true);
  // The user prompt is the last item of the first request's history part.
  rapidjson::Document first;
  first.Parse(requests[0].body_json.c_str());
  const rapidjson::Value& first_input = first["input"];
  const rapidjson::Value& prompt = first_input[first_input.Size() - 1];
  EXPECT_STREQ(prompt["role"].GetString(), "user");
  EXPECT_STREQ(prompt["content"][0]["text"].GetString(), "say hi");
}

TEST_F(HttpTest, ChatWireGivesTheSameEvents) {
  Serve(kToolTurns, {}, "chat");
  RunOutput chat = Run({"--json", "-s", "workspace-write", "say hi"});
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(server_.Requests()[0].path, "/v1/chat/completions");
  std::vector<std::string> chat_lines = Normalized(chat);
  TestModelServer responses_server;
  Serve(responses_server, kToolTurns);
  RunOutput responses = Run({"--json", "-s", "workspace-write", "say hi"});
  ASSERT_EQ(responses.exit_code, 0) << responses.err;
  EXPECT_EQ(chat_lines, Normalized(responses));
}

TEST_F(HttpTest, OutputSchemaIsSentAsStrictJsonSchema) {
  Serve(R"({"turns":[{"items":[{"type":"message","text":"{\"answer\":\"42\"}"}]}]})");
  std::string schema = ws_.WriteFile(
      "schema.json",
      R"({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false})");
  RunOutput out = Run({"--json", "--output-schema", schema, "answer"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(
      out.lines()[2],
      R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"{\"answer\":\"42\"}"}})");
  rapidjson::Document body;
  body.Parse(server_.Requests()[0].body_json.c_str());
  const rapidjson::Value& format = body["text"]["format"];
  EXPECT_STREQ(format["type"].GetString(), "json_schema");
  EXPECT_TRUE(format["strict"].GetBool());
  EXPECT_STREQ(format["name"].GetString(), "codex_output_schema");
  EXPECT_STREQ(format["schema"]["properties"]["answer"]["type"].GetString(), "string");
}

// Found before the thread starts: no header, no thread.started, stdout still valid JSONL.
TEST_F(HttpTest, MissingKeyFailsBeforeTheThreadStarts) {
  Serve(kAnswer);
  RunOutput out = Run({"--json", "hi"}, {}, {});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(Normalized(out),
            (std::vector<std::string>{
                R"({"type":"error","message":"Missing environment variable: `MOCK_KEY`."})"}));
  EXPECT_EQ(out.err, "error: Missing environment variable: `MOCK_KEY`.\n");
  EXPECT_EQ(server_.RequestCount(), 0);
}

TEST_F(HttpTest, ABrokenStreamIsRetriedAndTheTurnRecovers) {
  Serve(kAnswer, {"drop_after_items=0:requests=1"});
  RunOutput out = Run({"--json", "hi"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  std::vector<std::string> lines = out.lines();
  ASSERT_EQ(lines.size(), 5u) << out.out;
  EXPECT_EQ(
      lines[2].rfind(
          R"({"type":"error","message":"Reconnecting... 1/2 (stream disconnected before completion: )",
          0),
      0u)
      << lines[2];
  EXPECT_EQ(
      lines[3],
      R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}})");
  EXPECT_EQ(server_.RequestCount(), 2);
}

TEST_F(HttpTest, RetriesExhaustedEndWithErrorAndTurnFailed) {
  Serve(kAnswer, {"status=500"});
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1);
  const std::string demand =
      "We\xE2\x80\x99re currently experiencing high demand, which may cause temporary errors.";
  EXPECT_EQ(
      Normalized(out),
      (std::vector<std::string>{
          R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
          R"({"type":"turn.started"})",
          R"({"type":"error","message":"Reconnecting... 1/2 ()" + demand + ")\"}",
          R"({"type":"error","message":"Reconnecting... 2/2 ()" + demand + ")\"}",
          R"({"type":"error","message":")" + demand + "\"}", ModelErrorBeforeAnyUsage(demand)}));
  EXPECT_EQ(server_.RequestCount(), 3);
}

TEST_F(HttpTest, HumanModeShowsRetriesAndPrintsNothingOnStdoutOnFailure) {
  Serve(kAnswer, {"status=500"});
  RunOutput out = Run({"hi"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.out, "");
  // Retries read as retry notices; only the final failure is an ERROR.
  EXPECT_NE(out.err.find("retry: Reconnecting... 1/2 (We"), std::string::npos) << out.err;
  EXPECT_EQ(out.err.find("ERROR: Reconnecting"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("ERROR: We"), std::string::npos) << out.err;
}

TEST_F(HttpTest, TimeoutStopsAStalledModelWithExit4) {
  Serve(kAnswer, {"stall_after_headers=30"});
  RunOutput out = Run({"--json", "--timeout", "1s", "hi"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            test::TurnFailedLine("the run exceeded its --timeout", "timeout", {}, {}, 1));
}

TEST_F(HttpTest, SigtermEndsTheTurnWithExit143) {
  Serve(kAnswer, {"stall_after_headers=30"});
  RunOptions options;
  options.signal_after_ms = 1000;
  options.signal = SIGTERM;
  RunOutput out = Run({"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 143) << out.err;
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            test::TurnFailedLine("terminated by SIGTERM", "terminated", {}, {}, 1));
}

// error.code of the last line (turn.failed), or "" when it is not one.
std::string FailedCode(const RunOutput& out) {
  if (out.lines().empty()) return "";
  rapidjson::Document d;
  d.Parse(out.lines().back().c_str());
  if (d.HasParseError() || !d.HasMember("error") || !d["error"].HasMember("code")) return "";
  return d["error"]["code"].GetString();
}

TEST_F(HttpTest, UnauthorizedIsCodeAuthExit1) {
  Serve(kAnswer, {"status=401"}, "responses", 0);
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(FailedCode(out), "auth") << out.out;
}

TEST_F(HttpTest, TooManyRequestsIsCodeRateLimitedExit1) {
  Serve(kAnswer, {"status=429"}, "responses", 0);
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(FailedCode(out), "rate_limited") << out.out;
}

// Classified by the error body's `code`, as the API sends it; the same words in a message
// with no code are just a model error.
TEST_F(HttpTest, ContextLengthExceededIsCodeContextLengthExit1) {
  Serve(kAnswer,
        {"status=400:code=context_length_exceeded:message=Your input exceeds the context window"},
        "responses", 0);
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(FailedCode(out), "context_length") << out.out;

  TestModelServer text_only;
  Serve(text_only, kAnswer, {"status=400:message=context_length_exceeded"}, "responses", 0);
  RunOutput text = Run({"--json", "hi"});
  EXPECT_EQ(text.exit_code, 1) << text.err;
  EXPECT_EQ(FailedCode(text), "model_error") << text.out;
}

TEST_F(HttpTest, OtherServiceErrorsAreCodeModelErrorExit1) {
  Serve(kAnswer, {"status=500"}, "responses", 0);
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(FailedCode(out), "model_error") << out.out;
}

TEST_F(HttpTest, SigintIsCodeInterruptedExit130) {
  Serve(kAnswer, {"stall_after_headers=30"});
  RunOptions options;
  options.signal_after_ms = 1000;
  options.signal = SIGINT;
  RunOutput out = Run({"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 130) << out.err;
  EXPECT_EQ(FailedCode(out), "interrupted") << out.out;
}

// The chat wire has no strict structured output; the answer is validated all the same.
TEST_F(HttpTest, ChatWireAnswerThatDoesNotMatchTheSchemaIsExit6AndOIsEmpty) {
  Serve(R"({"turns":[{"items":[{"type":"message","text":"{\"answer\":42}"}]}]})", {}, "chat");
  std::string schema = ws_.WriteFile(
      "schema.json",
      R"({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false})");
  std::string last = ws_.root() + "/last.txt";
  RunOutput out = Run({"--json", "--output-schema", schema, "-o", last, "answer"});
  EXPECT_EQ(out.exit_code, 6) << out.err;
  EXPECT_EQ(FailedCode(out), "output_schema") << out.out;
  EXPECT_EQ(out.err,
            "error: the final answer does not match --output-schema: #/answer: \"type\" failed "
            "(schema #/properties/answer)\n");
  std::ifstream in(last);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "");
}

// A regression once: a reasoning model thinks, calls a tool, thinks again and answers;
// with store:false the second request must replay the reasoning with its encrypted content.
// The strict server refuses anything else (404 for a reasoning item replayed by id alone).
// Then `resume` continues the thread with another tool call, replaying the stored items.
TEST_F(HttpTest, ReasoningToolReasoningAnswerThenResumeWithAnotherToolCall) {
  Serve(R"({"turns":[
    {"items":[{"type":"reasoning","summary":["Looking"]},
              {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo one"},"call_id":"call_1"}]},
    {"items":[{"type":"reasoning","summary":["Got it"]},{"type":"message","text":"First done."}]},
    {"items":[{"type":"reasoning","summary":["Again"]},
              {"type":"function_call","name":"exec_command","arguments":{"cmd":"echo two"},"call_id":"call_2"}]},
    {"items":[{"type":"message","text":"Second done."}]}]})");
  RunOutput first = Run({"--json", "-s", "workspace-write", "go"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(
      first.lines()[6],
      R"({"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"First done."}})");
  std::string thread = first.lines()[0].substr(38, 36);
  RunOutput second = Run({"--json", "-s", "workspace-write", "resume", thread, "again"});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_EQ(
      second.lines()[5],
      R"({"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Second done."}})");

  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 4u);
  for (const LoggedRequest& r : requests) {
    rapidjson::Document body;
    body.Parse(r.body_json.c_str());
    EXPECT_FALSE(body["store"].GetBool());
    ASSERT_TRUE(body["include"].IsArray());
    EXPECT_STREQ(body["include"][0].GetString(), "reasoning.encrypted_content");
    EXPECT_STREQ(body["prompt_cache_key"].GetString(), thread.c_str());
    EXPECT_EQ(r.headers.at("session_id"), thread);
    EXPECT_EQ(r.headers.at("originator"), "agentexec");
    EXPECT_STREQ(body["reasoning"]["effort"].GetString(), "medium");  // gpt-5.5's default
    EXPECT_STREQ(body["reasoning"]["summary"].GetString(), "auto");
    EXPECT_STREQ(body["text"]["verbosity"].GetString(), "low");
  }
  // Every reasoning item the last request replays carries the content the server issued.
  rapidjson::Document last;
  last.Parse(requests[3].body_json.c_str());
  int reasoning = 0;
  for (const auto& item : last["input"].GetArray()) {
    if (std::string(item["type"].GetString()) != "reasoning") continue;
    ++reasoning;
    EXPECT_TRUE(item.HasMember("encrypted_content"));
  }
  EXPECT_EQ(reasoning, 3);
  // The session file keeps the encrypted content (resume replays it from there).
  std::string session;
  for (const auto& e : std::filesystem::recursive_directory_iterator(ws_.home() + "/sessions")) {
    if (e.path().extension() == ".jsonl") {
      std::ifstream in(e.path());
      session.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  size_t stored = 0;
  for (size_t at = session.find("\"encrypted_content\":\"gAAAAB"); at != std::string::npos;
       at = session.find("\"encrypted_content\":\"gAAAAB", at + 1)) {
    ++stored;
  }
  EXPECT_EQ(stored, 3u) << session;
}

TEST_F(HttpTest, ASessionFileWithoutEncryptedReasoningStillResumes) {
  // A session written before the fix holds reasoning by id only: it is dropped on replay.
  Serve(kAnswer);
  ws_.WriteFile(
      "agentexec-home/sessions/2026/01/01/rollout-2026-01-01T00-00-00-"
      "01a2012f-70ea-7213-b1a9-6556316d14f8.jsonl",
      R"({"type":"session_meta","payload":{"thread_id":"01a2012f-70ea-7213-b1a9-6556316d14f8","cwd":")" +
          ws_.repo() +
          R"(","created_at":"2026-01-01T00:00:00Z","model":"gpt-5.5","provider":"mock","sandbox":"read-only"}}
{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}}
{"type":"response_item","payload":{"type":"reasoning","id":"rs_old","summary":[]}}
{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"old answer"}]}}
)");
  RunOutput out = Run({"--json", "resume", "01a2012f-70ea-7213-b1a9-6556316d14f8", "more"});
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err;
  rapidjson::Document body;
  body.Parse(server_.Requests()[0].body_json.c_str());
  EXPECT_EQ(body["input"].Size(), 3u);  // old prompt, old answer, new prompt
}

TEST_F(HttpTest, UnknownModelGetsCodexsWarningBeforeTurnStarted) {
  Serve(kAnswer);
  RunOutput out = Run({"--json", "-m", "mystery-model-1", "hi"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(
      out.lines()[1],
      R"({"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mystery-model-1` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}})");
  EXPECT_EQ(out.lines()[2], R"({"type":"turn.started"})");
  rapidjson::Document body;
  body.Parse(server_.Requests()[0].body_json.c_str());
  // Codex's fallback: summaries asked for, no effort, no verbosity.
  EXPECT_STREQ(body["reasoning"]["summary"].GetString(), "auto");
  EXPECT_FALSE(body["reasoning"].HasMember("effort"));
  EXPECT_FALSE(body.HasMember("text"));
}

TEST_F(HttpTest, CommentKeepAliveAndByteDribbleEndAndAreRetried) {
  for (const std::string fault : {"comment_keepalive=40:requests=1", "dribble=40:requests=1"}) {
    TestModelServer server;
    Serve(server, kAnswer, {fault});
    MockProvider provider;
    provider.stream_max_retries = 1;
    provider.stream_idle_timeout_ms = 3000;
    ws_.WriteFile("agentexec-home/config.toml", MockProviderConfig(server, provider));
    RunOutput out = Run({"--json", "hi"});
    ASSERT_EQ(out.exit_code, 0) << fault << out.out << out.err;
    EXPECT_EQ(
        out.lines()[2],
        R"x({"type":"error","message":"Reconnecting... 1/1 (stream disconnected before completion: idle timeout waiting for SSE)"})x")
        << fault;
    EXPECT_EQ(server.RequestCount(), 2) << fault;
  }
}

TEST_F(HttpTest, AnUnusableBaseUrlIsAConfigurationError) {
  ws_.WriteFile(
      "agentexec-home/config.toml",
      "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"localhost:8080/v1\"\n");
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.out, "");
  EXPECT_EQ(out.err,
            "error: model_providers.mock.base_url (from " + ws_.home() +
                "/config.toml:3) `localhost:8080/v1` is not a usable URL: it has no scheme "
                "(expected http:// or https://)\n");
}

// libcurl and the TLS roots are set up at the first request, and the roots only for https: a
// plain-http provider runs where no CA bundle exists (SSL_CERT_FILE names a missing file).
TEST_F(HttpTest, PlainHttpNeedsNoTlsRoots) {
  Serve(kAnswer);
  const std::string missing = ws_.home() + "/no-such-bundle.pem";
  RunOutput out = Run({"--json", "hi"}, {}, {{"MOCK_KEY", "test-key"}, {"SSL_CERT_FILE", missing}});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  ASSERT_GE(out.lines().size(), 3u);
  EXPECT_EQ(
      out.lines()[2],
      R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}})");
  EXPECT_EQ(server_.RequestCount(), 1);
}

// The same missing bundle with an https base URL: the TLS set-up reads SSL_CERT_FILE and the
// request fails naming it, before a byte of TLS is exchanged with the (plain-http) server.
TEST_F(HttpTest, AnHttpsProviderWithAMissingCaBundleFailsNamingIt) {
  Serve(kAnswer);
  MockProvider provider;
  provider.stream_max_retries = 0;
  std::string config = MockProviderConfig(server_, provider);
  config.replace(config.find("http://"), 7, "https://");
  ws_.WriteFile("agentexec-home/config.toml", config);
  const std::string missing = ws_.home() + "/no-such-bundle.pem";
  RunOutput out = Run({"--json", "hi"}, {}, {{"MOCK_KEY", "test-key"}, {"SSL_CERT_FILE", missing}});
  EXPECT_EQ(out.exit_code, 1);
  const std::string error = fmt::format(
      "cannot reach 127.0.0.1:{} (error setting certificate file: {})", server_.port(), missing);
  EXPECT_EQ(Normalized(out),
            (std::vector<std::string>{
                R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
                R"({"type":"turn.started"})", R"({"type":"error","message":")" + error + "\"}",
                ModelErrorBeforeAnyUsage(error)}));
  EXPECT_EQ(out.err, "error: " + error + "\n");
  EXPECT_EQ(server_.RequestCount(), 0);
}

TEST_F(HttpTest, InsufficientQuotaFailsAtOnce) {
  Serve(kAnswer, {"status=429:code=insufficient_quota:message=You exceeded your current quota."});
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            test::TurnFailedLine("Quota exceeded. Check your plan and billing details.",
                                 "rate_limited", {}, {}, 1));
  EXPECT_EQ(server_.RequestCount(), 1);
}

// --- hostile JSON from the model (model_server.py's hostile-JSON faults) ----------

TEST_F(HttpTest, AMillionDeepEventFailsTheRequestNotTheProcess) {
  for (const char* wire : {"responses", "chat"}) {
    SCOPED_TRACE(wire);
    TestModelServer server;
    Serve(server, kAnswer, {"deep_event=1000000"}, wire, 0);
    RunOutput out = Run({"--json", "hi"});
    EXPECT_EQ(out.exit_code, 1) << out.err;  // not 139 (SIGSEGV)
    ASSERT_FALSE(out.lines().empty());
    EXPECT_EQ(out.lines().back().rfind(R"({"type":"turn.failed","error":{"message":")", 0), 0u)
        << out.lines().back();
    EXPECT_NE(out.lines().back().find("nested deeper than 512 levels"), std::string::npos)
        << out.lines().back();
  }
}

TEST_F(HttpTest, DeeplyNestedFunctionCallArgumentsAreAClearError) {
  for (const char* wire : {"responses", "chat"}) {
    SCOPED_TRACE(wire);
    TestModelServer server;
    Serve(server, kAnswer, {"deep_arguments=100000:requests=1"}, wire);
    RunOutput out = Run({"--json", "hi"});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    EXPECT_EQ(out.lines().back().rfind(R"({"type":"turn.completed")", 0), 0u) << out.out;
    std::vector<LoggedRequest> requests = server.Requests();
    ASSERT_EQ(requests.size(), 2u);
    if (std::string(wire) == "responses") {
      // The event itself is refused; the retried request gets the answer.
      EXPECT_NE(out.out.find("nested deeper than 512 levels"), std::string::npos) << out.out;
    } else {
      // The call reaches the tool, which says why to the model.
      EXPECT_NE(requests[1].body_json.find(
                    "failed to parse function arguments: nested deeper than 512 levels at "
                    "offset 512"),
                std::string::npos)
          << requests[1].body_json.substr(0, 2000);
    }
  }
}

TEST_F(HttpTest, AnOverflowingNumberInAnOutputItemKeepsEverythingValid) {
  // 1.8e308 parses as inf, which a JSON text cannot hold: stdout, the next request and the
  // session file must all stay valid, and the session must resume.
  Serve(R"({"turns":[{"items":[{"type":"message","text":"ok"}]},
                     {"items":[{"type":"message","text":"again"}]}]})",
        {"raw_item=%7B%22type%22%3A%22function_call%22%2C%22name%22%3A%22exec_command%22%2C%22call_"
         "id%22%3A%22c9%22%2C%22arguments%22%3A%22%7B%5C%22cmd%5C%22%3A%5C%22echo%20hi%5C%"
         "22%2C%5C%22n%5C%22%3A1.8e308%7D%22%2C%22extra%22%3A-1.8e308%7D:requests=1"});
  RunOutput out = Run({"--json", "-s", "danger-full-access", "hi"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  // The item is replayed as the model sent it, its unwritable numbers as strings (the
  // arguments are a JSON string, as the real service sends them, and stay one).
  EXPECT_NE(requests[1].body_json.find(
                R"({"type":"function_call","name":"exec_command","call_id":"c9",)"
                R"("arguments":"{\"cmd\":\"echo hi\",\"n\":1.8e308}","extra":"-Infinity"})"),
            std::string::npos)
      << requests[1].body_json;
  RunOutput resumed = Run({"resume", "--last", "--json", "more"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(server_.Requests().size(), 3u);
}

// --- context compaction and the token budget, against the strict server ---------

// A long run: `calls` tool calls (every fifth a command, the others plan updates), then an
// answer, then one more answer for a resumed run. The server refuses any request whose input
// is estimated above `window` tokens and counts usage itself.
std::string LongRunScript(int calls, int window) {
  std::string turns;
  for (int i = 1; i <= calls; ++i) {
    std::string call =
        i % 5 == 0
            ? fmt::format(
                  R"({{"type":"function_call","name":"exec_command","arguments":{{"cmd":"echo step {}"}}}})",
                  i)
            : fmt::format(
                  R"({{"type":"function_call","name":"update_plan","arguments":{{"plan":[{{"step":"step {}","status":"in_progress"}}]}}}})",
                  i);
    turns +=
        fmt::format(R"({{"items":[{{"type":"reasoning","summary":["Step {}"]}},{}]}},)", i, call);
  }
  turns += R"({"items":[{"type":"message","text":"All done."}]},)";
  turns += R"({"items":[{"type":"message","text":"Resumed."}]})";
  return fmt::format(
      R"({{"context_window":{},"auto_usage":true,"auto_summary":true,"turns":[{}]}})", window,
      turns);
}

// The request log entries the strict server refused (its "rejected" field).
std::vector<std::string> Rejections(const TestModelServer& server) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(server.dir() + "/log")) {
    std::ifstream in(e.path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\"rejected\"") != std::string::npos) out.push_back(e.path().string());
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> Compactions(const RunOutput& out) {
  std::vector<std::pair<int64_t, int64_t>> found;
  for (const std::string& line : out.lines()) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (!d.IsObject() || !d.HasMember("item")) continue;
    const rapidjson::Value& item = d["item"];
    if (std::string(item["type"].GetString()) != "context_compaction") continue;
    found.emplace_back(item["tokens_before"].GetInt64(), item["tokens_after"].GetInt64());
  }
  return found;
}

std::string SessionFile(const std::string& home) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(home + "/sessions")) {
    if (e.path().extension() == ".jsonl") {
      std::ifstream in(e.path());
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
  }
  return {};
}

const std::vector<std::string> kSmallWindow = {"-c", "model_context_window=8000", "-c",
                                               "model_auto_compact_token_limit=6000"};

std::vector<std::string> With(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.begin(), more.begin(), more.end());
  return args;
}

TEST_F(HttpTest, ThreeHundredCallsCompactWithinTheWindowAndResumeFromTheCompactedHistory) {
  Serve(LongRunScript(300, 8000));
  RunOptions options;
  options.timeout_s = 240;
  RunOutput out = Run(
      With({"--json", "-s", "workspace-write", "work through the steps"}, kSmallWindow), options);
  ASSERT_EQ(out.exit_code, 0) << out.err
                              << out.out.substr(out.out.size() > 3000 ? out.out.size() - 3000 : 0);
  // The answer, then the plan's todo_list completes, then turn.completed.
  const std::string answer = out.lines()[out.lines().size() - 3];
  EXPECT_NE(answer.find(R"("type":"agent_message","text":"All done.")"), std::string::npos)
      << answer;
  auto compactions = Compactions(out);
  EXPECT_GE(compactions.size(), 2u) << out.out;
  for (const auto& [before, after] : compactions) {
    EXPECT_GE(before, 6000);
    EXPECT_LT(after, before / 2);
  }
  // No request exceeded the window and every one kept the call/output rules: the strict
  // server refuses either, and logs the refusal.
  EXPECT_EQ(Rejections(server_), std::vector<std::string>{});
  std::vector<LoggedRequest> requests = server_.Requests();
  int compact_requests = 0;
  for (const LoggedRequest& r : requests) compact_requests += r.path == "/v1/responses/compact";
  EXPECT_EQ(static_cast<size_t>(compact_requests), compactions.size());
  EXPECT_EQ(requests.size(), 301u + compactions.size());

  // The session file records each compaction; resume starts from the last one.
  std::string session = SessionFile(ws_.home());
  size_t compacted_lines = 0;
  for (size_t at = session.find(R"("type":"compacted")"); at != std::string::npos;
       at = session.find(R"("type":"compacted")", at + 1)) {
    ++compacted_lines;
  }
  EXPECT_EQ(compacted_lines, compactions.size());
  std::string thread = out.lines()[0].substr(38, 36);
  RunOutput resumed =
      Run(With({"--json", "-s", "workspace-write", "resume", thread, "and now?"}, kSmallWindow),
          options);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err << resumed.out;
  rapidjson::Document first;
  first.Parse(server_.Requests().back().body_json.c_str());
  const rapidjson::Value& input = first["input"];
  ASSERT_TRUE(input.IsArray());
  // The calls the last compaction summarised are not sent again.
  std::set<std::string> summarised;
  for (const LoggedRequest& r : server_.Requests()) {
    if (r.path != "/v1/responses/compact") continue;
    rapidjson::Document body;
    body.Parse(r.body_json.c_str());
    summarised.clear();
    for (const auto& item : body["input"].GetArray()) {
      if (item.HasMember("call_id")) summarised.insert(item["call_id"].GetString());
    }
  }
  ASSERT_FALSE(summarised.empty());
  int compaction_items = 0;
  for (const auto& item : input.GetArray()) {
    compaction_items += std::string(item["type"].GetString()) == "compaction";
    if (item.HasMember("call_id")) {
      EXPECT_FALSE(summarised.contains(item["call_id"].GetString())) << item["call_id"].GetString();
    }
  }
  EXPECT_EQ(compaction_items, 1);
  EXPECT_STREQ(input[0]["role"].GetString(), "developer");
  EXPECT_STREQ(input[input.Size() - 1]["content"][0]["text"].GetString(), "and now?");
  EXPECT_LT(input.Size(), 200u);  // the full history holds over 900 items
}

TEST_F(HttpTest, TheChatWireCompactsWithASummarisationRequest) {
  Serve(LongRunScript(80, 4000), {}, "chat");
  RunOptions options;
  options.timeout_s = 120;
  RunOutput out =
      Run(With({"--json", "-s", "workspace-write", "work through the steps"},
               {"-c", "model_context_window=4000", "-c", "model_auto_compact_token_limit=3000"}),
          options);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  auto compactions = Compactions(out);
  EXPECT_GE(compactions.size(), 2u) << out.out;
  EXPECT_EQ(Rejections(server_), std::vector<std::string>{});
  int summaries = 0;
  for (const LoggedRequest& r : server_.Requests()) {
    rapidjson::Document body;
    body.Parse(r.body_json.c_str());
    if (body.HasMember("tools")) continue;
    ++summaries;
    const rapidjson::Value& messages = body["messages"];
    EXPECT_EQ(std::string(messages[messages.Size() - 1]["content"].GetString())
                  .rfind("The conversation is about to be compacted", 0),
              0u);
  }
  EXPECT_EQ(static_cast<size_t>(summaries), compactions.size());
}

TEST_F(HttpTest, ContextLengthExceededCompactsAndRetriesOnce) {
  Serve(kToolTurns, {"status=400:code=context_length_exceeded:message=too long:requests=2"},
        "responses", 0);
  RunOutput out = Run({"--json", "-s", "workspace-write", "say hi"});
  ASSERT_EQ(out.exit_code, 0) << out.err << out.out;
  EXPECT_EQ(Compactions(out).size(), 1u) << out.out;
  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].path, "/v1/responses");
  EXPECT_EQ(requests[2].path, "/v1/responses/compact");
  EXPECT_EQ(requests[3].path, "/v1/responses");
  rapidjson::Document retry;
  retry.Parse(requests[3].body_json.c_str());
  const rapidjson::Value& input = retry["input"];
  EXPECT_STREQ(input[input.Size() - 1]["type"].GetString(), "compaction");
}

TEST_F(HttpTest, ASecondContextLengthExceededFailsTheTurnWithAClearMessage) {
  Serve(kToolTurns, {"status=400:code=context_length_exceeded:message=too long:requests=2,4"},
        "responses", 0);
  RunOutput out = Run({"--json", "-s", "workspace-write", "say hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  const std::string message =
      "the input still exceeds the model's context window after compacting the history: Your "
      "input exceeds the context window of this model. Please adjust your input and try again. "
      "(too long)";
  std::vector<std::string> lines = Normalized(out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], R"({"type":"error","message":")" + message + R"("})");
  EXPECT_EQ(lines.back().rfind(R"({"type":"turn.failed","error":{"message":")" + message +
                                   R"(","code":"context_length"},"usage":)",
                               0),
            0u)
      << lines.back();
  EXPECT_EQ(server_.RequestCount(), 4);
}

TEST_F(HttpTest, TheTokenBudgetStopsTheRunWithExit4AndTheSessionResumes) {
  Serve(kToolTurns);
  RunOutput out = Run({"--json", "-s", "workspace-write", "--max-tokens", "1000", "say hi"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  const std::string message =
      "token budget reached: the thread used 1050 input+output tokens and the model asked for "
      "more work (--max-tokens 1000)";
  EXPECT_EQ(Normalized(out), AfterToolTurnsOpening(
                                 {R"({"type":"error","message":")" + message + R"("})",
                                  test::TurnFailedLine(message, "max_tokens", {1000, 200, 0, 50, 7},
                                                       {1000, 200, 0, 50, 7}, 1)}));
  // The session holds the call and its output: a resume with a larger budget goes on.
  std::string thread = out.lines()[0].substr(38, 36);
  RunOutput resumed =
      Run({"--json", "-s", "workspace-write", "-c", "max_tokens=5000", "resume", thread, "go on"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err << resumed.out;
  EXPECT_EQ(
      resumed.lines()[resumed.lines().size() - 2],
      R"({"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}})");
}

// 60 sessions left running in one response: codex's warning reaches the model once, as a user
// message after every output of the batch, and the strict server takes that request on both
// wires (each call still meets its output first). The calls run in parallel: a count taken
// apart from the session's registration let two of them warn.
TEST_F(HttpTest, TheSessionWarningAfterTheOutputsIsAcceptedOnBothWires) {
  std::string calls;
  for (int i = 0; i < 60; ++i) {
    calls += fmt::format(
        R"({{"type":"function_call","name":"exec_command","arguments":{{"cmd":"sleep 60","login":false,"yield_time_ms":250}},"call_id":"s{}"}},)",
        i);
  }
  calls.pop_back();
  const std::string turns =
      R"({"turns":[{"items":[)" + calls + R"(]},{"items":[{"type":"message","text":"Done."}]}]})";
  const std::string warning =
      "Warning: The maximum number of unified exec processes you can keep open is 60 and you "
      "currently have 60 processes open. Reuse older processes or close them to prevent "
      "automatic pruning of old processes";
  for (const std::string wire : {"responses", "chat"}) {
    TestModelServer server;
    Serve(server, turns, {}, wire);
    RunOutput out = Run({"--json", "-s", "danger-full-access", "start them"});
    ASSERT_EQ(out.exit_code, 0) << wire << "\n" << out.err << out.out;
    std::vector<LoggedRequest> requests = server.Requests();
    ASSERT_EQ(requests.size(), 2u) << wire;
    rapidjson::Document second;
    second.Parse(requests[1].body_json.c_str());
    ASSERT_TRUE(second.IsObject()) << wire;
    const rapidjson::Value& items = second[wire == "chat" ? "messages" : "input"];
    // The 60 calls run side by side; only the one whose session was the 60th warns.
    auto text_of = [&](const rapidjson::Value& item) -> std::string {
      if (!item.HasMember("role") || std::string(item["role"].GetString()) != "user") return "";
      const rapidjson::Value& content = item["content"];
      if (content.IsString()) return content.GetString();
      return content[0]["text"].GetString();
    };
    int warnings = 0;
    for (const rapidjson::Value& item : items.GetArray()) {
      if (text_of(item).starts_with("Warning: ")) ++warnings;
    }
    EXPECT_EQ(warnings, 1) << wire;
    const rapidjson::Value& last = items[items.Size() - 1];
    const rapidjson::Value& before = items[items.Size() - 2];
    EXPECT_EQ(text_of(last), warning) << wire;
    if (wire == "chat") {
      EXPECT_STREQ(before["role"].GetString(), "tool");
    } else {
      EXPECT_STREQ(before["type"].GetString(), "function_call_output");
    }
  }
}

}  // namespace
}  // namespace ae::e2e
