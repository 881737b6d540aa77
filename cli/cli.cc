#include "cli/cli.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <variant>

#include "base/duration.h"
#include "cli/build_commit.h"
#include "cli/exit_code.h"
#include "cli/option_table.h"

namespace ae {
namespace {

constexpr const char* kUsage =
    "Usage: agentexec [exec] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] fork SESSION_ID [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
    "[PROMPT]\n";

constexpr const char* kSandboxUsage =
    "Usage: agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND "
    "[ARGS]...\n";

// Errors look like clap's (what codex users know): the problem, the usage, where to look.
Error UsageError(const std::string& what, const char* usage = kUsage) {
  return MakeError(
      fmt::format("error: {}\n\n{}\nFor more information, try '--help'.", what, usage));
}

Error InvalidValue(std::string_view value, std::string_view option, std::string_view expected,
                   const char* usage = kUsage) {
  return UsageError(fmt::format("invalid value '{}' for '{}'\n  [{}]", value, option, expected),
                    usage);
}

Error UnexpectedArgument(const std::string& extra, const char* usage = kUsage) {
  return UsageError(UnexpectedArgumentText(extra), usage);
}

bool OneOf(const std::string& value, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return value == a; });
}

// Everything the command line gave, as given: CheckOptions turns the values that need it into
// CliArgs' types, ReadWords the positionals into keywords, SESSION_ID and PROMPT.
struct Given {
  CliArgs args;  // the options read straight into their place
  std::optional<std::string> sandbox, approval, color, max_turns, max_tokens, timeout;
  ReviewArgs review;
  std::optional<std::string> review_format;
  std::vector<std::string> review_reports;  // --report FORMAT=FILE, as given
  // Passed by newer Codex SDKs; they change nothing in a headless run, so they are accepted
  // (and left out of --help) rather than failing the SDK's call.
  std::optional<std::string> sdk_thread_source, sdk_cyber_access;
  // codex exec flags with nothing to do here (agentexec keeps no project trust, loads no
  // .rules files, runs no hooks): accepted, left out of --help, so a codex command line runs.
  bool codex_trust = false, codex_ignore_rules = false, codex_hook_trust = false;
  // --enable / --disable FEATURE: codex's `-c features.<name>=true|false`, applied as that.
  std::vector<std::string> enable, disable;
  std::optional<std::string> local_provider;  // --local-provider: checked, ollama is built in
  // codex exec flags agentexec cannot honour: refused, saying what to do instead.
  bool worktree = false, approve_for_me = false;
  std::optional<std::string> remote, remote_token_env;
  std::vector<std::string> words;
};

using Field = OptionField;

// Where exec's --help lists an option.
enum class Section { kHidden, kOutput, kModel, kSandbox, kConfig, kRun, kReview };

enum OptionFlags : unsigned {
  kExecOnly = 0,
  kSandboxToo = 1 << 0,  // `agentexec sandbox` takes it too (the configuration and sandbox)
  kPassedOn = 1 << 1,    // `agentexec batch run` passes it on to every task
};

// One option: how it is parsed and how --help shows it. A flag is set when given; a value
// option keeps its last value; a repeatable one (a vector) keeps every value.
struct OptionSpec {
  const char* names;  // CLI11's form; --help shows the first short and the first long name
  const char* value;  // the value's name in --help; "" for a flag
  Section section;
  const char* help;        // lines after the first are indented to the text column
  Field (*field)(Given&);  // nullptr: handled before parsing (-h, -V)
  unsigned flags = kExecOnly;
  const char* sandbox_help = nullptr;  // `agentexec sandbox --help`'s text, where it differs
};

