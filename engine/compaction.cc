#include "engine/compaction.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <set>
#include <string_view>
#include <unordered_set>

#include "base/json.h"
#include "engine/history.h"

namespace ae {

const char* const kCompactionPrompt =
    "The conversation is about to be compacted to fit the context window. Write a handoff "
    "note for the model that will continue this task from it alone:\n"
    "- the goal and any constraints or preferences the user stated;\n"
    "- what has been done so far, with the decisions taken and why;\n"
    "- the state of the work: files changed, commands that matter and what they showed;\n"
    "- what remains to be done, as concrete next steps;\n"
    "- exact names, paths, error messages and values the next steps need.\n"
    "Be brief and specific. Do not call tools; answer with the note only.";

const char* const kSummaryPrefix =
    "The earlier part of this conversation was compacted to fit the context window. Below is a "
    "handoff note on the work done so far; continue the task from it without redoing finished "
    "steps.";

namespace {

struct Parsed {
  std::string type;  // "message" for role-only messages
  std::string role;
  std::string text;  // a message's text parts joined by "\n"
  std::string call_id;
};

Parsed Parse(const std::string& item_json) {
  Parsed p;
  rapidjson::Document doc;
  if (ParseJsonInto(item_json, &doc) || !doc.IsObject()) return p;
  p.type = StringMember(doc, "type");
  if (p.type.empty() && doc.HasMember("role")) p.type = "message";
  p.role = StringMember(doc, "role");
  p.call_id = StringMember(doc, "call_id");
  if (p.type == "message") {
    const rapidjson::Value* content = FindJsonMember(doc, "content");
    if (content != nullptr && content->IsString()) {
      p.text.assign(content->GetString(), content->GetStringLength());
    } else if (content != nullptr && content->IsArray()) {
      for (const auto& part : content->GetArray()) {
        std::string text = StringMember(part, "text");
        if (text.empty()) continue;
        if (!p.text.empty()) p.text += "\n";
        p.text += text;
      }
    }
  }
  return p;
}

bool IsInitialContext(const Parsed& p) {
  if (p.type != "message") return false;
  if (p.role == "developer" || p.role == "system") return true;
  if (p.role != "user") return false;
  std::string_view text = p.text;
  return text.starts_with("<environment_context>") ||
         text.starts_with("# AGENTS.md instructions for ") ||
         text.starts_with("# AGENTS.md instructions\n");
}

bool IsCall(const std::string& type) {
  return type == "function_call" || type == "custom_tool_call" || type == "local_shell_call";
}
bool IsOutput(const std::string& type) {
  return type == "function_call_output" || type == "custom_tool_call_output" ||
         type == "local_shell_call_output";
}

// At most `max_bytes` of `text`, cut on a UTF-8 character boundary.
std::string Head(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

std::vector<std::string> InitialContextOf(const std::vector<std::string>& history) {
  std::vector<std::string> out;
  std::unordered_set<std::string_view> seen;
  for (const std::string& item : history) {
    if (IsInitialContext(Parse(item)) && seen.insert(item).second) out.push_back(item);
  }
  return out;
}

// Passes retry notices on but not the summary's text: it is no answer of the agent's, and
// human mode would print it as one.
class RetriesOnly : public StreamObserver {
 public:
  explicit RetriesOnly(StreamObserver& inner) : inner_(inner) {}
  void OnRetry(int attempt, int max, const std::string& reason) override {
    inner_.OnRetry(attempt, max, reason);
  }

 private:
  StreamObserver& inner_;
};

}  // namespace

int64_t EstimateTokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

int64_t EstimateTokens(const std::vector<std::string>& items) {
  int64_t n = 0;
  for (const std::string& item : items) n += EstimateTokens(item);
  return n;
}

int64_t UserMessageTokens(const std::vector<std::string>& history) {
  int64_t n = 0;
  for (const std::string& item : history) {
    Parsed p = Parse(item);
    if (p.type != "message" || p.role != "user" || IsInitialContext(p)) continue;
    if (std::string_view(p.text).starts_with(kSummaryPrefix)) continue;
    n += EstimateTokens(p.text);
  }
  return n;
}

bool IsInitialContextItem(const std::string& item_json) {
  return IsInitialContext(Parse(item_json));
}

void ContextTracker::OnResponse(const Usage& usage, size_t history_size) {
  counted_ = usage.input_tokens + usage.output_tokens;
  counted_size_ = history_size;
}

int64_t ContextTracker::Tokens(const std::vector<std::string>& history) const {
  if (counted_ <= 0 || counted_size_ > history.size()) return fixed_ + EstimateTokens(history);
  int64_t n = counted_;
  for (size_t i = counted_size_; i < history.size(); ++i) n += EstimateTokens(history[i]);
  return n;
}

std::vector<std::string> BuildCompactedHistory(const std::vector<std::string>& history,
                                               const std::string& summary, int64_t user_budget) {
  std::vector<std::string> out = InitialContextOf(history);
  std::vector<std::string> users;
  for (const std::string& item : history) {
    Parsed p = Parse(item);
    if (p.type != "message" || p.role != "user" || IsInitialContext(p)) continue;
    if (std::string_view(p.text).starts_with(kSummaryPrefix)) continue;
    users.push_back(std::move(p.text));
  }
  std::vector<std::string> kept;
  int64_t remaining = user_budget;
  for (auto it = users.rbegin(); it != users.rend() && remaining > 0; ++it) {
    const int64_t tokens = EstimateTokens(*it);
    if (tokens <= remaining) {
      kept.push_back(std::move(*it));
      remaining -= tokens;
      continue;
    }
    kept.push_back(fmt::format("{}\n[... {} tokens truncated]",
                               Head(*it, static_cast<size_t>(remaining) * 4), tokens - remaining));
    break;
  }
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    out.push_back(MessageInputItem("user", *it));
  }
  out.push_back(MessageInputItem(
      "user", std::string(kSummaryPrefix) + "\n" +
                  (summary.empty() ? std::string("(no summary available)") : summary)));
  return out;
}

std::vector<std::string> AdoptRemoteCompaction(const std::vector<std::string>& history,
                                               const std::vector<std::string>& output) {
  std::vector<std::string> out = InitialContextOf(history);
  for (const std::string& item : output) {
    Parsed p = Parse(item);
    const bool keep = p.type == "compaction" || (p.type == "message" && p.role == "assistant") ||
                      (p.type == "message" && p.role == "user" && !IsInitialContext(p));
    if (keep) out.push_back(item);
  }
  return out;
}

std::vector<std::string> TrimForCompaction(const std::vector<std::string>& history,
                                           int64_t max_tokens) {
  int64_t tokens = EstimateTokens(history);
  if (max_tokens <= 0 || tokens <= max_tokens) return history;
  std::vector<bool> drop(history.size(), false);
  std::set<std::string> dropped_calls;
  // Oldest first: the newest work is what the summary needs most.
  for (size_t i = 0; i < history.size() && tokens > max_tokens; ++i) {
    Parsed p = Parse(history[i]);
    if (IsInitialContext(p)) continue;
    drop[i] = true;
    tokens -= EstimateTokens(history[i]);
    if (IsCall(p.type)) dropped_calls.insert(p.call_id);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < history.size(); ++i) {
    if (drop[i]) continue;
    if (!dropped_calls.empty()) {
      Parsed p = Parse(history[i]);
      // An output whose call was dropped would be refused (no call for it).
      if (IsOutput(p.type) && dropped_calls.contains(p.call_id)) continue;
    }
    out.push_back(history[i]);
  }
  return out;
}

Result<CompactionResult> CompactHistory(ModelClient& client,
                                        const std::vector<std::string>& history,
                                        int64_t tokens_before, const CompactionSettings& settings,
                                        StreamObserver& observer, CancelToken& cancel) {
  CompactionResult result;
  result.tokens_before = tokens_before;
  RetriesOnly quiet(observer);
  // The compaction request must itself fit: a twentieth of the window stays free for the
  // answer, and the prompt's own tokens.
  int64_t fit = 0;
  if (settings.context_window > 0) {
    fit =
        settings.context_window - settings.context_window / 20 - EstimateTokens(kCompactionPrompt);
    if (fit <= 0) fit = 1;
  }
  Prompt prompt;
  prompt.input = TrimForCompaction(history, fit);
  prompt.tools_json = "[]";
  prompt.prompt_cache_key = settings.prompt_cache_key;

  Result<std::optional<CompactedOutput>> remote = client.Compact(prompt, quiet, cancel);
  if (!remote.ok()) return remote.error();
  if (remote->has_value()) {
    result.history = AdoptRemoteCompaction(history, (*remote)->items);
    result.usage = (*remote)->usage;
    result.remote = true;
  } else {
    prompt.input.push_back(MessageInputItem("user", kCompactionPrompt));
    prompt.summarize = true;
    Result<ModelResponse> response = client.Stream(prompt, quiet, cancel);
    if (!response.ok()) return response.error();
    std::string summary;
    for (const OutputItem& item : response->items) {
      if (item.kind == OutputItem::Kind::kMessage && !item.text.empty()) summary = item.text;
    }
    int64_t user_budget = kCompactUserMessageMaxTokens;
    if (settings.auto_compact_token_limit > 0) {
      user_budget = std::min(user_budget, settings.auto_compact_token_limit / 4);
    }
    result.history = BuildCompactedHistory(history, summary, user_budget);
    result.usage = response->usage;
  }
  result.tokens_after = EstimateTokens(result.history);
  result.user_tokens_before = UserMessageTokens(history);
  result.user_tokens_after = UserMessageTokens(result.history);
  return result;
}

}  // namespace ae
