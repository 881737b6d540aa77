// A whole session built from fakes (SessionDeps): the model, the sandbox's kernel checks, the
// thread id and the clock are injected, so the exact event stream is checked without a key,
// a network or a particular kernel.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/tools/router.h"
#include "tests/support/fake_model_client.h"
#include "tests/support/jsonl_recorder.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

// The session owns its client and ends it with the run; this one lends the fixture's fake,
// so the test can read what the model was sent afterwards.
class Borrowed : public ModelClient {
 public:
  explicit Borrowed(ModelClient& client) : client_(client) {}
  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken& cancel) override {
    return client_.Stream(prompt, observer, cancel);
  }

 private:
  ModelClient& client_;
};

constexpr std::time_t kNow = 1767225600;  // 2026-01-01T00:00:00Z

class SessionDepsTest : public ::testing::Test {
 protected:
  SessionDepsTest() {
    config_.cwd = scratch_.path();
    config_.home = scratch_.path() + "/home";
    config_.provider.id = "fake";
    config_.model.model = "fake-model";
    config_.sandbox.mode = sandbox::Mode::kDangerFullAccess;
    deps_.make_client = [this](const ProviderInfo&,
                               const ModelOptions&) -> Result<std::unique_ptr<ModelClient>> {
      ++clients_made_;
      if (!client_error_.message.empty()) return client_error_;
      return std::unique_ptr<ModelClient>(std::make_unique<Borrowed>(model_));
    };
    deps_.preflight = [this](const sandbox::Policy&) -> Result<sandbox::PreflightReport> {
      ++preflights_;
      return MakeError("fake: this kernel enforces nothing");
    };
    deps_.prepare = [](const sandbox::Policy&,
                       const sandbox::PreflightReport&) -> Result<sandbox::PreparedPtr> {
      return MakeError("fake: not prepared");
    };
    deps_.make_router = MakeDefaultRouter;
    deps_.start_mcp = SessionDeps::Real().start_mcp;
    deps_.new_thread_id = [] { return std::string("thread-1"); };
    deps_.now = [] { return kNow; };
  }

  SessionResult Run() {
    CancelToken cancel;
    return RunSession(config_, "do it", {&sink_}, cancel, deps_);
  }

  test::ScratchDir scratch_{"ae-session"};
  SessionConfig config_;
  SessionDeps deps_;
  test::FakeModelClient model_;
  Error client_error_;
  int clients_made_ = 0;
  int preflights_ = 0;
  test::JsonlRecorder sink_;
};

TEST_F(SessionDepsTest, AWholeSessionRunsOnFakes) {
  model_.responses.push_back(test::Response(
      {test::Call("update_plan", R"({"plan":[{"step":"s","status":"pending"}]})", "c1")}));
  model_.responses.push_back(test::Response({test::Message("Done.")}));
  SessionResult r = Run();
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  EXPECT_EQ(r.thread_id, "thread-1");
  EXPECT_EQ(r.final_message, "Done.");
  ASSERT_EQ(sink_.lines.size(), 6u);
  EXPECT_EQ(sink_.lines[0],
            R"({"type":"thread.started","thread_id":"thread-1","schema_version":1})");
  EXPECT_EQ(sink_.lines[1], R"({"type":"turn.started"})");
  EXPECT_EQ(
      sink_.lines[2],
      R"({"type":"item.started","item":{"id":"item_0","type":"todo_list","items":[{"text":"s","completed":false}]}})");
  EXPECT_EQ(
      sink_.lines[3],
      R"({"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Done."}})");
  EXPECT_TRUE(sink_.lines[5].starts_with(R"({"type":"turn.completed",)")) << sink_.lines[5];
  EXPECT_EQ(preflights_, 0);  // danger-full-access asks the kernel nothing

  // The model was told the injected date; the session file carries the injected clock.
  ASSERT_EQ(model_.prompts.size(), 2u);
  std::string first;
  for (const std::string& item : model_.prompts[0].input) first += item;
  EXPECT_NE(first.find("2026-01-01"), std::string::npos) << first;
  EXPECT_EQ(model_.prompts[0].prompt_cache_key, "thread-1");
  std::string meta;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(config_.home)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream file(entry.path());
    std::getline(file, meta);
  }
  EXPECT_NE(meta.find(R"("created_at":"2026-01-01T00:00:00Z")"), std::string::npos) << meta;
  EXPECT_NE(meta.find(R"("thread-1")"), std::string::npos) << meta;
}

// An MCP server's tool as the fake starter offers it: it reports an mcp_tool_call item and
// answers with its arguments, as a server that echoes would.
class FakeMcpTool : public ToolHandler {
 public:
  std::string name() const override { return "mcp__fake__echo"; }
  std::string spec_json() const override {
    return R"({"type":"function","name":"mcp__fake__echo","parameters":{"type":"object"}})";
  }
  bool parallel_safe() const override { return false; }
  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    McpToolCallItem item{.server = "fake", .tool = "echo", .arguments_json = call.input};
    std::string id = env.emitter.Start(item);
    item.result_content_json = R"([{"type":"text","text":"echoed"}])";
    item.status = ItemStatus::kCompleted;
    env.emitter.Complete(id, std::move(item));
    return ToolResult{.call_id = call.call_id, .output = "echoed"};
  }
};

