// One HTTP model client for every wire. The Responses API and Chat Completions differ only in
// their endpoint, their request body and their stream decoder; those make a WireSpec, and
// retries, headers, cancellation and the optional compaction endpoint live here once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "engine/model/client.h"
#include "engine/model/streaming.h"

namespace ae {

struct WireSpec {
  std::string path;  // under base_url, e.g. "/responses"
  std::function<Result<std::string>(const ModelOptions&, const Prompt&)> build_request;
  std::function<std::unique_ptr<StreamDecoder>(StreamObserver&)> make_decoder;
  // The wire's compaction endpoint (a JSON answer, not a stream); empty path: none, and the
  // caller summarises with a normal request instead.
  std::string compact_path;
  std::function<std::string(const ModelOptions&, const Prompt&)> build_compact_request;
  std::function<std::unique_ptr<StreamDecoder>()> make_compact_decoder;
};

std::unique_ptr<ModelClient> MakeWireClient(WireSpec wire, const ProviderInfo& provider,
                                            const ModelOptions& options, std::string api_key);

}  // namespace ae
