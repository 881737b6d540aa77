#include "engine/tools/router.h"

#include <exception>
#include <shared_mutex>
#include <thread>

#include "engine/tools/apply_patch/tool.h"
#include "engine/tools/exec.h"
#include "engine/tools/plan.h"
#include "engine/tools/unified_exec.h"

namespace ae {
namespace {

// Parallel-safe calls hold it shared, the others exclusively, so a patch never runs while a
// command is reading the tree it changes.
std::shared_mutex& ToolLock() {
  static std::shared_mutex mu;
  return mu;
}

// Cap on threads for one response's calls; models rarely send more than a few.
constexpr size_t kMaxParallel = 8;

ToolResult RunOne(ToolHandler* handler, const ToolCall& call, ToolEnv& env) {
  ToolResult result;
  if (handler == nullptr) {
    result.output = "unsupported call: " + call.name;
    result.success = false;
  } else {
    try {
      if (handler->parallel_safe()) {
        std::shared_lock lock(ToolLock());
        result = handler->Handle(call, env);
      } else {
        std::unique_lock lock(ToolLock());
        result = handler->Handle(call, env);
      }
    } catch (const std::exception& e) {  // a library threw inside a handler: report, go on
      result.output = "tool " + call.name + " failed: " + e.what();
      result.success = false;
    }
  }
  result.call_id = call.call_id;
  result.custom = call.custom;
  return result;
}

}  // namespace

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

std::vector<ToolResult> ToolRouter::DispatchAll(const std::vector<ToolCall>& calls, ToolEnv& env) {
  std::vector<ToolHandler*> handlers;
  bool all_parallel = calls.size() > 1;
  for (const auto& call : calls) {
    ToolHandler* found = nullptr;
    for (const auto& h : handlers_) {
      if (h->name() == call.name) found = h.get();
    }
    handlers.push_back(found);
    if (found != nullptr && !found->parallel_safe()) all_parallel = false;
  }

  std::vector<ToolResult> results(calls.size());
  if (!all_parallel) {
    for (size_t i = 0; i < calls.size(); ++i) results[i] = RunOne(handlers[i], calls[i], env);
    return results;
  }
  for (size_t start = 0; start < calls.size(); start += kMaxParallel) {
    size_t end = std::min(calls.size(), start + kMaxParallel);
    std::vector<std::thread> threads;
    for (size_t i = start; i < end; ++i) {
      threads.emplace_back([&, i] { results[i] = RunOne(handlers[i], calls[i], env); });
    }
    for (auto& t : threads) t.join();
  }
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
