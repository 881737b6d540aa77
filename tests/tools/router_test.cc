// The router: specs offered to the model, unknown calls, parallel and sequential dispatch;
// update_plan's todo_list lifecycle; the orchestrator under a real sandbox.
#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>

#include "engine/tools/plan.h"
#include "sandbox/policy.h"
#include "sandbox/prepared.h"
#include "tool_fixture.h"

namespace ae::testing {
namespace {

class RouterTest : public ToolTest {
 protected:
  std::unique_ptr<ToolRouter> router_ = MakeDefaultRouter();

  // Index in the trace of the first line that starts with `prefix`.
  size_t At(const std::string& prefix) const {
    auto t = Trace();
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i].starts_with(prefix)) return i;
    }
    ADD_FAILURE() << "no event " << prefix;
    return t.size();
  }
  // The item id of the command whose display contains `needle`.
  std::string CommandId(const std::string& needle) const {
    for (const Event& e : sink_.events) {
      if (auto* s = std::get_if<ItemStarted>(&e)) {
        if (auto* c = std::get_if<CommandExecutionItem>(&s->item.details)) {
          if (c->command.find(needle) != std::string::npos) return s->item.id;
        }
      }
    }
    ADD_FAILURE() << "no command " << needle;
    return "";
  }
};

TEST_F(RouterTest, SpecsAreValidResponsesTools) {
  rapidjson::Document d;
  std::string json = router_->SpecsJson();
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError());
  ASSERT_TRUE(d.IsArray());
  std::vector<std::string> names;
  for (const auto& t : d.GetArray()) {
    names.push_back(t["name"].GetString());
    ASSERT_TRUE(t.HasMember("description"));
    std::string type = t["type"].GetString();
    if (type == "function") {
      EXPECT_FALSE(t["strict"].GetBool());
      EXPECT_STREQ(t["parameters"]["type"].GetString(), "object");
      EXPECT_TRUE(t["parameters"]["required"].IsArray());
      EXPECT_FALSE(t["parameters"]["additionalProperties"].GetBool());
    } else {
      EXPECT_EQ(type, "custom");
      EXPECT_STREQ(t["format"]["type"].GetString(), "grammar");
      EXPECT_STREQ(t["format"]["syntax"].GetString(), "lark");
      EXPECT_TRUE(
          std::string(t["format"]["definition"].GetString()).starts_with("start: begin_patch"));
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"exec_command", "write_stdin", "shell", "update_plan",
                                             "apply_patch"}));
}

TEST_F(RouterTest, UnknownToolIsUnsupported) {
  auto results = Dispatch(*router_, {ToolCall{"c1", "frobnicate", "{}", false},
                                     ToolCall{"c2", "web_fetch", "x", true}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].output, "unsupported call: frobnicate");
  EXPECT_FALSE(results[0].success);
  EXPECT_EQ(results[0].call_id, "c1");
  EXPECT_EQ(results[1].output, "unsupported call: web_fetch");
  EXPECT_TRUE(results[1].custom);
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(RouterTest, ParallelSafeCallsRunTogetherAndAnswerInCallOrder) {
  auto results = Dispatch(
      *router_,
      {ToolCall{"c1", "shell", R"({"command":["sh","-c","sleep 0.5; echo one"]})", false},
       ToolCall{"c2", "shell", R"({"command":["echo","two"]})", false},
       ToolCall{"c3", "update_plan", R"({"plan":[{"step":"s","status":"pending"}]})", false},
       ToolCall{"c4", "shell", R"({"command":["echo","four"]})", false}});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].call_id, "c1");
  EXPECT_TRUE(results[0].output.ends_with("Output:\none\n")) << results[0].output;
  EXPECT_TRUE(results[1].output.ends_with("Output:\ntwo\n"));
  EXPECT_EQ(results[2].output, "Plan updated");
  EXPECT_TRUE(results[3].output.ends_with("Output:\nfour\n"));
  // The quick commands finished while the slow first one was still running.
  std::string slow = CommandId("sleep 0.5");
  EXPECT_LT(At("completed " + CommandId("echo two")), At("completed " + slow));
  EXPECT_LT(At("completed " + CommandId("echo four")), At("completed " + slow));
}

