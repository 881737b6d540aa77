// Parsing one Responses-API output item (the `item` of response.output_item.done) into the
// engine's OutputItem, keeping the item's JSON so it can be replayed to the model.
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "base/json.h"  // ToJson: the compact, safe serialisation raw_json is made with
#include "base/result.h"
#include "engine/model/client.h"

namespace ae {

// The kind of an item whose "type" is `type` (kOther for any type the engine does not know).
OutputItem::Kind ItemKindOf(std::string_view type);

// Writes the "role" and "content" of an assistant message whose one part is the output_text
// `text`, into a message item the caller has opened (and writes "type" of, and closes): the
// shape every provider's message item takes in the history.
void WriteAssistantContent(JsonWriter& w, std::string_view text);

// {"type":"message","role":"assistant","content":[{"type":"output_text","text":TEXT}]}
std::string AssistantMessageJson(std::string_view text);

// `json` is one item object. raw_json is the item re-serialised compactly.
Result<OutputItem> ParseOutputItem(std::string_view json);
Result<OutputItem> ParseOutputItemValue(const rapidjson::Value& item);

}  // namespace ae
