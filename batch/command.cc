#include "batch/command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/duration.h"
#include "base/secret_env.h"
#include "base/write_all.h"
#include "batch/child.h"
#include "batch/manifest.h"
#include "batch/publish.h"
#include "batch/report.h"
#include "batch/run.h"
#include "batch/shard.h"
#include "cli/cli.h"
#include "cli/exit_code.h"
#include "cli/option_table.h"

namespace ae {
namespace {

constexpr const char* kBatchUsage =
    "Usage: agentexec batch run MANIFEST --out DIR [-j N] [--shard I/N] [--resume] [OPTIONS]\n"
    "       agentexec batch report DIR... [--format markdown|junit|json] [--manifest MANIFEST]\n"
    "       agentexec batch plan MANIFEST --shards N\n"
    "       agentexec batch publish DIR [--work-dir DIR] [--force]\n";

int BatchUsageError(const std::string& what) {
  std::fprintf(stderr, "error: %s\n\n%s\nFor more information, try 'agentexec batch --help'.\n",
               what.c_str(), kBatchUsage);
  return ToInt(ExitCode::kUsage);
}

std::optional<int64_t> PositiveInt(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n <= 0) return std::nullopt;
  return n;
}

// One subcommand's command line, read by CLI11 through the option tables as exec's is: the
// options `app` has, the other words into `words` (every word after "--" is one). Returns the
// usage error, or "": an option no table has gets exec's own answer; under `batch run`, an exec
// option batch does not pass on is refused as such.
std::string ReadCommandLine(CLI::App& app, std::vector<std::string> args,
                            std::vector<std::string>& words, bool run) {
  app.set_help_flag();
  app.allow_extras();
  app.add_option("words", words);
  std::reverse(args.begin(), args.end());  // CLI11 takes the words last first
  try {
    app.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    return DescribeParseError(e);
  }
  for (const std::string& extra : app.remaining()) {
    if (extra == "--") continue;
    const std::string name = extra.starts_with("--") ? extra.substr(0, extra.find('=')) : extra;
    if (run && BatchPassOn(name) == PassOn::kNo) {
      return fmt::format(
          "'{}' cannot be used with 'batch run' (batch sets the output, the directory and the "
          "prompt of each task itself)",
          name);
    }
    return UnexpectedArgumentText(extra);
  }
  return "";
}

// The first long name of a table row ("-j,--jobs" -> "--jobs"), as errors name an option.
std::string LongName(const char* names) {
  for (std::string_view name : OptionNames(names)) {
    if (name.starts_with("--")) return std::string(name);
  }
  return names;
}

// What `batch run`'s command line has given so far.
struct RunGiven {
  BatchRunOptions o;
  std::optional<std::string> manifest, out;
};

// How a batch option's value is read before its row stores it: not at all (a flag), as
// text, as a positive integer, or as a duration.
enum class ValueKind { kFlag, kText, kPositive, kDuration };

// One `batch run` option: how it is parsed and its --help line.
struct RunOption {
  const char* names;
  const char* value;  // the value's name in --help and in errors; "" for a flag
  const char* help;
  ValueKind kind;
  // Keeps the value (`text` as given; `number` for kPositive, the milliseconds for
  // kDuration); returns the usage error for a value its kind admits but the option does not.
  std::string (*store)(RunGiven&, const std::string& text, int64_t number);
};

const RunOption kRunOptions[] = {
    {"--out", "DIR", "Results: DIR/results.jsonl and DIR/tasks/<id>/", ValueKind::kText,
     [](RunGiven& g, const std::string& text, int64_t) -> std::string {
       g.out = text;
       return "";
     }},
    {"-j,--jobs", "N", "Tasks at once (default 1)", ValueKind::kPositive,
     [](RunGiven& g, const std::string&, int64_t n) -> std::string {
       if (n > 256) return fmt::format("invalid value '{}' for '--jobs <N>': at most 256", n);
       g.o.jobs = static_cast<int>(n);
       return "";
     }},
    {"--work-dir", "DIR", "Where the clones go (default DIR/work)", ValueKind::kText,
     [](RunGiven& g, const std::string& text, int64_t) -> std::string {
       g.o.work_dir = text;
       return "";
     }},
    {"--shard", "I/N",
     "Run every N-th task starting at I (0-based); default\n"
     "from CI_NODE_INDEX/CI_NODE_TOTAL (GitLab),\n"
     "JOB_COMPLETION_INDEX (Kubernetes) or SLURM_ARRAY_TASK_*",
     ValueKind::kText,
     [](RunGiven& g, const std::string& text, int64_t) -> std::string {
       g.o.shard = text;
       Result<Shard> s = ParseShard(text);
       return s.ok() ? "" : s.message();
     }},
    {"--shard-total", "N",
     "With JOB_COMPLETION_INDEX: the number of shards\n"
     "(or AGENTEXEC_SHARD_TOTAL)",
     ValueKind::kPositive,
     [](RunGiven& g, const std::string&, int64_t n) -> std::string {
       g.o.shard_total = static_cast<size_t>(n);
       return "";
     }},
    {"--resume", "",
     "Run only the tasks without a completed record in\n"
     "DIR/results.jsonl",
     ValueKind::kFlag,
     [](RunGiven& g, const std::string&, int64_t) -> std::string {
       g.o.resume = true;
       return "";
     }},
    {"--max-failures", "N", "Start no task after N tasks failed", ValueKind::kPositive,
     [](RunGiven& g, const std::string&, int64_t n) -> std::string {
       g.o.max_failures = n;
       return "";
     }},
    {"--max-total-tokens", "N", "Start no task once the tasks used N tokens", ValueKind::kPositive,
     [](RunGiven& g, const std::string&, int64_t n) -> std::string {
       g.o.max_total_tokens = n;
       return "";
     }},
    {"--max-total-time", "DURATION", "Stop (SIGTERM to running tasks) after DURATION",
     ValueKind::kDuration,
     [](RunGiven& g, const std::string&, int64_t ms) -> std::string {
       g.o.max_total_time_ms = ms;
       return "";
     }},
    {"--check", "CMD",
     "After each turn run CMD (sh -c) in the task's sandbox and\n"
     "directory; the task succeeds only if it exits 0",
     ValueKind::kText,
     [](RunGiven& g, const std::string& text, int64_t) -> std::string {
       g.o.check = text;
       return "";
     }},
    {"--check-timeout", "DURATION", "Kill the check after DURATION (default 10m)",
     ValueKind::kDuration,
     [](RunGiven& g, const std::string&, int64_t ms) -> std::string {
       g.o.check_timeout_ms = ms;
       return "";
     }},
    {"--push", "", "Then push each succeeded task's branch (batch publish)", ValueKind::kFlag,
     [](RunGiven& g, const std::string&, int64_t) -> std::string {
       g.o.push = true;
       return "";
     }},
    {"--force", "", "With --push: replace a branch that diverged on the remote", ValueKind::kFlag,
     [](RunGiven& g, const std::string&, int64_t) -> std::string {
       g.o.force = true;
       return "";
     }},
    {"--heartbeat", "DURATION", "Progress line at least this often off a terminal (30s)",
     ValueKind::kDuration,
     [](RunGiven& g, const std::string&, int64_t ms) -> std::string {
       g.o.heartbeat_ms = ms;
       return "";
     }},
};

// batch's help text starts in this column.
constexpr size_t kBatchHelpColumn = 33;

// What one row of kRunOptions was given, before its kind is checked.
struct RowValue {
  bool flag = false;
  std::optional<std::string> text;
};

// Checks `value` by its row's kind and stores it; returns the usage error, or "".
std::string StoreRunOption(const RunOption& option, const RowValue& value, RunGiven& given) {
  if (option.kind == ValueKind::kFlag) return value.flag ? option.store(given, "", 0) : "";
  if (!value.text) return "";
  const std::string& v = *value.text;
  int64_t number = 0;
  if (option.kind == ValueKind::kPositive) {
    std::optional<int64_t> n = PositiveInt(v);
    if (!n) {
      return fmt::format("invalid value '{}' for '{} <{}>': expected a positive integer", v,
                         LongName(option.names), option.value);
    }
    number = *n;
  } else if (option.kind == ValueKind::kDuration) {
    Result<int64_t> ms = ParseDurationMs(v);
    if (!ms.ok()) {
      return fmt::format("invalid value '{}' for '{} <{}>': expected e.g. 90s, 10m, 1h30m", v,
                         LongName(option.names), option.value);
    }
    number = *ms;
  }
  return option.store(given, v, number);
}

int Run(const std::vector<std::string>& args) {
  CLI::App app{"agentexec batch run"};
  std::array<RowValue, std::size(kRunOptions)> values{};
  for (size_t i = 0; i < values.size(); ++i) {
    const RunOption& option = kRunOptions[i];
    AddTableOption(app, option.names,
                   option.kind == ValueKind::kFlag ? OptionField(&values[i].flag)
                                                   : OptionField(&values[i].text));
  }
  PassedOnOptions passed(app);
  std::vector<std::string> words;
  if (std::string error = ReadCommandLine(app, args, words, /*run=*/true); !error.empty()) {
    return BatchUsageError(error);
  }
  RunGiven given;
  BatchRunOptions& o = given.o;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::string error = StoreRunOption(kRunOptions[i], values[i], given); !error.empty()) {
      return BatchUsageError(error);
    }
  }
  if (words.size() > 1) {
    return BatchUsageError(fmt::format("unexpected argument '{}' found", words[1]));
  }
  if (!words.empty()) given.manifest = words.front();
  o.exec_args = passed.Words();
  if (!given.manifest) return BatchUsageError("'batch run' needs a MANIFEST");
  if (!given.out) return BatchUsageError("'batch run' needs --out DIR");
  if (o.force && !o.push) return BatchUsageError("'--force' is for '--push'");
  // The options for every task must be ones exec accepts together.
  std::vector<const char*> argv{"agentexec"};
  for (const std::string& a : o.exec_args) argv.push_back(a.c_str());
  argv.push_back("--");
  argv.push_back("prompt");
  Result<CliArgs> parsed = ParseCli(static_cast<int>(argv.size()), argv.data());
  if (!parsed.ok()) {
    std::string m = parsed.message();
    if (!m.empty() && m.back() != '\n') m.push_back('\n');
    std::fputs(m.c_str(), stderr);
    return ToInt(ExitCode::kUsage);
  }
  o.manifest = *given.manifest;
  o.out = *given.out;
  return RunBatch(o);
}

