// Shared setup for the tool tests: a scratch workspace, a turn, an emitter that records
// events, and an orchestrator running commands unconfined (danger-full-access).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/json.h"
#include "engine/events/emitter.h"
#include "engine/exec/orchestrator.h"
#include "engine/tools/router.h"
#include "tests/support/scratch_dir.h"

namespace ae::testing {

// A JSON string literal.
inline std::string Json(const std::string& s) {
  return ToJson(rapidjson::Value(rapidjson::StringRef(s.data(), s.size())));
}

// Arguments for exec_command without a login shell (keeps /etc/profile noise out).
inline std::string Cmd(const std::string& cmd, const std::string& extra = "") {
  return "{\"cmd\":" + Json(cmd) + ",\"login\":false" + extra + "}";
}

// A tool's answer with the variable parts (chunk id, wall time) replaced.
inline std::string Stable(const std::string& out) {
  std::string s = std::regex_replace(out, std::regex("Chunk ID: [0-9a-f]{6}"), "Chunk ID: ID");
  return std::regex_replace(s, std::regex("Wall time: [0-9]+\\.[0-9]+ seconds"),
                            "Wall time: T seconds");
}

class RecordingSink : public EventSink {
 public:
  void Emit(const Event& e) override {
    std::lock_guard lock(mu_);
    events.push_back(e);
  }
  std::vector<Event> events;

 private:
  std::mutex mu_;
};

// "started item_0 command_execution", ... : a compact view of the event order.
inline std::string Kind(const Item& item) {
  switch (item.details.index()) {
    case 2:
      return "command_execution";
    case 3:
      return "file_change";
    case 5:
      return "todo_list";
    case 7:
      return "error";
    default:
      return "other";
  }
}

class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = scratch_.path();
    turn_.cwd = root_;
    turn_.sandbox.mode = sandbox::Mode::kDangerFullAccess;
  }

  // A fresh orchestrator per call, so changes to turn_ (env policy) take effect.
  std::vector<ToolResult> Dispatch(ToolRouter& router, const std::vector<ToolCall>& calls) {
    Orchestrator orch(turn_, prepared_);
    ToolEnv env{turn_, emitter_, cancel_, orch};
    return router.DispatchAll(calls, env);
  }
  ToolResult Call(ToolRouter& router, std::string name, std::string input, bool custom = false) {
    return Dispatch(router, {ToolCall{"call_1", std::move(name), std::move(input), custom}})[0];
  }

  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }
  // workspace-write with `rel` as the working directory and only writable root, its .git and
  // .agentexec carved out (as BuildPolicy would, without /tmp).
  void ConfineTo(const std::string& rel) {
    std::filesystem::create_directories(Path(rel));
    turn_.cwd = Path(rel);
    turn_.sandbox.mode = sandbox::Mode::kWorkspaceWrite;
    turn_.sandbox.writable_roots = {Path(rel)};
    turn_.sandbox.read_only_carveouts = {Path(rel + "/.git"), Path(rel + "/.agentexec")};
  }
  void Write(const std::string& rel, const std::string& content) const {
    std::filesystem::create_directories(std::filesystem::path(Path(rel)).parent_path());
    std::ofstream(Path(rel), std::ios::binary) << content;
  }
  std::string Read(const std::string& rel) const {
    std::ifstream in(Path(rel), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool Exists(const std::string& rel) const { return std::filesystem::exists(Path(rel)); }

  std::vector<Item> Items(size_t event_index) const {
    std::vector<Item> out;
    for (size_t i = event_index; i < sink_.events.size(); ++i) {
      if (auto* s = std::get_if<ItemStarted>(&sink_.events[i])) out.push_back(s->item);
      if (auto* c = std::get_if<ItemCompleted>(&sink_.events[i])) out.push_back(c->item);
    }
    return out;
  }
  std::vector<std::string> Trace() const {
    std::vector<std::string> out;
    for (const Event& e : sink_.events) {
      if (auto* s = std::get_if<ItemStarted>(&e))
        out.push_back("started " + s->item.id + " " + Kind(s->item));
      if (auto* u = std::get_if<ItemUpdated>(&e))
        out.push_back("updated " + u->item.id + " " + Kind(u->item));
      if (auto* c = std::get_if<ItemCompleted>(&e))
        out.push_back("completed " + c->item.id + " " + Kind(c->item));
    }
    return out;
  }
  template <class T>
  const T& Completed(size_t n = 0) const {  // the n-th completed item of type T
    for (const Event& e : sink_.events) {
      if (auto* c = std::get_if<ItemCompleted>(&e)) {
        if (auto* d = std::get_if<T>(&c->item.details)) {
          if (n-- == 0) return *d;
        }
      }
    }
    static T none;
    ADD_FAILURE() << "no such completed item";
    return none;
  }

  test::ScratchDir scratch_{"ae-tools"};
  std::string root_;
  TurnContext turn_;
  RecordingSink sink_;
  Emitter emitter_{{&sink_}};
  CancelToken cancel_;
  const sandbox::PreparedSandbox* prepared_ = nullptr;
};

}  // namespace ae::testing
