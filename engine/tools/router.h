// Tool calls: the router maps a call's name to its handler, offers the handlers' specs to
// the model, and runs one response's calls (concurrently when all are parallel-safe).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "engine/emitter.h"
#include "engine/turn_context.h"

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

class ToolRouter {
 public:
  void Register(std::unique_ptr<ToolHandler> handler);
  std::string SpecsJson() const;  // JSON array of every handler's spec
  // Results come back in call order whatever order the calls finished in. A name no
  // handler owns answers "unsupported call: <name>".
  std::vector<ToolResult> DispatchAll(const std::vector<ToolCall>& calls, ToolEnv& env);
  void OnTurnEnd(Emitter& emitter);
  void StopBackground(Emitter& emitter);

 private:
  std::vector<std::unique_ptr<ToolHandler>> handlers_;
};

// exec_command, write_stdin, shell, apply_patch, update_plan.
std::unique_ptr<ToolRouter> MakeDefaultRouter();

}  // namespace ae