// In the order --help lists them, section by section.
const OptionSpec kOptions[] = {
    {"--json,--experimental-json", "", Section::kOutput,
     "Print events to stdout as JSON lines (alias --experimental-json)",
     [](Given& g) -> Field { return &g.args.json; }, kPassedOn},
    {"-o,--output-last-message", "FILE", Section::kOutput,
     "Also write the final agent message to FILE",
     [](Given& g) -> Field { return &g.args.output_last_message; }},
    {"--events-file", "FILE", Section::kOutput,
     "Also write the JSON lines to FILE (with or without --json)",
     [](Given& g) -> Field { return &g.args.events_file; }},
    {"--output-schema", "FILE", Section::kOutput,
     "JSON Schema the final message must follow (strict:\n"
     "checked at start, the answer validated at the end)",
     [](Given& g) -> Field { return &g.args.output_schema; }, kPassedOn},
    {"--color", "always|never|auto", Section::kOutput,
     "Colour on stderr (auto: only on a terminal)", [](Given& g) -> Field { return &g.color; },
     kPassedOn},
    {"--progress", "", Section::kOutput,
     "With --json: item.updated with a running command's output",
     [](Given& g) -> Field { return &g.args.progress; }, kPassedOn},

    {"-m,--model", "MODEL", Section::kModel, "Model to use",
     [](Given& g) -> Field { return &g.args.model; }, kPassedOn},
    {"--oss", "", Section::kModel, "Use the local provider 'ollama'",
     [](Given& g) -> Field { return &g.args.oss; }, kPassedOn},
    {"-i,--image", "FILE", Section::kModel, "Attach an image to the prompt (repeatable)",
     [](Given& g) -> Field { return &g.args.images; }, kPassedOn},

    {"-s,--sandbox", "MODE", Section::kSandbox, "read-only | workspace-write | danger-full-access",
     [](Given& g) -> Field { return &g.sandbox; }, kSandboxToo | kPassedOn,
     "read-only (default) | workspace-write | danger-full-access"},
    {"--full-auto", "", Section::kSandbox, "Same as --sandbox workspace-write",
     [](Given& g) -> Field { return &g.args.full_auto; }, kPassedOn},
    {"--add-dir", "DIR", Section::kSandbox, "Also make DIR writable (repeatable)",
     [](Given& g) -> Field { return &g.args.add_dirs; }, kSandboxToo | kPassedOn},
    {"--allow-host", "HOST", Section::kSandbox,
     "Let commands reach HOST (network.allow; repeatable)",
     [](Given& g) -> Field { return &g.args.allow_hosts; }, kSandboxToo | kPassedOn},
    {"-a,--ask-for-approval", "POLICY", Section::kSandbox,
     "never | on-failure (retry a denied command unsandboxed)",
     [](Given& g) -> Field { return &g.approval; }, kPassedOn},
    {"--dangerously-bypass-approvals-and-sandbox", "", Section::kSandbox,
     "No sandbox, and approval never", [](Given& g) -> Field { return &g.args.dangerously_bypass; },
     kPassedOn},
    {"--yolo", "", Section::kSandbox, "Same as --dangerously-bypass-approvals-and-sandbox",
     [](Given& g) -> Field { return &g.args.dangerously_bypass; }, kPassedOn},

    {"-c,--config", "KEY=VALUE", Section::kConfig,
     "Override a config key, VALUE parsed as TOML (repeatable)",
     [](Given& g) -> Field { return &g.args.config_overrides; }, kSandboxToo | kPassedOn},
    {"-p,--profile", "NAME", Section::kConfig,
     "Use [profiles.NAME] or $AGENTEXEC_HOME/NAME.config.toml",
     [](Given& g) -> Field { return &g.args.profile; }, kSandboxToo | kPassedOn},
    {"--ignore-user-config", "", Section::kConfig,
     "Do not read $AGENTEXEC_HOME/config.toml or profile files",
     [](Given& g) -> Field { return &g.args.ignore_user_config; }, kSandboxToo | kPassedOn},
    {"--strict-config", "", Section::kConfig, "Unknown config keys are errors, not warnings",
     [](Given& g) -> Field { return &g.args.strict_config; }, kSandboxToo | kPassedOn},
    {"--print-config", "", Section::kConfig,
     "Print each effective setting and its source, then exit",
     [](Given& g) -> Field { return &g.args.print_config; }},
    {"--print-writable-roots", "", Section::kSandbox,
     "Print the paths this run's commands could write, then exit",
     [](Given& g) -> Field { return &g.args.print_writable_roots; }, kSandboxToo},

    {"-C,--cd", "DIR", Section::kRun, "Work in DIR", [](Given& g) -> Field { return &g.args.cd; }},
    {"--skip-git-repo-check", "", Section::kRun, "Allow running outside a git repository",
     [](Given& g) -> Field { return &g.args.skip_git_repo_check; }, kPassedOn},
    {"--ephemeral", "", Section::kRun, "Write no session file",
     [](Given& g) -> Field { return &g.args.ephemeral; }, kPassedOn},
    {"--max-turns", "N", Section::kRun, "Stop after N model requests",
     [](Given& g) -> Field { return &g.max_turns; }, kPassedOn},
    {"--max-tokens", "N", Section::kRun, "Stop when the thread has used N input+output tokens",
     [](Given& g) -> Field { return &g.max_tokens; }, kPassedOn},
    {"--timeout", "DURATION", Section::kRun, "Stop after DURATION: 90s, 10m, 1h30m, 500ms",
     [](Given& g) -> Field { return &g.timeout; }, kPassedOn},
    {"--last", "", Section::kRun, "With resume: the newest session in this directory",
     [](Given& g) -> Field { return &g.args.resume_last; }},
    {"--all", "", Section::kRun, "With resume --last: the newest session of any directory",
     [](Given& g) -> Field { return &g.args.resume_all; }},
    {"-h,--help", "", Section::kRun, "Print this help", nullptr, kSandboxToo},
    {"-V,--version", "", Section::kRun, "Print the version", nullptr},

    {"--uncommitted", "", Section::kReview,
     "Review staged, unstaged and untracked changes (default)",
     [](Given& g) -> Field { return &g.review.uncommitted; }},
    {"--base", "BRANCH", Section::kReview, "Review the changes since the merge base with BRANCH",
     [](Given& g) -> Field { return &g.review.base; }},
    {"--commit", "SHA", Section::kReview, "Review the changes introduced by a commit",
     [](Given& g) -> Field { return &g.review.commit; }},
    {"--title", "TITLE", Section::kReview,
     "The change's title, shown to the model and in the review",
     [](Given& g) -> Field { return &g.review.title; }},
    {"--format", "FORMAT", Section::kReview,
     "What stdout and -o get: json (default), markdown (a pull\n"
     "request comment), sarif (GitHub code scanning),\n"
     "codequality (GitLab Code Quality report)",
     [](Given& g) -> Field { return &g.review_format; }},
    {"--report", "FORMAT=FILE", Section::kReview,
     "Also write the review as FORMAT to FILE (repeatable),\n"
     "e.g. codequality=gl-code-quality-report.json",
     [](Given& g) -> Field { return &g.review_reports; }},

    {"--thread-source", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.sdk_thread_source; }},
    {"--cyber-access-program", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.sdk_cyber_access; }},
    {"--trust", "", Section::kHidden, "", [](Given& g) -> Field { return &g.codex_trust; }},
    {"--ignore-rules", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.codex_ignore_rules; }},
    {"--dangerously-bypass-hook-trust", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.codex_hook_trust; }},
    {"--enable", "", Section::kHidden, "", [](Given& g) -> Field { return &g.enable; }},
    {"--disable", "", Section::kHidden, "", [](Given& g) -> Field { return &g.disable; }},
    {"--local-provider", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.local_provider; }},
    {"--worktree", "", Section::kHidden, "", [](Given& g) -> Field { return &g.worktree; }},
    {"--approve-for-me", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.approve_for_me; }},
    {"--remote", "", Section::kHidden, "", [](Given& g) -> Field { return &g.remote; }},
    {"--remote-auth-token-env", "", Section::kHidden, "",
     [](Given& g) -> Field { return &g.remote_token_env; }},
};

