#include "engine/model/wire_client.h"

#include <optional>
#include <utility>

#include "engine/model/http.h"

namespace ae {
namespace {

// Whether a failed compaction request means the provider has no compaction endpoint.
bool NoSuchEndpoint(const std::string& message) {
  return message.starts_with("unexpected status 404 ") ||
         message.starts_with("unexpected status 405 ");
}

class WireClient : public ModelClient {
 public:
  WireClient(WireSpec wire, ProviderInfo provider, ModelOptions options, std::string api_key)
      : wire_(std::move(wire)),
        provider_(std::move(provider)),
        options_(std::move(options)),
        key_(std::move(api_key)) {}

  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken& cancel) override {
    auto body = wire_.build_request(options_, prompt);
    if (!body) return body.error();
    HttpRequest req =
        MakeHttpRequest(provider_, key_, wire_.path, std::move(*body), prompt.prompt_cache_key);
    return StreamWithRetries(
        http_, req, provider_, [&] { return wire_.make_decoder(observer); }, observer, cancel);
  }

  // POST the wire's compaction endpoint, as codex compacts with OpenAI. A provider that
  // answers 404 or 405 has no such endpoint: the history is then summarised with a normal
  // request, from now on.
  Result<std::optional<CompactedOutput>> Compact(const Prompt& prompt, StreamObserver& observer,
                                                 CancelToken& cancel) override {
    if (wire_.compact_path.empty() || no_compact_endpoint_) {
      return std::optional<CompactedOutput>();
    }
    HttpRequest req =
        MakeHttpRequest(provider_, key_, wire_.compact_path,
                        wire_.build_compact_request(options_, prompt), prompt.prompt_cache_key);
    req.accept_json = true;
    for (std::string& h : req.headers) {
      if (h.starts_with("accept: ")) h = "accept: application/json";
    }
    Result<ModelResponse> response = StreamWithRetries(
        http_, req, provider_, [&] { return wire_.make_compact_decoder(); }, observer, cancel);
    if (!response.ok()) {
      if (!NoSuchEndpoint(response.message())) return response.error();
      no_compact_endpoint_ = true;
      return std::optional<CompactedOutput>();
    }
    CompactedOutput out;
    out.usage = response->usage;
    for (OutputItem& item : response->items) out.items.push_back(std::move(item.raw_json));
    return std::optional<CompactedOutput>(std::move(out));
  }

 private:
  WireSpec wire_;
  ProviderInfo provider_;
  ModelOptions options_;
  std::string key_;
  HttpClient http_;
  bool no_compact_endpoint_ = false;
};

}  // namespace

std::unique_ptr<ModelClient> MakeWireClient(WireSpec wire, const ProviderInfo& provider,
                                            const ModelOptions& options, std::string api_key) {
  return std::make_unique<WireClient>(std::move(wire), provider, options, std::move(api_key));
}

}  // namespace ae
