// The real binary against the loopback test model server: request bodies, both wires, the
// retry and failure shapes, missing key, output schema, --timeout and signals.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <fstream>

#include "tests/e2e/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

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
    ws_.WriteFile("agentexec-home/config.toml",
                  "model_provider = \"mock\"\n"
                  "[model_providers.mock]\n"
                  "name = \"mock\"\n"
                  "base_url = \"" +
                      server.base_url() +
                      "\"\n"
                      "env_key = \"MOCK_KEY\"\n"
                      "wire_api = \"" +
                      wire +
                      "\"\n"
                      "request_max_retries = 0\n"
                      "stream_max_retries = " +
                      std::to_string(stream_max_retries) +
                      "\n"
                      "stream_idle_timeout_ms = 20000\n");
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
      (std::vector<std::string>{
          R"({"type":"thread.started","thread_id":"<thread>","schema_version":1})",
          R"({"type":"turn.started"})",
          R"({"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Checking**\nLooking at the repo."}})",
          R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Running echo."}})",
          R"({"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"","exit_code":null,"status":"in_progress"}})",
          R"({"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'echo hi'","aggregated_output":"hi\n","exit_code":0,"status":"completed"}})",
          R"({"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Done."}})",
          R"({"type":"turn.completed","usage":{"input_tokens":2001,"cached_input_tokens":400,)"
          R"("cache_write_input_tokens":0,"output_tokens":100,"reasoning_output_tokens":14},)"
          R"("last_usage":{"input_tokens":1001,"cached_input_tokens":200,)"
          R"("cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":7},)"
          R"("requests":2,"duration_ms":<ms>})"}));

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
          R"({"type":"error","message":")" + demand + "\"}",
          R"({"type":"turn.failed","error":{"message":")" + demand +
              R"(","code":"model_error"},"usage":{"input_tokens":0,"cached_input_tokens":0,)"
              R"("cache_write_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0},)"
              R"("last_usage":{"input_tokens":0,"cached_input_tokens":0,)"
              R"("cache_write_input_tokens":0,"output_tokens":0,"reasoning_output_tokens":0},)"
              R"("requests":1,"duration_ms":<ms>})"}));
  EXPECT_EQ(server_.RequestCount(), 3);
}

TEST_F(HttpTest, HumanModeShowsRetriesAndPrintsNothingOnStdoutOnFailure) {
  Serve(kAnswer, {"status=500"});
  RunOutput out = Run({"hi"});
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.out, "");
  EXPECT_NE(out.err.find("ERROR: Reconnecting... 1/2 (We"), std::string::npos) << out.err;
}

TEST_F(HttpTest, TimeoutStopsAStalledModelWithExit4) {
  Serve(kAnswer, {"stall_after_headers=30"});
  RunOutput out = Run({"--json", "--timeout", "1s", "hi"});
  EXPECT_EQ(out.exit_code, 4) << out.err;
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            R"({"type":"turn.failed","error":{"message":"the run exceeded its --timeout",)"
            R"("code":"timeout"},)"
            R"("usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_input_tokens":0,)"
            R"("output_tokens":0,"reasoning_output_tokens":0},"last_usage":{"input_tokens":0,)"
            R"("cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":0,)"
            R"("reasoning_output_tokens":0},)"
            R"("requests":1,"duration_ms":<ms>})");
}

TEST_F(HttpTest, SigtermEndsTheTurnWithExit143) {
  Serve(kAnswer, {"stall_after_headers=30"});
  RunOptions options;
  options.signal_after_ms = 1000;
  options.signal = SIGTERM;
  RunOutput out = Run({"--json", "hi"}, options);
  EXPECT_EQ(out.exit_code, 143) << out.err;
  EXPECT_EQ(NormalizeThreadId(out.lines().back()),
            R"({"type":"turn.failed","error":{"message":"terminated by SIGTERM",)"
            R"("code":"terminated"},)"
            R"("usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_input_tokens":0,)"
            R"("output_tokens":0,"reasoning_output_tokens":0},"last_usage":{"input_tokens":0,)"
            R"("cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":0,)"
            R"("reasoning_output_tokens":0},)"
            R"("requests":1,"duration_ms":<ms>})");
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

TEST_F(HttpTest, ContextLengthExceededIsCodeContextLengthExit1) {
  Serve(kAnswer, {"status=400:message=context_length_exceeded"}, "responses", 0);
  RunOutput out = Run({"--json", "hi"});
  EXPECT_EQ(out.exit_code, 1) << out.err;
  EXPECT_EQ(FailedCode(out), "context_length") << out.out;
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

}  // namespace
}  // namespace ae::e2e
