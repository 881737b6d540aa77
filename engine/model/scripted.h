// The scripted provider (wire_api = "scripted"): replays model turns from a JSON file named
// by the provider's `script`, offline, without a key. It powers the demo and lets CI users
// dry-run a pipeline. tests/support/model_server.py serves the same file format over HTTP.
//
// Format:
//   {"turns": [
//     {"items": [
//        {"type": "reasoning", "summary": ["Looking at the repo"]},
//        {"type": "message", "text": "Running the tests first.", "phase": "commentary"},
//        {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "ls"}},
//        {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch\n..."},
//        {"type": "web_search_call", "query": "rapidjson raw value"},
//        {"type": "message", "text": "Done."}],
//      "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 20,
//                "reasoning_output_tokens": 0}},
//     {"fail": "simulated failure"}
//   ]}
//
// Each model request consumes the next turn, in order. A turn either lists output items
// (and optional usage; missing counts are 0) or has "fail": that request fails with the
// given message (no retry). Item fields:
//   message           "text" (required), "phase" (optional: "commentary", "final_answer")
//   reasoning         "summary": a string or an array of strings (one summary part each);
//                     optional "encrypted_content"
//   function_call     "name", "arguments" (a JSON object, or a string holding JSON),
//                     optional "call_id"
//   custom_tool_call  "name", "input" (the free-form input, e.g. an apply_patch patch),
//                     optional "call_id"
//   web_search_call   "query"
// The default call_id is "call_<turn>_<index>": turn counts from 1, index is the item's
// position in the turn counting from 0 (e.g. "call_1_2").
// Items become Responses-API output items, exactly as the HTTP wires deliver them:
//   {"type":"message","role":"assistant","content":[{"type":"output_text","text":T}],"phase":P}
//   {"type":"reasoning","summary":[{"type":"summary_text","text":S},...],"encrypted_content":E}
//   {"type":"function_call","name":N,"arguments":A,"call_id":C}
//   {"type":"custom_tool_call","call_id":C,"name":N,"input":I}
//   {"type":"web_search_call","status":"completed","action":{"type":"search","query":Q}}
// Context compaction's summarisation request (Prompt::summarize; a script cannot place it) is
// answered with one assistant message "Summary of the work so far (N history items)." and consumes
// no turn. Each message's text is also streamed as one text delta. Running out of turns fails the
// request: `scripted provider: no turn left for request N (script has M turns): PATH`.
#pragma once

#include <memory>
#include <string>

#include <rapidjson/document.h>

#include "base/result.h"
#include "engine/model/client.h"

namespace ae {

// One scripted item as Responses-API output item JSON. `turn` counts from 1, `index` from 0.
Result<std::string> ScriptedItemJson(const rapidjson::Value& item, int turn, int index);

// Reads and checks the whole script now, so a bad file fails before any turn runs.
Result<std::unique_ptr<ModelClient>> MakeScriptedClient(const ProviderInfo& provider);

}  // namespace ae
