// Tool calls: the router maps a call's name to its handler, offers the handlers' specs to
// the model, and runs one response's calls through a reader/writer gate (call_gate.h): the
// parallel-safe ones together, the others alone.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/cancel.h"
#include "base/result.h"
#include "engine/events/emitter.h"
#include "engine/exec/turn_context.h"

namespace ae {

class Orchestrator;

struct ToolCall {
  std::string call_id;
  std::string name;
  std::string input;    // function: JSON arguments; custom tool: free-form text
  bool custom = false;  // custom_tool_call (answered with custom_tool_call_output)
};

struct ToolResult {
  std::string call_id;
  std::string output;  // text fed back to the model
  bool success = true;
  bool custom = false;
  // A warning for the model, not part of the output: the turn adds it to the history after
  // this batch's outputs as a user message "Warning: ...", as codex records model warnings.
  std::string model_warning;
};

// What a handler may use while it runs.
struct ToolEnv {
  const TurnContext& turn;
  Emitter& emitter;
  CancelToken& cancel;
  Orchestrator& orchestrator;
};

class ToolHandler {
 public:
  virtual ~ToolHandler() = default;
  virtual std::string name() const = 0;
  virtual std::string spec_json() const = 0;  // one Responses-API tool object
  virtual bool parallel_safe() const = 0;
  virtual ToolResult Handle(const ToolCall& call, ToolEnv& env) = 0;
  // Right before turn.completed (the plan completes its todo_list here).
  virtual void OnTurnEnd(Emitter& /*emitter*/) {}
  // The turn stopped, whether it completed, failed or was cancelled: processes a handler left
  // running (unified exec sessions) are killed and their items completed here.
  virtual void StopBackground(Emitter& /*emitter*/) {}
};

// Starts one worker thread for DispatchAll. std::thread's constructor throws
// std::system_error when the system has no thread to give; the default starter turns that into
// an error here, at the border, and a test injects one that always fails.
using ThreadStarter = std::function<Result<std::thread>(std::function<void()>)>;
Result<std::thread> StartThread(std::function<void()> body);

// The output of a call that never started because the run was cancelled first.
inline constexpr std::string_view kNotStartedOutput =
    "aborted: the run was cancelled before this call started";

class ToolRouter {
 public:
  void Register(std::unique_ptr<ToolHandler> handler);
  std::string SpecsJson() const;  // JSON array of every handler's spec
  // True when a call to `name` may run alongside others (an unknown name only answers an
  // error, so it may).
  bool ParallelSafe(const std::string& name) const;
  // Runs one response's calls: parallel-safe calls start together (at most kMaxWorkers at
  // once), a call that is not waits for the calls before it and runs alone, the calls after
  // it wait for it. Handlers emit their events as they go, so events appear in completion
  // order; results come back in call order. A name no handler owns answers "unsupported call:
  // <name>". When no worker thread can be started the calls run one by one on this thread.
  // Once env.cancel is set, calls not yet started answer kNotStartedOutput and run nothing.
  std::vector<ToolResult> DispatchAll(const std::vector<ToolCall>& calls, ToolEnv& env);
  void OnTurnEnd(Emitter& emitter);
  void StopBackground(Emitter& emitter);

  void set_thread_starter(ThreadStarter starter) { start_thread_ = std::move(starter); }

  // Calls running at once, this thread included; models rarely send more than a few.
  static constexpr size_t kMaxWorkers = 8;

 private:
  ToolHandler* Find(const std::string& name) const;

  std::vector<std::unique_ptr<ToolHandler>> handlers_;
  ThreadStarter start_thread_ = StartThread;
};

// exec_command, write_stdin, shell, apply_patch, update_plan.
std::unique_ptr<ToolRouter> MakeDefaultRouter();

}  // namespace ae
