#include "engine/tools/router.h"

#include <algorithm>
#include <exception>
#include <system_error>

#include "engine/tools/apply_patch/tool.h"
#include "engine/tools/call_gate.h"
#include "engine/tools/exec.h"
#include "engine/tools/plan.h"
#include "engine/tools/unified_exec.h"

namespace ae {
namespace {

ToolResult RunOne(ToolHandler* handler, const ToolCall& call, ToolEnv& env) {
  ToolResult result;
  if (handler == nullptr) {
    result.output = "unsupported call: " + call.name;
    result.success = false;
  } else {
    // Nothing may leave a worker thread as an exception (that would be std::terminate): a
    // library that threw inside a handler is reported to the model, and the turn goes on.
    try {
      result = handler->Handle(call, env);
    } catch (const std::exception& e) {
      result = ToolResult{};
      result.output = "tool " + call.name + " failed: " + e.what();
      result.success = false;
    } catch (...) {
      result = ToolResult{};
      result.output = "tool " + call.name + " failed: unknown exception";
      result.success = false;
    }
  }
  result.call_id = call.call_id;
  result.custom = call.custom;
  return result;
}

// The answer to a call the run was cancelled before: nothing ran, no item was emitted.
ToolResult NotStarted(const ToolCall& call) {
  ToolResult result;
  result.output = std::string(kNotStartedOutput);
  result.success = false;
  result.call_id = call.call_id;
  result.custom = call.custom;
  return result;
}

// The most calls the gate can run at once: the longest run of consecutive readers.
size_t WidestReaderRun(const std::vector<bool>& readers) {
  size_t widest = 0, run = 0;
  for (bool reader : readers) {
    run = reader ? run + 1 : 0;
    widest = std::max(widest, run);
  }
  return widest;
}

}  // namespace

Result<std::thread> StartThread(std::function<void()> body) {
  try {
    return std::thread(std::move(body));
  } catch (const std::system_error& e) {
    return MakeError(std::string("cannot start a thread: ") + e.what());
  }
}

void ToolRouter::Register(std::unique_ptr<ToolHandler> handler) {
  handlers_.push_back(std::move(handler));
}

std::string ToolRouter::SpecsJson() const {
  std::string out = "[";
  for (const auto& h : handlers_) {
    if (out.size() > 1) out += ',';
    out += h->spec_json();
  }
  out += ']';
  return out;
}

ToolHandler* ToolRouter::Find(const std::string& name) const {
  for (const auto& h : handlers_) {
    if (h->name() == name) return h.get();
  }
  return nullptr;
}

bool ToolRouter::ParallelSafe(const std::string& name) const {
  ToolHandler* handler = Find(name);
  return handler == nullptr || handler->parallel_safe();
}

std::vector<ToolResult> ToolRouter::DispatchAll(const std::vector<ToolCall>& calls, ToolEnv& env) {
  std::vector<ToolHandler*> handlers;
  std::vector<bool> readers;
  for (const ToolCall& call : calls) {
    handlers.push_back(Find(call.name));
    readers.push_back(ParallelSafe(call.name));
  }

  std::vector<ToolResult> results(calls.size());
  CallGate gate(readers);
  auto work = [&] {
    while (std::optional<size_t> i = gate.Next()) {
      // Once the run is cancelled no call starts: a response of thousands of calls would
      // otherwise spawn every one of them (each killed at once) before the run could end.
      results[*i] =
          env.cancel.cancelled() ? NotStarted(calls[*i]) : RunOne(handlers[*i], calls[*i], env);
      gate.Done(*i);
    }
  };
  // This thread is a worker too, so a batch still completes, one call at a time, when no
  // other thread can be started.
  const size_t workers = std::min(WidestReaderRun(readers), kMaxWorkers);
  std::vector<std::thread> threads;
  for (size_t n = 1; n < workers; ++n) {
    Result<std::thread> thread = start_thread_(work);
    if (!thread.ok()) break;
    threads.push_back(std::move(thread).value());
  }
  work();
  for (std::thread& t : threads) t.join();
  return results;
}

void ToolRouter::OnTurnEnd(Emitter& emitter) {
  for (const auto& h : handlers_) h->OnTurnEnd(emitter);
}

void ToolRouter::StopBackground(Emitter& emitter) {
  for (const auto& h : handlers_) h->StopBackground(emitter);
}

// Offered in codex's order: commands, the plan, then patches.
std::unique_ptr<ToolRouter> MakeDefaultRouter() {
  auto router = std::make_unique<ToolRouter>();
  auto sessions = std::make_shared<UnifiedExec>();
  router->Register(MakeExecCommandTool(sessions));
  router->Register(MakeWriteStdinTool(sessions));
  router->Register(MakeShellTool());
  router->Register(MakeUpdatePlanTool());
  router->Register(MakeApplyPatchTool());
  return router;
}

}  // namespace ae
