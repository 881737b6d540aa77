// A model provider as a [model_providers.NAME] table sets it (ProviderSettings), and the engine's
// resolved view of one (ProviderInfo): one field list, so the table and the client cannot drift.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ae {

// The most retries a provider gets, of a request and of a broken stream: more would keep a
// mistyped count retrying without end.
inline constexpr int kMaxProviderRetries = 100;

struct ProviderSettings {
  std::string name;      // display name
  std::string base_url;  // e.g. https://api.openai.com/v1
  std::string env_key;   // the NAME of the variable holding the bearer key, never the key
  std::string wire_api = "responses";  // "responses" | "chat" | "scripted"
  std::map<std::string, std::string> http_headers;
  std::map<std::string, std::string> env_http_headers;  // header -> variable name
  std::map<std::string, std::string> query_params;
  int64_t request_max_retries = 4;
  int64_t stream_max_retries = 5;
  int64_t stream_idle_timeout_ms = 300000;
  std::string script;  // wire "scripted": path of the turns file (absolute once loaded)
};

struct ProviderInfo : ProviderSettings {
  std::string id;  // key under model_providers, e.g. "openai"
  int64_t connect_timeout_ms = 30000;
  // Set by MakeModelClient: the variable the bearer key was read from, named in 401/403
  // messages (never the key itself).
  std::string key_variable;
};

}  // namespace ae
