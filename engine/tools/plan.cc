#include "engine/tools/plan.h"

#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include "base/json.h"

namespace ae {
namespace {

constexpr char kPlanSpec[] =
    R"({"type":"function","name":"update_plan","description":"Records your plan for the task as a list of steps, each pending, in_progress or completed. Call it again with the whole list whenever a step changes; keep at most one step in_progress.","strict":false,"parameters":{"type":"object","properties":{"explanation":{"type":"string","description":"Why the plan changed, if it did."},"plan":{"type":"array","description":"Every step of the plan, in order.","items":{"type":"object","properties":{"step":{"type":"string","description":"What the step does."},"status":{"type":"string","description":"Where the step stands.","enum":["pending","in_progress","completed"]}},"required":["step","status"],"additionalProperties":false}}},"required":["plan"],"additionalProperties":false}})";

Result<std::vector<TodoEntry>> ParsePlan(const std::string& input) {
  rapidjson::Document doc;
  if (std::optional<JsonParseError> bad = ParseJsonInto(input, &doc)) {
    return MakeError(fmt::format("failed to parse function arguments: {} at offset {}", bad->reason,
                                 bad->offset));
  }
  if (!doc.IsObject())
    return MakeError("failed to parse function arguments: expected a JSON object");
  auto plan = doc.FindMember("plan");
  if (plan == doc.MemberEnd())
    return MakeError("failed to parse function arguments: missing field `plan`");
  if (!plan->value.IsArray()) {
    return MakeError(
        "failed to parse function arguments: `plan` must be an array of {step, status}");
  }
  std::vector<TodoEntry> items;
  size_t index = 0;
  for (const auto& entry : plan->value.GetArray()) {
    auto step = entry.IsObject() ? entry.FindMember("step") : entry.MemberEnd();
    auto status = entry.IsObject() ? entry.FindMember("status") : entry.MemberEnd();
    if (!entry.IsObject() || step == entry.MemberEnd() || !step->value.IsString() ||
        status == entry.MemberEnd() || !status->value.IsString()) {
      return MakeError(fmt::format(
          "failed to parse function arguments: plan[{}] must be an object with string fields "
          "`step` and `status`",
          index));
    }
    std::string s = status->value.GetString();
    if (s != "pending" && s != "in_progress" && s != "completed") {
      return MakeError(fmt::format(
          "failed to parse function arguments: plan[{}].status is \"{}\"; expected pending, "
          "in_progress or completed",
          index, s));
    }
    items.push_back(TodoEntry{std::string(step->value.GetString(), step->value.GetStringLength()),
                              s == "completed"});
    ++index;
  }
  return items;
}

class UpdatePlanTool : public ToolHandler {
 public:
  std::string name() const override { return "update_plan"; }
  std::string spec_json() const override { return kPlanSpec; }
  bool parallel_safe() const override { return true; }

  ToolResult Handle(const ToolCall& call, ToolEnv& env) override {
    auto items = ParsePlan(call.input);
    if (!items.ok()) return ToolResult{call.call_id, items.message(), false, call.custom};
    std::lock_guard lock(mu_);
    last_ = TodoListItem{std::move(items).value()};
    if (!item_id_) {
      item_id_ = env.emitter.Start(*last_);
    } else {
      env.emitter.Update(*item_id_, *last_);
    }
    return ToolResult{call.call_id, "Plan updated", true, call.custom};
  }

  void OnTurnEnd(Emitter& emitter) override {
    std::lock_guard lock(mu_);
    if (item_id_) emitter.Complete(*item_id_, *last_);
    item_id_.reset();
    last_.reset();
  }

 private:
  std::mutex mu_;
  std::optional<std::string> item_id_;
  std::optional<TodoListItem> last_;
};

}  // namespace

std::unique_ptr<ToolHandler> MakeUpdatePlanTool() {
  return std::make_unique<UpdatePlanTool>();
}

}  // namespace ae
