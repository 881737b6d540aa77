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

namespace ae {

std::unique_ptr<StreamDecoder> MakeChatDecoder(StreamObserver& observer);

std::unique_ptr<ModelClient> MakeChatClient(const ProviderInfo& provider,
                                            const ModelOptions& options, std::string api_key);

}  // namespace ae
