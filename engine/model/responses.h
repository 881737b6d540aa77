// The OpenAI Responses API wire: POST {base_url}/responses with stream:true, events
// response.created / output_item.added / output_text.delta / output_item.done /
// completed / failed (others skipped).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "engine/model/client.h"
#include "engine/model/streaming.h"
#include "engine/model/wire_client.h"

namespace ae {

// The warning for an output item without a string "type": it is skipped, the response goes on.
inline constexpr std::string_view kUntypedItemWarning =
    "the model sent an output item without a \"type\"; it was skipped";

// Decodes one attempt of a Responses stream; deltas go to `observer` as they arrive.
std::unique_ptr<StreamDecoder> MakeResponsesDecoder(StreamObserver& observer);

// POST /responses, decoded by MakeResponsesDecoder, and POST /responses/compact
// (MakeWireClient makes the client).
WireSpec ResponsesWire();

}  // namespace ae