TEST_F(RouterTest, APatchWaitsForTheCallsBeforeItAndTheCallsAfterItWaitForIt) {
  auto results = Dispatch(
      *router_,
      {ToolCall{"c1", "shell", R"({"command":["sh","-c","sleep 0.3; echo one > one.txt"]})", false},
       ToolCall{"c2", "apply_patch",
                "*** Begin Patch\n*** Update File: one.txt\n@@\n-one\n+uno\n*** End Patch", true},
       ToolCall{"c3", "shell", R"({"command":["cat","one.txt"]})", false}});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[1].success) << results[1].output;
  EXPECT_TRUE(results[2].output.ends_with("Output:\nuno\n")) << results[2].output;
  EXPECT_EQ(Trace(),
            (std::vector<std::string>{
                "started item_0 command_execution", "completed item_0 command_execution",
                "started item_1 file_change", "completed item_1 file_change",
                "started item_2 command_execution", "completed item_2 command_execution"}));
}

// A shell call that creates `mine` and waits (at most 5 s) for `theirs`: it prints "met" only
// when the other call ran at the same time, so overlap is shown without measuring time.
std::string Rendezvous(const std::string& mine, const std::string& theirs) {
  return R"({"command":["sh","-c","touch )" + mine + "; i=0; while [ ! -e " + theirs +
         R"( ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; [ -e )" + theirs +
         R"( ] && echo met || echo alone"]})";
}

TEST_F(RouterTest, CallsBeforeAPatchStillRunTogether) {
  auto results = Dispatch(
      *router_,
      {ToolCall{"c1", "shell", Rendezvous("a.flag", "b.flag"), false},
       ToolCall{"c2", "shell", Rendezvous("b.flag", "a.flag"), false},
       ToolCall{"c3", "apply_patch",
                "*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** Delete File: b.flag\n"
                "*** End Patch",
                true},
       ToolCall{"c4", "shell", R"({"command":["sh","-c","cat patched.txt; ls"]})", false}});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].output.ends_with("Output:\nmet\n")) << results[0].output;
  EXPECT_TRUE(results[1].output.ends_with("Output:\nmet\n")) << results[1].output;
  // The patch ran after both (it deleted the second's flag) and the last call saw its result.
  EXPECT_TRUE(results[2].success) << results[2].output;
  EXPECT_TRUE(results[3].output.ends_with("Output:\npatched\na.flag\npatched.txt\n"))
      << results[3].output;
  std::vector<std::string> trace = Trace();
  ASSERT_EQ(trace.size(), 8u);
  EXPECT_EQ(trace[4], "started item_2 file_change");
  EXPECT_EQ(trace[5], "completed item_2 file_change");
  EXPECT_EQ(trace[6], "started item_3 command_execution");
}

// A handler that counts how many of its calls run at once; each waits (at most 2 s) until
// kMaxWorkers are in, so an unbounded dispatcher would be seen running more.
class CountingTool : public ToolHandler {
 public:
  std::string name() const override { return "count"; }
  std::string spec_json() const override { return "{}"; }
  bool parallel_safe() const override { return true; }
  ToolResult Handle(const ToolCall&, ToolEnv&) override {
    std::unique_lock lock(mu_);
    ++running_;
    most_ = std::max(most_, running_);
    if (running_ >= ToolRouter::kMaxWorkers) full_ = true;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(2), [&] { return full_; });
    --running_;
    return ToolResult{"", "counted", true, false};
  }
  size_t most() {
    std::lock_guard lock(mu_);
    return most_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t running_ = 0, most_ = 0;
  bool full_ = false;
};

TEST_F(RouterTest, AtMostKMaxWorkersCallsRunAtOnce) {
  ToolRouter router;
  auto tool = std::make_unique<CountingTool>();
  CountingTool* counter = tool.get();
  router.Register(std::move(tool));
  std::vector<ToolCall> calls;
  for (int i = 0; i < 20; ++i) calls.push_back({"c" + std::to_string(i), "count", "{}", false});
  auto results = Dispatch(router, calls);
  ASSERT_EQ(results.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(results[i].call_id, "c" + std::to_string(i));
    EXPECT_EQ(results[i].output, "counted");
  }
  EXPECT_EQ(counter->most(), ToolRouter::kMaxWorkers);
}

