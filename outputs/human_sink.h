// HumanSink: progress for a person on stderr (header, reasoning, commands with
// their exit status and a few output lines, patches with their diff, plan steps, errors,
// token usage). The final message itself goes to stdout via the runner, not here.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "base/cancel.h"
#include "engine/events/event_sink.h"
#include "outputs/run_summary.h"

namespace ae {

struct HumanSinkOptions {
  bool color = false;
  std::string version;            // shown in the header
  std::string prompt;             // echoed under "user"
  int command_output_lines = 10;  // lines of command output shown
  std::string repo_root;          // review findings show paths relative to it
  // The run's token: once cancelled, a terminal that does not take output is given up on
  // (base/write_all.h), so a paused reader cannot hold the run past SIGTERM.
  const CancelToken* cancel = nullptr;
};

// `text` made safe to print on a terminal: valid UTF-8, and every control character except
// \n and \t (C0, DEL, C1; so ESC sequences such as CSI colours, OSC title and clipboard
// writes) shown visibly as \xNN instead of being interpreted.
std::string NeutralizeForTerminal(std::string_view text);

// What human mode writes on stdout for the final message (a newline is added by the caller):
// on a terminal it is model text like any other and goes through NeutralizeForTerminal; into a
// pipe or a file it is data (`answer=$(agentexec "…")`) and stays byte for byte, as in `-o`.
std::string FinalMessageForStdout(std::string_view text, bool terminal);

class HumanSink : public EventSink {
 public:
  HumanSink(int fd, HumanSinkOptions options) : fd_(fd), opt_(std::move(options)) {}
  void Emit(const Event& event) override;

 private:
  // Writes our own text (with our styling); everything from the model or a command in it has
  // been through NeutralizeForTerminal.
  void Write(const std::string& text);
  std::string Style(const char* ansi, const std::string& text) const;
  void OnItemStarted(const Item& item);
  void OnItemCompleted(const Item& item);
  void ShowPlan(const Item& item);

  int fd_;
  HumanSinkOptions opt_;
  bool failed_ = false;  // a write failed: stop writing, the run goes on
  std::map<std::string, std::chrono::steady_clock::time_point> started_;
  std::string last_shown_;  // id of the item whose lines were written last
  RunTally tally_;          // for the summary line that ends the run
};

// 1701 -> "1,701"
std::string WithThousands(int64_t n);

}  // namespace ae
