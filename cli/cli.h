// The command line as a plain struct. Parsing only: nothing here reads files,
// the environment or stdin; config/session_config.h turns CliArgs into a run.
//
//   agentexec [exec] [OPTIONS] [PROMPT]
//   agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]
//   agentexec [exec] fork SESSION_ID [OPTIONS] [PROMPT]
//   agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [--title T]
//                           [--format json|markdown|sarif|codequality] [OPTIONS] [PROMPT]
//   agentexec [exec] help | schema
//   agentexec [exec] sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND...
//
// Every option is valid before or after `resume`. `sandbox` takes the options that choose the
// configuration and the sandbox, parsed and worded as for exec; the first word that is not
// one of them (or everything after `--`) is the command.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "engine/exec/approval.h"
#include "sandbox/mode.h"

namespace CLI {
class App;
}  // namespace CLI

namespace ae {

// What `review` prints: the result JSON, a pull request comment, a SARIF log (GitHub code
// scanning), a GitLab Code Quality report.
enum class ReviewFormat { kJson, kMarkdown, kSarif, kCodeQuality };

// `review`: which change (at most one target; none means --uncommitted) and how to print it.
struct ReviewArgs {
  bool uncommitted = false;
  std::optional<std::string> base;            // --base BRANCH
  std::optional<std::string> commit;          // --commit SHA
  std::optional<std::string> title;           // --title T
  ReviewFormat format = ReviewFormat::kJson;  // --format
  // --report FORMAT=FILE (repeatable): the review also written as FORMAT to FILE (as given).
  std::vector<std::pair<ReviewFormat, std::string>> reports;
};

struct CliArgs {
  // Set when -h/--help or -V/--version was given: print this to stdout and exit 0.
  std::optional<std::string> help_text;
  std::optional<std::string> version_text;
  bool print_schema = false;  // `agentexec schema`: print schema/events.schema.json, exit 0
  // `agentexec sandbox ... COMMAND...`: run COMMAND confined (runner/sandbox_command.h). Only
  // sandbox, add_dirs, config_overrides, profile, ignore_user_config and strict_config are
  // set alongside it.
  std::optional<std::vector<std::string>> sandbox_command;

  bool resume = false;       // `resume` keyword given
  bool resume_last = false;  // --last
  bool resume_all = false;   // --all: --last looks at every directory's sessions
  // `fork` keyword given: a new thread from session_id's history (resume stays false). Without
  // PROMPT it only forks, as codex does: no turn, and stdin is read only for "-".
  bool fork = false;
  std::optional<std::string> session_id;  // resume / fork SESSION_ID
  std::optional<std::string> prompt;      // absent or "-": read stdin (review, fork: "-" only)
  std::optional<ReviewArgs> review;       // `review` keyword given

  bool json = false;                               // --json / --experimental-json
  std::optional<std::string> output_last_message;  // -o FILE, as given
  std::optional<std::string> events_file;          // --events-file FILE, as given
  std::optional<std::string> output_schema;        // --output-schema FILE, as given
  std::optional<std::string> model;                // -m
  std::optional<std::string> profile;              // -p
  std::vector<std::string> config_overrides;       // -c key=value, in order
  std::optional<sandbox::Mode> sandbox;            // -s
  bool dangerously_bypass = false;                 // --dangerously-bypass-approvals-and-sandbox
  bool full_auto = false;                          // --full-auto
  std::optional<std::string> cd;                   // -C DIR, as given
  std::vector<std::string> add_dirs;               // --add-dir, as given
  std::vector<std::string> allow_hosts;            // --allow-host: added to network.allow
  bool skip_git_repo_check = false;
  bool ephemeral = false;
  bool ignore_user_config = false;
  bool strict_config = false;
  std::string color = "auto";       // always | never | auto
  std::vector<std::string> images;  // -i FILE, as given
  bool oss = false;
  std::optional<ApprovalPolicy> approval;  // -a never | on-failure
  std::optional<int> max_turns;            // --max-turns N (> 0)
  std::optional<int64_t> max_tokens;       // --max-tokens N (> 0)
  std::optional<int64_t> timeout_ms;       // --timeout DURATION
  bool print_config = false;
  // --print-writable-roots: the host paths the run's commands could write, one a line, then
  // exit 0 (the CI wrappers keep their own files outside all of them).
  bool print_writable_roots = false;
  bool progress = false;  // --progress: item.updated for running commands (--json)
};

// argv[0] is the program name. Errors are complete messages, ready for stderr (exit 2),
// e.g. "error: unexpected argument '--foo' found\n\nUsage: ...".
Result<CliArgs> ParseCli(int argc, const char* const* argv);

// The exec options `agentexec batch run` passes on to every task (those exec's table marks),
// read by the same CLI11 parser and table as exec's: the constructor registers them on
// batch's app; once it has parsed, Words() gives back the ones given, as exec words in table
// order ("--model", "gpt-5", "--full-auto"). --json is left out: batch reads every task's
// events itself.
class PassedOnOptions {
 public:
  explicit PassedOnOptions(CLI::App& app);
  std::vector<std::string> Words() const;

 private:
  struct Row {
    std::string name;  // the row's first long name
    bool flag = false;
    bool given = false;
    std::vector<std::string> values;
  };
  std::deque<Row> rows_;  // CLI11 keeps pointers into them: a deque never moves them
  bool json_ = false;     // --json: implied, accepted and dropped
};

// How `agentexec batch run` passes an exec option (e.g. "-m", "--full-auto") on to every
// task, by exec's option table: kNo for an exec option it does not pass on, kUnknown for a
// name exec's table lacks (the error is then UnexpectedArgumentText's, as for exec).
enum class PassOn { kNo, kFlag, kValue, kUnknown };
PassOn BatchPassOn(std::string_view option);

// Whether `agentexec sandbox` takes the exec option `option` too (-s, -c, -p, --add-dir...):
// batch runs a task's check under `agentexec sandbox` with the task's options of that kind.
bool SandboxTakes(std::string_view option);

// What exec, sandbox and batch say of an option no table has ("--foo" or "--foo=x"), without
// the "error: " and the usage: "unexpected argument '--foo' found\n\n  tip: ...".
std::string UnexpectedArgumentText(const std::string& extra);

// The --help text (ends with a newline).
std::string HelpText();
// `agentexec sandbox --help`.
std::string SandboxHelpText();

}  // namespace ae