// codex exec flags agentexec refuses, each with what to do instead.
struct RefusedFlag {
  bool (*given)(const Given&);
  const char* why;
};
const RefusedFlag kRefusedFlags[] = {
    {[](const Given& g) { return g.remote.has_value() || g.remote_token_env.has_value(); },
     "'--remote' connects codex to an app server; agentexec runs the agent in its own process "
     "and has no server to connect to: drop --remote and --remote-auth-token-env"},
    {[](const Given& g) { return g.worktree; },
     "'--worktree' (a git worktree codex manages) is not supported: create one with `git "
     "worktree add DIR` and run agentexec with -C DIR"},
    {[](const Given& g) { return g.approve_for_me; },
     "'--approve-for-me' hands approvals to codex's automatic reviewer; agentexec asks no one: "
     "choose the sandbox (-s workspace-write) and, to retry denied commands unsandboxed, -a "
     "on-failure"},
};

// Registers the options that have every bit of `only` (0: all of them) with CLI11.
void AddOptions(CLI::App& app, Given& given, unsigned only) {
  for (const OptionSpec& o : kOptions) {
    if (o.field == nullptr || (o.flags & only) != only) continue;
    AddTableOption(app, o.names, o.field(given));
  }
}

// exec's and sandbox's help text starts in this column.
constexpr size_t kHelpColumn = 35;

