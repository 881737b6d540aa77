// The Chat Completions wire (Ollama, vLLM, llama.cpp server, OpenRouter, OpenAI):
// POST {base_url}/chat/completions with stream:true. Text, reasoning (reasoning_content /
// reasoning deltas) and tool calls assembled from tool_calls deltas by index come back as
// the same Responses-API output items the responses wire produces: a reasoning item, a
// message item, then function_call items, so the engine cannot tell the wires apart.
#pragma once

#include <memory>
#include <string>

#include "engine/model/client.h"
#include "engine/model/streaming.h"
#include "engine/model/wire_client.h"

namespace ae {

std::unique_ptr<StreamDecoder> MakeChatDecoder(StreamObserver& observer);

// POST /chat/completions, decoded by MakeChatDecoder (MakeWireClient makes the client).
WireSpec ChatWire();

}  // namespace ae
