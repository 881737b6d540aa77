#include "engine/model/client.h"

#include <cstdlib>

#include <fmt/format.h>

#include "engine/events/error_code.h"
#include "engine/model/chat.h"
#include "engine/model/responses.h"
#include "engine/model/scripted.h"
#include "engine/model/streaming.h"

namespace ae {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The bearer key for `provider`. For the built-in "openai" provider, AGENTEXEC_API_KEY and
// then CODEX_API_KEY win over its env_key. The key itself never appears in a message;
// `variable` gets the name it came from.
Result<std::string> ApiKey(const ProviderInfo& provider, std::string* variable) {
  if (provider.id == "openai") {
    for (const char* name : {"AGENTEXEC_API_KEY", "CODEX_API_KEY"}) {
      if (std::string key = Env(name); !key.empty()) {
        *variable = name;
        return key;
      }
    }
  }
  if (provider.env_key.empty()) return std::string();
  *variable = provider.env_key;
  std::string key = Env(provider.env_key.c_str());
  if (key.empty()) {
    // Name every variable that was read, so the fix is obvious whichever one CI sets.
    if (provider.id == "openai") {
      return ModelError(fmt::format("Missing environment variable: set one of `AGENTEXEC_API_KEY`, "
                                    "`CODEX_API_KEY`, `{}`.",
                                    provider.env_key),
                        ErrorCode::kAuth);
    }
    return ModelError(fmt::format("Missing environment variable: `{}`.", provider.env_key),
                      ErrorCode::kAuth);
  }
  return key;
}

}  // namespace

Result<std::unique_ptr<ModelClient>> MakeModelClient(const ProviderInfo& provider,
                                                     const ModelOptions& options) {
  if (provider.wire_api == "scripted") return MakeScriptedClient(provider);
  if (provider.wire_api != "responses" && provider.wire_api != "chat") {
    return MakeError(fmt::format(
        "model provider `{}`: unknown wire_api `{}` (expected responses, chat or scripted)",
        provider.id, provider.wire_api));
  }
  ProviderInfo with_key = provider;
  auto key = ApiKey(provider, &with_key.key_variable);
  if (!key) return key.error();
  return MakeWireClient(provider.wire_api == "chat" ? ChatWire() : ResponsesWire(), with_key,
                        options, std::move(*key));
}

bool IsContextWindowExceeded(const Error& error) {
  return error.code == ErrorCodeName(ErrorCode::kContextLength);
}

}  // namespace ae
