// The model table: what agentexec knows about a model family (name or prefix), as codex keeps
// it: context window, auto-compact limit, the reasoning and verbosity defaults, and which
// request fields the family accepts. The request builder sends `reasoning` and `text` only as
// the family allows; an unknown model gets codex's fallback metadata and a warning.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ae {

struct ModelInfo {
  std::string slug;                      // the table row that matched ("" = fallback)
  bool known = false;                    // false: fallback metadata
  int64_t context_window = 0;            // tokens; 0 = unknown
  int64_t auto_compact_token_limit = 0;  // tokens; codex: 90% of the window when unset
  bool reasoning = false;                // accepts `reasoning` and `include` (encrypted content)
  std::string default_reasoning_effort;  // "" = leave it to the model
  bool supports_reasoning_summaries = false;
  std::string default_reasoning_summary;  // sent when the family supports summaries
  bool supports_verbosity = false;
  std::string default_verbosity;  // sent when the family supports verbosity
};

// The row for `model`: an exact name first, then the longest prefix ("gpt-5.1-codex-max-x"
// matches "gpt-5.1-codex-max"). A provider prefix such as "openai/" is ignored.
ModelInfo LookupModel(std::string_view model);

// Codex's warning for a model the table does not know.
std::string UnknownModelWarning(std::string_view model);

}  // namespace ae