TEST_F(SessionDepsTest, AWholeSessionWithACommandAndAnMcpToolRunsOnFakes) {
  std::vector<std::vector<std::string>> commands;
  deps_.run_process = [&commands](const sandbox::SpawnSpec& spec, const sandbox::RunLimits&,
                                  CancelToken&) -> Result<sandbox::RunResult> {
    commands.push_back(spec.argv);
    sandbox::RunResult run;
    run.exit_code = 0;
    run.output = "hi\n";
    run.total_bytes = 3;
    run.total_lines = 1;
    return run;
  };
  std::vector<std::string> started_specs;
  deps_.start_mcp = [&started_specs](const std::vector<McpServerSpec>& specs, ToolRouter& router,
                                     Emitter&, CancelToken&) {
    for (const McpServerSpec& spec : specs) started_specs.push_back(spec.name);
    router.Register(std::make_unique<FakeMcpTool>());
    return McpServers();
  };
  McpServerSpec server;
  server.name = "fake";
  config_.mcp_servers.push_back(server);
  config_.ephemeral = true;
  model_.responses.push_back(
      test::Response({test::Call("shell", R"({"command":["echo","hi"]})", "c1")}));
  model_.responses.push_back(test::Response({test::Call("mcp__fake__echo", R"({"x":1})", "c2")}));
  model_.responses.push_back(test::Response({test::Message("Done.")}));

  SessionResult r = Run();
  ASSERT_EQ(r.outcome(), SessionOutcome::kCompleted) << r.error;
  EXPECT_EQ(started_specs, std::vector<std::string>{"fake"});
  EXPECT_EQ(commands, (std::vector<std::vector<std::string>>{{"echo", "hi"}}));
  // turn.completed ends with the run's duration, which is the clock's, not the fakes'.
  ASSERT_EQ(sink_.lines.size(), 8u);
  EXPECT_TRUE(sink_.lines[7].starts_with(
      R"({"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":6,"cache_write_input_tokens":0,"output_tokens":15,"reasoning_output_tokens":3},"last_usage":{"input_tokens":10,"cached_input_tokens":2,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":1},"requests":3,"duration_ms":)"))
      << sink_.lines[7];
  sink_.lines.pop_back();
  EXPECT_EQ(
      sink_.lines,
      (std::vector<std::string>{
          R"({"type":"thread.started","thread_id":"thread-1","schema_version":1})",
          R"({"type":"turn.started"})",
          R"({"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"echo hi","aggregated_output":"","exit_code":null,"status":"in_progress"}})",
          R"({"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"echo hi","aggregated_output":"hi\n","exit_code":0,"status":"completed"}})",
          R"({"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"fake","tool":"echo","arguments":{"x":1},"result":null,"error":null,"status":"in_progress"}})",
          R"({"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"fake","tool":"echo","arguments":{"x":1},"result":{"content":[{"type":"text","text":"echoed"}],"structured_content":null},"error":null,"status":"completed"}})",
          R"({"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done."}})",
      }));
  // The model met each call's output before its next request.
  ASSERT_EQ(model_.prompts.size(), 3u);
  EXPECT_NE(model_.prompts[1].input.back().find("hi"), std::string::npos)
      << model_.prompts[1].input.back();
  EXPECT_NE(model_.prompts[2].input.back().find("echoed"), std::string::npos)
      << model_.prompts[2].input.back();
}

TEST_F(SessionDepsTest, ASandboxTheKernelCannotEnforceStopsBeforeTheModel) {
  config_.sandbox.mode = sandbox::Mode::kWorkspaceWrite;
  SessionResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kSandboxUnavailable);
  EXPECT_EQ(r.code, ErrorCode::kSandboxUnavailable);
  EXPECT_EQ(preflights_, 1);
  EXPECT_EQ(clients_made_, 0);
  ASSERT_EQ(sink_.lines.size(), 4u);
  EXPECT_EQ(sink_.lines[2], R"({"type":"error","message":"fake: this kernel enforces nothing"})");
  EXPECT_TRUE(sink_.lines[3].starts_with(
      R"({"type":"turn.failed","error":{"message":"fake: this kernel enforces nothing","code":"sandbox_unavailable"})"))
      << sink_.lines[3];
}

TEST_F(SessionDepsTest, AClientThatCannotBeMadeFailsWithItsCode) {
  client_error_ = MakeError("Missing environment variable: `FAKE_KEY`.", "auth");
  SessionResult r = Run();
  EXPECT_EQ(r.outcome(), SessionOutcome::kFailed);
  EXPECT_EQ(r.code, ErrorCode::kAuth);
  EXPECT_EQ(sink_.lines,
            (std::vector<std::string>{
                R"({"type":"error","message":"Missing environment variable: `FAKE_KEY`."})"}));
}

}  // namespace
}  // namespace ae
