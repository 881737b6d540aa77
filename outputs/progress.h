// A long command is not silence. In human mode, ProgressSink sits in front of
// the HumanSink: on a terminal it keeps a live status line for the oldest running command
// (elapsed time, the command), cleared before anything else is written; when stderr is not a
// terminal (CI logs) it writes "still running (2m10s): CMD" lines at a growing interval.
// ProgressLines is the clock-free logic; tests drive it with a fake clock.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "engine/events/event_sink.h"
#include "engine/events/result_record.h"

namespace ae {

struct ProgressOptions {
  bool terminal = false;             // live status line instead of notice lines
  int64_t live_after_ms = 2000;      // terminal: show the line once a command ran this long
  int64_t first_notice_ms = 30000;   // not a terminal: the first notice
  int64_t max_interval_ms = 600000;  // notices double their interval up to this
};

class ProgressLines {
 public:
  explicit ProgressLines(ProgressOptions options) : opt_(options) {}

  // Tracks command_execution items from started to completed.
  void OnEvent(const Event& event, int64_t now_ms);
  // What to write to stderr at `now_ms` ("" for nothing).
  std::string Tick(int64_t now_ms);
  // Before other output: erases the live line if one is shown ("" otherwise).
  std::string Clear();

 private:
  struct Running {
    std::string command;
    int64_t started_ms = 0;
    int64_t next_notice_ms = 0;
    int64_t interval_ms = 0;
  };
  ProgressOptions opt_;
  std::map<std::string, Running> running_;  // by item id; ids grow, so begin() is the oldest
  bool line_shown_ = false;
};

class ProgressSink : public EventSink {
 public:
  // Forwards every event to `inner`; writes progress to `fd` from a ticker thread.
  ProgressSink(EventSink& inner, int fd, ProgressOptions options, MonotonicMs now = SteadyNowMs);
  ~ProgressSink() override;
  void Emit(const Event& event) override;
  void Close() override;

 private:
  void Loop();
  void Write(const std::string& text);

  EventSink& inner_;
  int fd_;
  MonotonicMs now_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  ProgressLines lines_;
  std::thread ticker_;
};

}  // namespace ae