TEST_F(RouterTest, WhenNoThreadStartsTheCallsRunOneByOneInCallOrder) {
  int asked = 0;
  router_->set_thread_starter([&](std::function<void()>) -> Result<std::thread> {
    ++asked;
    return MakeError("cannot start a thread: Resource temporarily unavailable");
  });
  auto results = Dispatch(
      *router_, {ToolCall{"c1", "shell", R"({"command":["sh","-c","sleep 0.2; echo one"]})", false},
                 ToolCall{"c2", "shell", R"({"command":["echo","two"]})", false},
                 ToolCall{"c3", "update_plan", R"({"plan":[]})", false}});
  EXPECT_GE(asked, 1);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].output.ends_with("Output:\none\n")) << results[0].output;
  EXPECT_TRUE(results[1].output.ends_with("Output:\ntwo\n")) << results[1].output;
  EXPECT_EQ(results[2].output, "Plan updated");
  EXPECT_EQ(Trace(), (std::vector<std::string>{
                         "started item_0 command_execution", "completed item_0 command_execution",
                         "started item_1 command_execution", "completed item_1 command_execution",
                         "started item_2 todo_list"}));
}

// A library exception inside a handler on a worker thread is an answer, not std::terminate.
class ThrowingTool : public ToolHandler {
 public:
  std::string name() const override { return "throws"; }
  std::string spec_json() const override { return "{}"; }
  bool parallel_safe() const override { return true; }
  ToolResult Handle(const ToolCall&, ToolEnv&) override { throw std::runtime_error("boom"); }
};

TEST_F(RouterTest, AHandlerThatThrowsOnAWorkerIsReportedToTheModel) {
  ToolRouter router;
  router.Register(std::make_unique<ThrowingTool>());
  router.Register(MakeUpdatePlanTool());
  auto results = Dispatch(router, {ToolCall{"c1", "throws", "{}", false},
                                   ToolCall{"c2", "update_plan", R"({"plan":[]})", false}});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].call_id, "c1");
  EXPECT_EQ(results[0].output, "tool throws failed: boom");
  EXPECT_FALSE(results[0].success);
  EXPECT_EQ(results[1].output, "Plan updated");
}

TEST_F(RouterTest, PlanIsOneTodoListPerTurn) {
  ToolResult r =
      Call(*router_, "update_plan",
           R"({"explanation":"Start","plan":[{"step":"Read code","status":"in_progress"},)"
           R"({"step":"Test","status":"pending"}]})");
  EXPECT_EQ(r.output, "Plan updated");
  EXPECT_TRUE(r.success);
  r = Call(
      *router_, "update_plan",
      R"({"plan":[{"step":"Read code","status":"completed"},{"step":"Test","status":"in_progress"}]})");
  EXPECT_EQ(r.output, "Plan updated");
  router_->OnTurnEnd(emitter_);
  EXPECT_EQ(Trace(),
            (std::vector<std::string>{"started item_0 todo_list", "updated item_0 todo_list",
                                      "completed item_0 todo_list"}));
  const auto& done = Completed<TodoListItem>();
  ASSERT_EQ(done.items.size(), 2u);
  EXPECT_EQ(done.items[0].text, "Read code");
  EXPECT_TRUE(done.items[0].completed);
  EXPECT_FALSE(done.items[1].completed);
  auto first = std::get<TodoListItem>(std::get<ItemStarted>(sink_.events[0]).item.details);
  EXPECT_FALSE(first.items[0].completed);  // in_progress is not completed

  // A later turn starts a new list; a turn without a plan emits nothing at its end.
  router_->OnTurnEnd(emitter_);
  EXPECT_EQ(Trace().size(), 3u);
  Call(*router_, "update_plan", R"({"plan":[]})");
  EXPECT_EQ(Trace().back(), "started item_1 todo_list");
}

