#include "engine/model/model_table.h"

#include <fmt/format.h>

namespace ae {
namespace {

struct Row {
  std::string_view slug;
  bool prefix;  // matches names that start with slug
  int64_t context_window;
  bool reasoning;
  std::string_view effort;
  bool summaries;
  bool verbosity;
  std::string_view verbosity_default;
};

// Values from codex's model catalogue and family table (context windows in tokens). Rows for
// reasoning families send `reasoning {effort, summary:"auto"}` so summaries arrive as
// `reasoning` items; codex models (`*-codex`) do not accept `text.verbosity`.
constexpr Row kRows[] = {
    {"gpt-6.1-terra", true, 500000, true, "low", true, true, "low"},
    {"gpt-6.1", true, 272000, true, "low", true, true, "low"},
    {"gpt-6-astra", true, 272000, true, "low", true, true, "low"},
    {"gpt-6", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5.6-sol", true, 272000, true, "low", true, true, "low"},
    {"gpt-5.6", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5.5", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5.4", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5.3-codex", true, 272000, true, "medium", true, false, ""},
    {"gpt-5.2-codex", true, 272000, true, "medium", true, false, ""},
    {"gpt-5.2", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5.1-codex", true, 272000, true, "medium", true, false, ""},
    {"gpt-5.1", true, 272000, true, "medium", true, true, "low"},
    {"gpt-5-codex", true, 272000, true, "medium", true, false, ""},
    {"codex-", true, 272000, true, "medium", true, false, ""},
    {"gpt-5", true, 272000, true, "medium", true, true, "medium"},
    {"o3", true, 200000, true, "medium", true, false, ""},
    {"o4-mini", true, 200000, true, "medium", true, false, ""},
    {"codex-mini-latest", false, 200000, true, "medium", true, false, ""},
    {"gpt-oss", true, 96000, true, "", false, false, ""},
    {"gpt-4.1", true, 1047576, false, "", false, false, ""},
    {"gpt-4o", true, 128000, false, "", false, false, ""},
};

}  // namespace

ModelInfo LookupModel(std::string_view model) {
  if (size_t slash = model.rfind('/'); slash != std::string_view::npos) {
    model.remove_prefix(slash + 1);
  }
  const Row* best = nullptr;
  for (const Row& row : kRows) {
    const bool exact = model == row.slug;
    const bool prefix = row.prefix && model.substr(0, row.slug.size()) == row.slug;
    if (exact) {
      best = &row;
      break;
    }
    if (prefix && (best == nullptr || row.slug.size() > best->slug.size())) best = &row;
  }
  ModelInfo info;
  if (best == nullptr) {
    // Codex's fallback: a reasoning model that takes summaries, nothing else assumed.
    info.context_window = 272000;
    info.reasoning = true;
    info.supports_reasoning_summaries = true;
    info.default_reasoning_summary = "auto";
  } else {
    info.slug = std::string(best->slug);
    info.known = true;
    info.context_window = best->context_window;
    info.reasoning = best->reasoning;
    info.default_reasoning_effort = std::string(best->effort);
    info.supports_reasoning_summaries = best->summaries;
    if (best->summaries) info.default_reasoning_summary = "auto";
    info.supports_verbosity = best->verbosity;
    info.default_verbosity = std::string(best->verbosity_default);
  }
  info.auto_compact_token_limit = info.context_window * 9 / 10;
  return info;
}

std::string UnknownModelWarning(std::string_view model) {
  return fmt::format(
      "Model metadata for `{}` not found. Defaulting to fallback metadata; this can degrade "
      "performance and cause issues.",
      model);
}

}  // namespace ae