// The --help lines of one section of exec's options.
std::string SectionHelp(Section section) {
  std::string out;
  for (const OptionSpec& o : kOptions) {
    if (o.section == section) out += OptionHelpLine(o.names, o.value, o.help, kHelpColumn);
  }
  return out;
}

// -s MODE, parsed by the mode table (sandbox/mode.h) into args.sandbox.
Status SetSandboxMode(const std::optional<std::string>& text, CliArgs& args, const char* usage) {
  if (!text) return {};
  Result<sandbox::Mode> mode = sandbox::ParseMode(*text);
  if (!mode.ok()) {
    return InvalidValue(*text, "--sandbox <MODE>",
                        "possible values: " + JoinNames(sandbox::kModeNames, ", "), usage);
  }
  args.sandbox = *mode;
  return {};
}

// -a POLICY, parsed by the policy table (engine/exec/approval.h) into args.approval. The
// interactive policies codex knows get their own answer.
Status SetApprovalPolicy(const std::optional<std::string>& text, CliArgs& args) {
  if (!text) return {};
  if (OneOf(*text, {"untrusted", "on-request"})) {
    return UsageError(fmt::format(
        "'--ask-for-approval {}' needs someone to answer prompts, and agentexec is headless; "
        "use never or on-failure",
        *text));
  }
  std::optional<ApprovalPolicy> policy = FromName(kApprovalPolicyNames, *text);
  if (!policy) {
    return InvalidValue(*text, "--ask-for-approval <POLICY>",
                        "possible values: " + JoinNames(kApprovalPolicyNames, ", "));
  }
  args.approval = *policy;
  return {};
}

// `agentexec [exec] sandbox ...`, argv[0] being "sandbox": the options up to the first word
// that is not one of them, then the command.
Result<CliArgs> ParseSandbox(int argc, const char* const* argv) {
  Given given;
  CliArgs& args = given.args;
  CLI::App app{"agentexec sandbox"};
  app.set_help_flag("-h,--help");
  AddOptions(app, given, kSandboxToo);
  app.prefix_command();  // the command's own options are the command's
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    args.help_text = SandboxHelpText();
    return args;
  } catch (const CLI::ParseError& e) {
    return UsageError(DescribeParseError(e), kSandboxUsage);
  }
  std::vector<std::string> command = app.remaining();
  if (!command.empty() && command.front() == "--") {
    command.erase(command.begin());
  } else if (!command.empty() && command.front().starts_with("-")) {
    return UnexpectedArgument(command.front(), kSandboxUsage);
  }
  if (Status ok = SetSandboxMode(given.sandbox, args, kSandboxUsage); !ok.ok()) return ok.error();
  if (command.empty() && !args.print_writable_roots) {
    return UsageError("'sandbox' needs a COMMAND to run", kSandboxUsage);
  }
  args.sandbox_command = std::move(command);
  return args;
}

// The review options: only after `review`, at most one target, a known format.
// The review formats by name (--format, --report).
constexpr std::pair<const char*, ReviewFormat> kReviewFormats[] = {
    {"json", ReviewFormat::kJson},
    {"markdown", ReviewFormat::kMarkdown},
    {"sarif", ReviewFormat::kSarif},
    {"codequality", ReviewFormat::kCodeQuality}};

std::optional<ReviewFormat> ReviewFormatNamed(std::string_view name) {
  for (const auto& [known, format] : kReviewFormats) {
    if (name == known) return format;
  }
  return std::nullopt;
}

