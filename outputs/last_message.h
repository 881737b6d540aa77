// The final message: the last agent_message of the turn. The runner prints it on stdout in
// human mode and writes it to -o FILE (without a trailing newline).
#pragma once

#include <mutex>
#include <string>

#include "base/fd.h"
#include "base/result.h"
#include "engine/events/event_sink.h"

namespace ae {

class LastMessageSink : public EventSink {
 public:
  void Emit(const Event& event) override;
  std::string text() const;
  bool has_message() const;

 private:
  mutable std::mutex mu_;
  std::string text_;
  bool has_ = false;
};

// -o FILE, held from before the turn to its end. Commands run in between, and FILE's
// directory is usually one they can write (the workspace, /tmp): agentexec, writing with the
// user's full rights, must not be steered by what they leave there. So the directory is opened
// once, before any command, and the write goes beneath that descriptor.
struct OutputFile {
  std::string option;  // how messages name it: "--output-last-message", "--report"
  std::string path;    // as the user gave it, made absolute
  std::string dir;     // its directory
  std::string name;    // its last component
  Fd dir_fd;           // `dir`, opened before the turn
};

// Creates the parent directories of `path`, opens the directory and checks that a file can be
// written there, before the turn starts, so a bad -o fails fast (exit 5) instead of after the
// work.
Result<OutputFile> PrepareOutputFile(const std::string& path,
                                     const std::string& option = "--output-last-message");

// Writes `text` as out.path atomically (base/beneath.h ReplaceAt: a fresh file with an
// unpredictable name made beneath the held directory, fsynced, renamed over the name). When
// out.dir no longer names the held directory (a command moved it and put a symlink or another
// directory in its place), nothing is written: the error says so, rather than leaving the
// answer where the user will not look or where the replacement points.
Status WriteOutputFile(const OutputFile& out, const std::string& text);

}  // namespace ae
