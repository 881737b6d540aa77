// The result record of a run: how long it took, how many model requests it
// sent and the last one's usage. turn.completed and turn.failed carry it besides `usage`.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "engine/events/events.h"

namespace ae {

// Milliseconds on a monotonic clock; tests pass a fake.
using MonotonicMs = std::function<int64_t()>;
int64_t SteadyNowMs();

class ResultRecorder {
 public:
  explicit ResultRecorder(MonotonicMs now = SteadyNowMs) : now_(std::move(now)), start_(now_()) {}

  // A model request is sent (its retries count once).
  void OnRequest() { ++requests_; }
  // The request finished with `usage`.
  void OnUsage(const Usage& usage) { last_usage_ = usage; }
  // The run has a network allow-list: the record says what its commands reached.
  void EnableNetwork();
  // A connection a command attempted through the proxy (any thread).
  void OnConnection(const std::string& host, int port, bool reached);
  // The record as of now.
  TurnStats Stats() const;

 private:
  MonotonicMs now_;
  int64_t start_;
  int requests_ = 0;
  Usage last_usage_;
  mutable std::mutex mu_;  // the network summary: proxy threads add to it
  std::optional<NetworkSummary> network_;
};

}  // namespace ae