int Report(const std::vector<std::string>& args) {
  BatchReportOptions o;
  CLI::App app{"agentexec batch report"};
  std::optional<std::string> format;
  AddTableOption(app, "--format", &format);
  AddTableOption(app, "--manifest", &o.manifest);
  if (std::string error = ReadCommandLine(app, args, o.dirs, /*run=*/false); !error.empty()) {
    return BatchUsageError(error);
  }
  if (format) {
    if (*format != "markdown" && *format != "junit" && *format != "json") {
      return BatchUsageError(
          fmt::format("invalid value '{}' for '--format <FORMAT>'\n  [possible values: "
                      "markdown, junit, json]",
                      *format));
    }
    o.format = *format;
  }
  if (o.dirs.empty()) return BatchUsageError("'batch report' needs at least one DIR");
  Result<std::string> report = MakeBatchReport(o);
  if (!report.ok()) return FailWith(ExitCode::kUsage, report.message());
  Status w = WriteAll(STDOUT_FILENO, *report);
  if (!w.ok()) return FailWith(ExitCode::kOutputFailed, "stdout: " + w.message());
  return 0;
}

int Publish(const std::vector<std::string>& args) {
  BatchPublishOptions o;
  CLI::App app{"agentexec batch publish"};
  AddTableOption(app, "--force", &o.force);
  AddTableOption(app, "--work-dir", &o.work_dir);
  std::vector<std::string> words;
  if (std::string error = ReadCommandLine(app, args, words, /*run=*/false); !error.empty()) {
    return BatchUsageError(error);
  }
  if (words.size() > 1) {
    return BatchUsageError(fmt::format("unexpected argument '{}' found", words[1]));
  }
  std::optional<std::string> dir;
  if (!words.empty()) dir = words.front();
  if (!dir) return BatchUsageError("'batch publish' needs the DIR of a batch run");
  o.out = *dir;
  // git gets this process's environment (HOME for git's credential configuration), kept as
  // batch run keeps it.
  std::vector<std::string> env = ProcessEnv();
  const int code = PublishBatch(o, env);
  WipeStrings(env);
  return code;
}