Status CheckReviewOptions(CliArgs& args, const ReviewArgs& given,
                          const std::optional<std::string>& format,
                          const std::vector<std::string>& reports) {
  std::vector<const char*> targets;
  if (given.uncommitted) targets.push_back("--uncommitted");
  if (given.base) targets.push_back("--base <BRANCH>");
  if (given.commit) targets.push_back("--commit <SHA>");
  if (!args.review) {
    const char* option = !targets.empty()   ? targets.front()
                         : given.title      ? "--title <TITLE>"
                         : format           ? "--format <FORMAT>"
                         : !reports.empty() ? "--report <FORMAT=FILE>"
                                            : nullptr;
    if (option) return UsageError(fmt::format("'{}' is only valid after 'review'", option));
    return {};
  }
  if (targets.size() > 1) {
    return UsageError(
        fmt::format("the argument '{}' cannot be used with '{}'", targets[0], targets[1]));
  }
  if (args.output_schema) {
    return UsageError(
        "the argument '--output-schema <FILE>' cannot be used with 'review' (a review has its "
        "own output schema)");
  }
  if (format) {
    std::optional<ReviewFormat> known = ReviewFormatNamed(*format);
    if (!known) {
      return InvalidValue(*format, "--format <FORMAT>",
                          "possible values: json, markdown, sarif, codequality");
    }
    args.review->format = *known;
  }
  for (const std::string& report : reports) {
    const size_t eq = report.find('=');
    std::optional<ReviewFormat> known =
        eq == std::string::npos ? std::nullopt : ReviewFormatNamed(report.substr(0, eq));
    if (!known || eq + 1 == report.size()) {
      return InvalidValue(report, "--report <FORMAT=FILE>",
                          "FORMAT=FILE, FORMAT one of: json, markdown, sarif, codequality");
    }
    args.review->reports.emplace_back(*known, report.substr(eq + 1));
  }
  return {};
}

// A thread id as thread.started reports it (a UUID); used to catch `resume --last ID`.
bool LooksLikeSessionId(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// Optimal string alignment distance (edits, with a swap of two neighbours as one), capped:
// only "is it within one edit" matters here.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// A lone lowercase word one edit away from a command (`agentexec reveiw`) is a typo, not a
// prompt worth spending tokens on; `--` still sends it as the prompt.
std::optional<std::string> MistypedCommand(const std::string& word) {
  if (word.size() < 4 || word.size() > 12) return std::nullopt;
  for (char c : word) {
    if (c < 'a' || c > 'z') return std::nullopt;
  }
  for (const char* command : {"exec", "resume", "review", "sandbox", "schema", "help", "batch"}) {
    if (word != command && EditDistance(word, command) == 1) return std::string(command);
  }
  return std::nullopt;
}

// The "Exit codes:" lines of --help, from the one table (cli/exit_code.h).
std::string ExitCodesHelp() {
  std::string out;
  for (const ExitCodeInfo& e : kExitCodes) {
    out += fmt::format("  {:<8} {}\n", ToInt(e.code), e.meaning);
  }
  return out;
}

// `agentexec sandbox --help`'s option lines.
std::string SandboxOptionsHelp() {
  std::string out;
  for (const OptionSpec& o : kOptions) {
    if (o.flags & kSandboxToo) {
      out +=
          OptionHelpLine(o.names, o.value, o.sandbox_help ? o.sandbox_help : o.help, kHelpColumn);
    }
  }
  return out;
}

}  // namespace

std::string HelpText() {
  return fmt::format(
      "agentexec {} - run an AI coding agent on one task, headless, and exit.\n"
      "A drop-in for `codex exec`, built for CI.\n"
      "\n"
      "{}"
      "       agentexec sandbox [-s MODE] [--add-dir DIR]... [-c KEY=VALUE]... [--] COMMAND "
      "[ARGS]...\n"
      "       agentexec batch run|report|plan ...  One task, many repositories (batch --help)\n"
      "       agentexec help     Print this help ('agentexec -- help' sends \"help\" as the "
      "prompt)\n"
      "       agentexec schema   Print the JSON Schema of the --json events\n"
      "\n"
      "Arguments:\n"
      "  [PROMPT]  The task. Absent or '-': all of stdin. When given, stdin is never read.\n"
      "\n"
      "Output:\n"
      "{}"
      "\n"
      "Model:\n"
      "{}"
      "\n"
      "Sandbox and approval:\n"
      "{}"
      "\n"
      "Configuration:\n"
      "{}"
      "\n"
      "Run:\n"
      "{}"
      "\n"
      "Review (agentexec review; PROMPT = extra review instructions, '-' reads stdin):\n"
      "{}"
      "\n"
      "Exit codes:\n"
      "{}"
      "\n"
      "Configuration: $AGENTEXEC_HOME/config.toml (default ~/.agentexec); see docs/CONFIG.md.\n",
      AGENTEXEC_VERSION, kUsage, SectionHelp(Section::kOutput), SectionHelp(Section::kModel),
      SectionHelp(Section::kSandbox), SectionHelp(Section::kConfig), SectionHelp(Section::kRun),
      SectionHelp(Section::kReview), ExitCodesHelp());
}

