// HumanSink: CONTRACT §4. Progress for a person on stderr (header, reasoning, commands with
// their exit status and a few output lines, patches with their diff, plan steps, errors,
// token usage). The final message itself goes to stdout via the runner, not here.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "engine/event_sink.h"
#include "outputs/run_summary.h"

namespace ae {

struct HumanSinkOptions {
  bool color = false;
  std::string version;            // shown in the header
  std::string prompt;             // echoed under "user"
  int command_output_lines = 10;  // lines of command output shown
};

class HumanSink : public EventSink {
 public:
  HumanSink(int fd, HumanSinkOptions options) : fd_(fd), opt_(std::move(options)) {}
  void Emit(const Event& event) override;

 private:
  void Write(const std::string& text);
  std::string Style(const char* ansi, const std::string& text) const;
  void OnItemStarted(const Item& item);
  void OnItemCompleted(const Item& item);
  void ShowPlan(const Item& item);

  int fd_;
  HumanSinkOptions opt_;
  std::map<std::string, std::chrono::steady_clock::time_point> started_;
  std::string last_shown_;  // id of the item whose lines were written last
  RunTally tally_;          // for the summary line that ends the run
};

// 1701 -> "1,701"
std::string WithThousands(int64_t n);

}  // namespace ae