int Plan(const std::vector<std::string>& args) {
  CLI::App app{"agentexec batch plan"};
  std::optional<std::string> shards_text;
  AddTableOption(app, "--shards", &shards_text);
  std::vector<std::string> words;
  if (std::string error = ReadCommandLine(app, args, words, /*run=*/false); !error.empty()) {
    return BatchUsageError(error);
  }
  if (words.size() > 1) {
    return BatchUsageError(fmt::format("unexpected argument '{}' found", words[1]));
  }
  std::optional<std::string> manifest;
  if (!words.empty()) manifest = words.front();
  std::optional<int64_t> shards;
  if (shards_text) {
    shards = PositiveInt(*shards_text);
    if (!shards || *shards > 256) {
      return BatchUsageError(
          fmt::format("invalid value '{}' for '--shards <N>': expected 1 to 256", *shards_text));
    }
  }
  if (!manifest) return BatchUsageError("'batch plan' needs a MANIFEST");
  if (!shards) return BatchUsageError("'batch plan' needs --shards N");
  Result<std::vector<std::string>> errors = CheckManifest(*manifest);
  if (!errors.ok()) return FailWith(ExitCode::kUsage, errors.message());
  for (const std::string& e : *errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  if (!errors->empty()) return ToInt(ExitCode::kUsage);
  // No more shards than tasks: an empty shard would be a job with nothing to do.
  size_t tasks = 0;
  Result<ManifestReader> reader = ManifestReader::Open(*manifest);
  if (!reader.ok()) return FailWith(ExitCode::kUsage, reader.message());
  for (;;) {
    Result<std::optional<BatchTask>> next = reader->Next();
    if (!next.ok() || !*next) break;
    ++tasks;
  }
  Status w =
      WriteAll(STDOUT_FILENO, GithubMatrixJson(std::min(tasks, static_cast<size_t>(*shards))));
  if (!w.ok()) return FailWith(ExitCode::kOutputFailed, "stdout: " + w.message());
  return 0;
}

std::string RunOptionsHelp() {
  std::string out;
  for (const RunOption& r : kRunOptions) {
    out += OptionHelpLine(r.names, r.value, r.help, kBatchHelpColumn);
  }
  return out;
}

}  // namespace