std::string SandboxHelpText() {
  return fmt::format(
      "agentexec sandbox - run one command under the agentexec sandbox; its exit status is "
      "passed through.\n"
      "\n"
      "{}"
      "\n"
      "The sandbox is configured as for a run: the config files, -p, -c and the flags below.\n"
      "\n"
      "Options:\n"
      "{}"
      "\n"
      "Example: agentexec sandbox -s workspace-write -- make test\n"
      "\n"
      "Exit codes:\n"
      "  N        the command's own exit status\n"
      "  2        usage or configuration error\n"
      "  3        the chosen sandbox cannot be enforced on this kernel\n"
      "  126/127  the command cannot be run / was not found\n",
      kSandboxUsage, SandboxOptionsHelp());
}

namespace {

// The index of the first argument after "--" (argc when there is none): those are always
// positional, never options, never keywords.
int LiteralFrom(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return i + 1;
  }
  return argc;
}

// -h and -V win over everything else on the line, as with clap.
std::optional<CliArgs> HelpOrVersion(const char* const* argv, int literal_from) {
  CliArgs args;
  for (int i = 1; i < literal_from; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      args.help_text = HelpText();
      return args;
    }
  }
  for (int i = 1; i < literal_from; ++i) {
    std::string_view a = argv[i];
    if (a == "-V" || a == "--version") {
      args.version_text = fmt::format("agentexec {} ({})\n", AGENTEXEC_VERSION, BuildCommit());
      return args;
    }
  }
  return std::nullopt;
}

// Every option into `given`, by the option table; the other words into given.words.
Status ReadOptions(int argc, const char* const* argv, Given& given) {
  CLI::App app{"agentexec"};
  app.set_help_flag();
  app.allow_extras();  // unknown options are reported below, in our words
  AddOptions(app, given, 0);
  app.add_option("args", given.words);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return UsageError(DescribeParseError(e));
  }
  for (const std::string& extra : app.remaining()) {
    if (extra == "--") continue;
    return UnexpectedArgument(extra);
  }
  return {};
}

// The option values that are not plain text, into their types; the options that exclude
// each other.
Status CheckOptions(Given& given) {
  CliArgs& args = given.args;
  if (Status ok = SetSandboxMode(given.sandbox, args, kUsage); !ok.ok()) return ok.error();
  const std::string color = given.color.value_or("auto");
  if (!OneOf(color, {"always", "never", "auto"})) {
    return InvalidValue(color, "--color <COLOR>", "possible values: always, never, auto");
  }
  args.color = color;
  // An empty name would reach the API as `"model": ""` and fail there, after the set-up.
  if (args.model && args.model->empty()) {
    return InvalidValue("", "--model <MODEL>", "a model name cannot be empty");
  }
  if (Status ok = SetApprovalPolicy(given.approval, args); !ok.ok()) return ok.error();
  // An empty value counts as not given.
  const std::string max_turns = given.max_turns.value_or("");
  const std::string max_tokens = given.max_tokens.value_or("");
  const std::string timeout = given.timeout.value_or("");
  if (!max_turns.empty()) {
    char* end = nullptr;
    long n = std::strtol(max_turns.c_str(), &end, 10);
    if (*end != '\0' || n <= 0 || n > 1000000) {
      return InvalidValue(max_turns, "--max-turns <N>", "expected a positive integer");
    }
    args.max_turns = static_cast<int>(n);
  }
  if (!max_tokens.empty()) {
    char* end = nullptr;
    long long n = std::strtoll(max_tokens.c_str(), &end, 10);
    if (*end != '\0' || n <= 0) {
      return InvalidValue(max_tokens, "--max-tokens <N>", "expected a positive integer");
    }
    args.max_tokens = n;
  }
  if (!timeout.empty()) {
    Result<int64_t> ms = ParseDurationMs(timeout);
    if (!ms.ok()) {
      return InvalidValue(timeout, "--timeout <DURATION>",
                          "expected e.g. 90s, 10m, 1h30m, 500ms or a number of seconds");
    }
    args.timeout_ms = *ms;
  }
  if (args.dangerously_bypass) {
    const char* other = args.sandbox     ? "--sandbox <MODE>"
                        : args.full_auto ? "--full-auto"
                        : args.approval  ? "--ask-for-approval <POLICY>"
                                         : nullptr;
    if (other) {
      return UsageError(fmt::format(
          "the argument '--dangerously-bypass-approvals-and-sandbox' cannot be used with '{}'",
          other));
    }
  }
  if (args.full_auto && args.sandbox) {
    return UsageError("the argument '--full-auto' cannot be used with '--sandbox <MODE>'");
  }
  for (const RefusedFlag& refused : kRefusedFlags) {
    if (refused.given(given)) return UsageError(refused.why);
  }
  if (given.local_provider && *given.local_provider != "ollama") {
    return InvalidValue(*given.local_provider, "--local-provider <OSS_PROVIDER>",
                        "agentexec has one local provider built in, ollama; add another as "
                        "[model_providers.ID] with wire_api = \"chat\" and -c model_provider=ID");
  }
  // As `-c features.<name>=...` after the user's own -c options.
  for (const std::string& feature : given.enable) {
    args.config_overrides.push_back("features." + feature + "=true");
  }
  for (const std::string& feature : given.disable) {
    args.config_overrides.push_back("features." + feature + "=false");
  }
  return {};
}

