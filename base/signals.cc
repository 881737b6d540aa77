#include "base/signals.h"

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/duration.h"

namespace ae {
namespace {

CancelToken* g_token = nullptr;

void OnSignal(int sig) {
  if (g_token != nullptr) {
    g_token->Cancel(sig == SIGINT ? CancelReason::kSigint : CancelReason::kSigterm);
  }
}

}  // namespace

void InstallSignalHandlers(CancelToken& token) {
  g_token = &token;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

struct Watchdog::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread thread;
};

Watchdog::Watchdog(CancelToken& token, int64_t timeout_ms) : state_(std::make_unique<State>()) {
  timeout_ms = ClampDurationMs(timeout_ms);  // wait_for(9999999h) would overflow and fire now
  if (timeout_ms <= 0) return;
  State* s = state_.get();
  s->thread = std::thread([s, &token, timeout_ms] {
    std::unique_lock lock(s->mu);
    if (!s->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [s] { return s->done; })) {
      token.Cancel(CancelReason::kTimeout);
    }
  });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(state_->mu);
    state_->done = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

}  // namespace ae
