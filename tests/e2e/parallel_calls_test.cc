// One response's tool calls through the real binary and the loopback model server: the
// parallel-safe calls run together even when the response also holds a patch, the patch waits
// for them and runs alone, events come in completion order and the outputs go back to the
// model in call order.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

// Three one-second commands (the first writes a.txt), a patch of a.txt, and a read of it.
constexpr const char* kBatch = R"({"turns":[
  {"items":[
    {"type":"function_call","name":"exec_command","arguments":{"cmd":"sleep 1; echo one > a.txt; echo first"},"call_id":"c1"},
    {"type":"function_call","name":"exec_command","arguments":{"cmd":"sleep 1; echo second"},"call_id":"c2"},
    {"type":"function_call","name":"exec_command","arguments":{"cmd":"sleep 1; echo third"},"call_id":"c3"},
    {"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n*** End Patch","call_id":"c4"},
    {"type":"function_call","name":"exec_command","arguments":{"cmd":"cat a.txt"},"call_id":"c5"}]},
  {"items":[{"type":"message","text":"done"}]}]})";

class ParallelCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string script = ws_.WriteFile("turns.json", kBatch);
    Result<int> port = server_.Start(script, {}, 60);
    ASSERT_TRUE(port.ok()) << port.message();
    ws_.WriteFile("agentexec-home/config.toml", MockProviderConfig(server_));
  }
  RunOutput Run(const std::vector<std::string>& args) {
    RunOptions options;
    options.cwd = ws_.repo();
    options.env = ws_.Env({{"MOCK_KEY", "test-key"}});
    RunOutput out = RunAgentexec(args, options);
    EXPECT_EQ(CheckJsonLines(out.out), "") << out.out;
    return out;
  }
  Workspace ws_;
  TestModelServer server_;
};

// "started sleep 1; echo second" style labels of the item events, in stdout order.
std::vector<std::string> ItemTrace(const std::vector<std::string>& lines) {
  std::vector<std::string> trace;
  for (const std::string& line : lines) {
    rapidjson::Document d;
    d.Parse(line.c_str());
    if (!d.IsObject() || !d.HasMember("item")) continue;
    std::string type = d["type"].GetString();
    const rapidjson::Value& item = d["item"];
    std::string kind = item["type"].GetString();
    std::string what;
    if (kind == "command_execution") {
      what = item["command"].GetString();
      // "/bin/bash -lc 'sleep 1; echo second'" -> "sleep 1; echo second"
      size_t quote = what.find('\'');
      if (quote != std::string::npos) what = what.substr(quote + 1, what.rfind('\'') - quote - 1);
    } else {
      what = kind;
    }
    trace.push_back((type == "item.started" ? "started " : "completed ") + what);
  }
  return trace;
}

size_t IndexOf(const std::vector<std::string>& trace, const std::string& entry) {
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace[i] == entry) return i;
  }
  ADD_FAILURE() << "no event '" << entry << "'";
  return trace.size();
}

TEST_F(ParallelCallsTest, ReadsRunTogetherThePatchWaitsForThemAndOutputsKeepCallOrder) {
  RunOutput out = Run({"--json", "-s", "workspace-write", "go"});
  ASSERT_EQ(out.exit_code, 0) << out.err << out.out;

  // No wall-clock bound: on a loaded machine the run's own start-up and the patch can take
  // it past any serial floor. The overlap is proved from the event order below.

  const std::vector<std::string> trace = ItemTrace(out.lines());
  const std::string one = "sleep 1; echo one > a.txt; echo first";
  const std::string two = "sleep 1; echo second";
  const std::string three = "sleep 1; echo third";
  // Every command started before any of them completed: they overlapped.
  size_t first_completion =
      std::min({IndexOf(trace, "completed " + one), IndexOf(trace, "completed " + two),
                IndexOf(trace, "completed " + three)});
  for (const std::string& cmd : {one, two, three}) {
    EXPECT_LT(IndexOf(trace, "started " + cmd), first_completion) << cmd;
  }
  // The patch started after the three completed and completed before the read after it began.
  size_t patch_started = IndexOf(trace, "started file_change");
  for (const std::string& cmd : {one, two, three}) {
    EXPECT_LT(IndexOf(trace, "completed " + cmd), patch_started) << cmd;
  }
  EXPECT_LT(IndexOf(trace, "completed file_change"), IndexOf(trace, "started cat a.txt"));

  // The model gets the outputs in call order; the patch saw the first command's file and the
  // read after it saw the patch.
  std::vector<LoggedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  rapidjson::Document second;
  second.Parse(requests[1].body_json.c_str());
  ASSERT_TRUE(second.IsObject());
  std::vector<std::string> ids, outputs;
  for (const rapidjson::Value& item : second["input"].GetArray()) {
    std::string type = item["type"].GetString();
    if (type != "function_call_output" && type != "custom_tool_call_output") continue;
    ids.push_back(item["call_id"].GetString());
    outputs.push_back(item["output"].IsString() ? item["output"].GetString() : "");
  }
  ASSERT_EQ(ids, (std::vector<std::string>{"c1", "c2", "c3", "c4", "c5"}));
  EXPECT_NE(outputs[0].find("first\n"), std::string::npos) << outputs[0];
  EXPECT_NE(outputs[1].find("second\n"), std::string::npos) << outputs[1];
  EXPECT_NE(outputs[2].find("third\n"), std::string::npos) << outputs[2];
  EXPECT_NE(outputs[3].find("M a.txt"), std::string::npos) << outputs[3];
  EXPECT_NE(outputs[4].find("uno\n"), std::string::npos) << outputs[4];
}

}  // namespace
}  // namespace ae::e2e