// --last and --all go with `resume`; `resume --last ID [PROMPT]` is refused, since an id where
// the prompt goes would silently become the prompt. `next` is the first word after `resume`.
Status CheckResumeOptions(const CliArgs& args, const std::vector<std::string>& positionals,
                          size_t next) {
  if (args.resume_last && !args.resume) {
    return UsageError("'--last' is only valid after 'resume'");
  }
  if (args.resume_all && !args.resume) {
    return UsageError("'--all' is only valid after 'resume'");
  }
  if (args.resume && args.resume_last) {
    const size_t left = positionals.size() - next;
    if (left >= 2 || (left == 1 && LooksLikeSessionId(positionals[next]))) {
      return UsageError(fmt::format(
          "the argument '--last' cannot be used with '{}': '--last' and a SESSION_ID exclude "
          "each other",
          positionals[next]));
    }
  }
  return {};
}

// The words: an optional leading `exec`, then an optional `resume` or `review` (never after
// "--": the last `literal_count` words), then SESSION_ID and PROMPT.
Result<CliArgs> ReadWords(Given& given, size_t literal_count) {
  CliArgs& args = given.args;
  const std::vector<std::string>& positionals = given.words;
  const size_t keyword_end =
      positionals.size() > literal_count ? positionals.size() - literal_count : 0;
  size_t next = 0;
  if (next < keyword_end && positionals[next] == "exec") ++next;
  // `help` and `schema` are commands only when alone: `agentexec -- help` is the prompt.
  if (next + 1 == positionals.size() && next < keyword_end &&
      (positionals[next] == "help" || positionals[next] == "schema")) {
    if (positionals[next] == "help") {
      args.help_text = HelpText();
    } else {
      args.print_schema = true;
    }
    return args;
  }
  if (next + 1 == keyword_end && keyword_end == positionals.size()) {
    if (std::optional<std::string> meant = MistypedCommand(positionals[next])) {
      return UsageError(fmt::format(
          "'{}' is not a command; did you mean '{}'? To send '{}' as the prompt, put it after "
          "--: agentexec -- {}",
          positionals[next], *meant, positionals[next], positionals[next]));
    }
  }
  // codex also takes the prompt before the keyword: `exec PROMPT resume --last|ID`.
  std::optional<std::string> prompt_before_resume;
  if (next + 1 < keyword_end && positionals[next] != "resume" && positionals[next] != "review" &&
      positionals[next + 1] == "resume") {
    prompt_before_resume = positionals[next++];
  }
  if (next < keyword_end && positionals[next] == "resume") {
    args.resume = true;
    ++next;
  } else if (!prompt_before_resume && next < keyword_end && positionals[next] == "fork") {
    // codex's `exec fork SESSION_ID [PROMPT]`: a new thread that starts from that history.
    args.fork = true;
    ++next;
    if (next == positionals.size()) return UsageError("'fork' needs a SESSION_ID");
    args.session_id = positionals[next++];
  }
  if (!args.resume && !args.fork && next < keyword_end && positionals[next] == "review") {
    args.review = given.review;
    ++next;
  }
  if (Status ok = CheckReviewOptions(args, given.review, given.review_format, given.review_reports);
      !ok.ok()) {
    return ok.error();
  }
  if (Status ok = CheckResumeOptions(args, positionals, next); !ok.ok()) return ok.error();
  if (args.resume && !args.resume_last) {
    if (next == positionals.size()) {
      return UsageError("'resume' needs a SESSION_ID or --last");
    }
    args.session_id = positionals[next++];
  }
  if (next < positionals.size()) {
    if (prompt_before_resume) {
      return UsageError(fmt::format(
          "a prompt before 'resume' ('{}') and another after it ('{}'): give one of them",
          *prompt_before_resume, positionals[next]));
    }
    args.prompt = positionals[next++];
  } else if (prompt_before_resume) {
    args.prompt = std::move(prompt_before_resume);
  }
  if (next < positionals.size()) {
    return UsageError(fmt::format("unexpected argument '{}' found", positionals[next]));
  }
  return args;
}

}  // namespace