std::string BatchHelpText() {
  return fmt::format(
      "agentexec batch - one task over many repositories, with one report.\n"
      "\n"
      "{}"
      "\n"
      "MANIFEST is JSONL, one task a line:\n"
      "  {{\"id\":\"api\",\"repo\":\"../api\",\"prompt\":\"fix the lint warnings\"}}\n"
      "  id (A-Z a-z 0-9 . _ -), repo (a local path or a git URL), prompt or prompt_file;\n"
      "  optional: ref, dir, model, sandbox, max_turns, timeout, max_tokens, output_schema,\n"
      "  check, check_timeout, expect_change (false: a task may succeed changing nothing).\n"
      "  Relative paths are relative to the manifest's directory.\n"
      "\n"
      "batch run:\n"
      "{}"
      "  Every exec option (-m, -s, -c, -p, --max-turns, --timeout, ...) applies to every task;\n"
      "  a task's own fields win.\n"
      "\n"
      "batch report:\n"
      "      --format markdown|junit|json  (default markdown)\n"
      "      --manifest MANIFEST        Also fail when a task is missing from every DIR\n"
      "\n"
      "batch plan:\n"
      "      --shards N                 Print the GitHub Actions matrix for N shards\n"
      "\n"
      "batch publish DIR: push the branch agentexec/<id> of each succeeded task to its repo\n"
      "  (git's own credential configuration); a branch already there is left, one that\n"
      "  diverged is reported and left unless --force. Writes DIR/publish.jsonl.\n"
      "      --work-dir DIR             The clones, if not DIR/work\n"
      "      --force                    Replace a diverged branch (--force-with-lease)\n"
      "\n"
      "Exit codes (batch run): 0 every task succeeded, 1 a task failed, changed nothing or\n"
      "was skipped, or a push failed,\n"
      "2 usage or manifest error (nothing ran), 4 a batch-wide limit stopped it,\n"
      "130/143 interrupted by SIGINT/SIGTERM.\n",
      kBatchUsage, RunOptionsHelp());
}

int RunBatchCommand(int argc, const char* const* argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    return BatchUsageError("'batch' needs a subcommand: run, report, plan or publish");
  }
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      std::fputs(BatchHelpText().c_str(), stdout);
      return 0;
    }
  }
  const std::string sub = args.front();
  args.erase(args.begin());
  if (sub == "help") {
    std::fputs(BatchHelpText().c_str(), stdout);
    return 0;
  }
  if (sub == "run") return Run(args);
  if (sub == "report") return Report(args);
  if (sub == "plan") return Plan(args);
  if (sub == "publish") return Publish(args);
  return BatchUsageError(
      fmt::format("unknown batch subcommand '{}' (run, report, plan or publish)", sub));
}

}  // namespace ae
