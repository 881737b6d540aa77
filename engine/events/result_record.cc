#include "engine/events/result_record.h"

#include <algorithm>

#include <chrono>

namespace ae {

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ResultRecorder::EnableNetwork() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!network_) network_.emplace();
}

void ResultRecorder::OnConnection(const std::string& host, int port, bool reached) {
  const std::string what = host.find(':') != std::string::npos
                               ? "[" + host + "]:" + std::to_string(port)
                               : host + ":" + std::to_string(port);
  std::lock_guard<std::mutex> lock(mu_);
  if (!network_) network_.emplace();
  std::vector<std::string>& list = reached ? network_->reached : network_->refused;
  auto at = std::lower_bound(list.begin(), list.end(), what);
  if (at == list.end() || *at != what) list.insert(at, what);
}

TurnStats ResultRecorder::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return TurnStats{now_() - start_, requests_, last_usage_, network_};
}

}  // namespace ae