Result<CliArgs> ParseCli(int argc, const char* const* argv) {
  // `sandbox` first (after an optional `exec`): everything after its options is a command.
  const int at = (argc >= 2 && std::strcmp(argv[1], "exec") == 0) ? 2 : 1;
  if (argc > at && std::strcmp(argv[at], "sandbox") == 0) {
    return ParseSandbox(argc - at, argv + at);
  }
  const int literal_from = LiteralFrom(argc, argv);
  if (std::optional<CliArgs> early = HelpOrVersion(argv, literal_from)) return *early;
  Given given;
  if (Status ok = ReadOptions(argc, argv, given); !ok.ok()) return ok.error();
  if (Status ok = CheckOptions(given); !ok.ok()) return ok.error();
  return ReadWords(given, static_cast<size_t>(argc - literal_from));
}

PassedOnOptions::PassedOnOptions(CLI::App& app) {
  Given probe;  // only to learn what kind of field each option fills
  for (const OptionSpec& o : kOptions) {
    if (!(o.flags & kPassedOn) || OptionHasName(o.names, "--json")) continue;
    Row& row = rows_.emplace_back();
    for (std::string_view name : OptionNames(o.names)) {
      if (row.name.empty() && name.starts_with("--")) row.name = name;
    }
    row.flag = std::holds_alternative<bool*>(o.field(probe));
    if (row.flag) {
      AddTableOption(app, o.names, &row.given);
    } else {
      AddTableOption(app, o.names, &row.values);
    }
  }
  AddTableOption(app, "--json,--experimental-json", &json_);
}

std::vector<std::string> PassedOnOptions::Words() const {
  std::vector<std::string> words;
  for (const Row& row : rows_) {
    if (row.flag && row.given) words.push_back(row.name);
    for (const std::string& value : row.values) {
      words.push_back(row.name);
      words.push_back(value);
    }
  }
  return words;
}

PassOn BatchPassOn(std::string_view option) {
  Given probe;  // only to learn what kind of field the option fills
  for (const OptionSpec& o : kOptions) {
    if (!(o.flags & kPassedOn)) continue;
    for (std::string_view name : OptionNames(o.names)) {
      if (name == option) {
        return std::holds_alternative<bool*>(o.field(probe)) ? PassOn::kFlag : PassOn::kValue;
      }
    }
  }
  for (const OptionSpec& o : kOptions) {
    if (OptionHasName(o.names, option)) return PassOn::kNo;
  }
  return option.starts_with("-") && option.size() > 1 ? PassOn::kUnknown : PassOn::kNo;
}

bool SandboxTakes(std::string_view option) {
  for (const OptionSpec& o : kOptions) {
    if ((o.flags & kSandboxToo) && o.field != nullptr && OptionHasName(o.names, option))
      return true;
  }
  return false;
}

std::string UnexpectedArgumentText(const std::string& extra) {
  const std::string name = extra.starts_with("--") ? extra.substr(0, extra.find('=')) : extra;
  return fmt::format(
      "unexpected argument '{}' found\n\n  tip: to pass '{}' as a value, use '-- {}'", name, name,
      name);
}

}  // namespace ae