TEST_F(RouterTest, PlanRejectsBadArguments) {
  struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"{}", "failed to parse function arguments: missing field `plan`"},
      {R"({"plan":"x"})",
       "failed to parse function arguments: `plan` must be an array of {step, status}"},
      {R"({"plan":[{"step":"a"}]})",
       "failed to parse function arguments: plan[0] must be an object with string fields `step` "
       "and "
       "`status`"},
      {R"({"plan":[{"step":"a","status":"done"}]})",
       "failed to parse function arguments: plan[0].status is \"done\"; expected pending, "
       "in_progress or completed"},
  };
  for (const auto& c : cases) {
    ToolResult r = Call(*router_, "update_plan", c.args);
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.output, c.message);
  }
  EXPECT_TRUE(sink_.events.empty());
}

// The orchestrator with the real sandbox: a write outside the workspace is denied, and under
// on-failure retried once unconfined, in the open.
class SandboxedTest : public RouterTest {
 protected:
  void SetUp() override {
    RouterTest::SetUp();
    char outside[] = "/var/tmp/ae-orch-XXXXXX";
    ASSERT_NE(::mkdtemp(outside), nullptr);
    outside_ = outside;
    sandbox::Settings settings;
    settings.mode = sandbox::Mode::kWorkspaceWrite;
    auto policy = sandbox::BuildPolicy(settings, root_);
    ASSERT_TRUE(policy.ok()) << policy.message();
    auto prepared = sandbox::Prepare(*policy);
    if (!prepared.ok())
      GTEST_SKIP() << "workspace-write cannot be enforced here: " << prepared.message();
    prepared_holder_ = std::move(prepared).value();
    turn_.sandbox = *policy;
    prepared_ = prepared_holder_.get();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(outside_, ec);
    RouterTest::TearDown();
  }
  std::string Touch() { return R"({"command":["touch",")" + outside_ + R"(/f"]})"; }
  std::string outside_;
  sandbox::PreparedPtr prepared_holder_;
};

TEST_F(SandboxedTest, DeniedUnderNeverGoesBackToTheModel) {
  turn_.approval = ApprovalPolicy::kNever;
  ToolResult r = Call(*router_, "shell", Touch());
  EXPECT_FALSE(std::filesystem::exists(outside_ + "/f")) << "the sandbox let the write through";
  EXPECT_FALSE(r.success);
  EXPECT_TRUE(r.output.ends_with(
      "\n\nThe workspace-write sandbox blocked this command; approval_policy is never, so it was "
      "not retried outside the sandbox."))
      << r.output;
  EXPECT_EQ(Trace(), (std::vector<std::string>{"started item_0 command_execution",
                                               "completed item_0 command_execution"}));
  EXPECT_EQ(Completed<CommandExecutionItem>().status, ItemStatus::kFailed);

  // Inside the workspace the same command works, confined.
  r = Call(*router_, "shell", R"({"command":["touch","inside"]})");
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_TRUE(Exists("inside"));
}

TEST_F(SandboxedTest, DeniedUnderOnFailureIsRetriedOnceUnconfined) {
  turn_.approval = ApprovalPolicy::kOnFailure;
  ToolResult r = Call(*router_, "shell", Touch());
  EXPECT_TRUE(r.success) << r.output;
  EXPECT_TRUE(std::filesystem::exists(outside_ + "/f"));
  EXPECT_EQ(Trace(), (std::vector<std::string>{
                         "started item_0 command_execution", "completed item_0 command_execution",
                         "completed item_1 error", "started item_2 command_execution",
                         "completed item_2 command_execution"}));
  EXPECT_EQ(Completed<CommandExecutionItem>(0).status, ItemStatus::kFailed);
  EXPECT_EQ(Completed<CommandExecutionItem>(1).status, ItemStatus::kCompleted);
  EXPECT_EQ(Completed<ErrorItem>().message,
            "command was denied by the sandbox (workspace-write: its write to " + outside_ +
                "/f was refused (outside the writable roots) and is allowed outside the "
                "sandbox); retrying it once outside the sandbox because approval_policy is "
                "on-failure: touch " +
                outside_ + "/f");
}

TEST_F(SandboxedTest, NetworkFlagReachesSandboxedCommands) {
  ToolResult r =
      Call(*router_, "shell", R"({"command":["sh","-c","echo $CODEX_SANDBOX_NETWORK_DISABLED"]})");
  EXPECT_TRUE(r.output.ends_with("Output:\n1\n")) << r.output;
}

}  // namespace
}  // namespace ae::testing
