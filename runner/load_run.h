// From the parsed command line to a run: the options that set configuration keys become the
// configuration's overrides (config/session_config.h), the rest stay the front door's own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "cli/cli.h"
#include "config/config.h"
#include "config/session_config.h"
#include "engine/session.h"

namespace ae {

struct ResumeTarget {
  bool last = false;       // resume --last
  std::string session_id;  // resume ID (empty with --last)
};

struct LoadedRun {
  Config config;                      // effective settings with their sources (for --print-config)
  SessionConfig session;              // ready for RunSession (not filled when print_config is set)
  std::string home;                   // absolute $AGENTEXEC_HOME (default ~/.agentexec)
  std::vector<std::string> warnings;  // also in session.warnings; print before the turn
  bool print_config = false;          // print FormatConfig(config) to stdout and exit 0
  bool json = false;
  std::string color = "auto";                      // always | never | auto
  std::optional<std::string> output_last_message;  // -o, absolute
  int64_t timeout_ms = 0;                          // --timeout / `timeout`; 0 = none
  std::optional<ResumeTarget> resume;
  bool ephemeral = false;
};

// What the command line asks of the configuration layers: -C, -p, -c, the flags that set a
// key (-m, -s, -a, --full-auto, --max-turns...) and whether the run needs a home.
LayerRequest LayerRequestFrom(const CliArgs& args);

// Resolves home and -C, loads the configuration layers, checks the git repository (not for
// --print-config) and builds the session. Does not read the prompt: see ReadPrompt.
Result<LoadedRun> LoadRun(const CliArgs& args, const Environment& env);

}  // namespace ae
