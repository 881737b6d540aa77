// CallGate: the reader/writer gate one response's tool calls pass through, as codex holds it.
// Parallel-safe calls are readers and run together; any other call is a writer: it waits for
// every earlier call to finish and runs alone, and the calls after it wait for it. Calls are
// admitted in call order, so a patch sees what the commands before it wrote and the commands
// after it see the patch, while everything between two writers runs at once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace ae {

class CallGate {
 public:
  // parallel_safe[i]: call i is a reader.
  explicit CallGate(const std::vector<bool>& parallel_safe);

  // Takes the next call in call order and blocks until it may start; nullopt when every call
  // has been taken. Any number of workers may loop on it: the earliest unfinished call is
  // always runnable, so workers never wait on each other in a cycle.
  std::optional<size_t> Next();
  // Call i has finished (successfully or not).
  void Done(size_t i);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<size_t> wait_for_;  // call i starts once calls [0, wait_for_[i]) are done
  std::vector<bool> done_;
  size_t next_ = 0;       // the next call to hand out
  size_t done_upto_ = 0;  // calls [0, done_upto_) are all done
};

}  // namespace ae
