#include "runner/cli.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/duration.h"
#include "runner/exit_code.h"

// The git commit, set at configure time for ae_config only (cmake/Version.cmake), so a new
// commit rebuilds one file, not the tree.
#ifndef AGENTEXEC_COMMIT
#define AGENTEXEC_COMMIT "unknown"
#endif

namespace ae {
namespace {

constexpr const char* kUsage =
    "Usage: agentexec [exec] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] resume [SESSION_ID | --last] [OPTIONS] [PROMPT]\n"
    "       agentexec [exec] review [--uncommitted | --base BRANCH | --commit SHA] [OPTIONS] "
    "[PROMPT]\n";

// The --help lines of AddConfigOptions' options, shown by exec's and sandbox's help alike.
constexpr const char* kConfigOptionsHelp =
    "  -c, --config KEY=VALUE           Override a config key, VALUE parsed as TOML "
    "(repeatable)\n"
    "  -p, --profile NAME               Use [profiles.NAME] or $AGENTEXEC_HOME/NAME.config.toml\n"
    "      --ignore-user-config         Do not read $AGENTEXEC_HOME/config.toml or profile "
    "files\n"
    "      --strict-config              Unknown config keys are errors, not warnings\n";

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
  const std::string name = extra.starts_with("--") ? extra.substr(0, extra.find('=')) : extra;
  return UsageError(
      fmt::format("unexpected argument '{}' found\n\n  tip: to pass '{}' as a value, use '-- {}'",
                  name, name, name),
      usage);
}

bool OneOf(const std::string& value, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return value == a; });
}

// CLI11 says "--model: 1 required TEXT missing"; say it the way clap does.
std::string DescribeParseError(const CLI::ParseError& e) {
  std::string what = e.what();
  size_t colon = what.find(": ");
  if (colon != std::string::npos && what.find(" required ", colon) != std::string::npos &&
      what.ends_with(" missing")) {
    return fmt::format("a value is required for '{}' but none was supplied", what.substr(0, colon));
  }
  return what;
}

// The options that choose the configuration and the sandbox: exec and sandbox take them alike.
// -s is read as text into `sandbox_text`, then parsed by SetSandboxMode.
void AddConfigOptions(CLI::App& app, CliArgs& args, std::optional<std::string>& sandbox_text) {
  const auto last = CLI::MultiOptionPolicy::TakeLast;
  app.add_option("-p,--profile", args.profile)->multi_option_policy(last);
  app.add_option("-c,--config", args.config_overrides)->allow_extra_args(false);
  app.add_option("-s,--sandbox", sandbox_text)->multi_option_policy(last);
  app.add_option("--add-dir", args.add_dirs)->allow_extra_args(false);
  app.add_flag("--ignore-user-config", args.ignore_user_config);
  app.add_flag("--strict-config", args.strict_config);
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

// -a POLICY, parsed by the policy table (engine/approval.h) into args.approval. The
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
  CliArgs args;
  CLI::App app{"agentexec sandbox"};
  app.set_help_flag("-h,--help");
  std::optional<std::string> sandbox_text;
  AddConfigOptions(app, args, sandbox_text);
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
  if (Status ok = SetSandboxMode(sandbox_text, args, kSandboxUsage); !ok.ok()) return ok.error();
  if (command.empty()) return UsageError("'sandbox' needs a COMMAND to run", kSandboxUsage);
  args.sandbox_command = std::move(command);
  return args;
}

// The review options: only after `review`, at most one target, a known format.
Status CheckReviewOptions(CliArgs& args, const ReviewArgs& given,
                          const std::optional<std::string>& format) {
  std::vector<const char*> targets;
  if (given.uncommitted) targets.push_back("--uncommitted");
  if (given.base) targets.push_back("--base <BRANCH>");
  if (given.commit) targets.push_back("--commit <SHA>");
  if (!args.review) {
    const char* option = !targets.empty() ? targets.front()
                         : given.title    ? "--title <TITLE>"
                         : format         ? "--format <FORMAT>"
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
    static const std::pair<const char*, ReviewFormat> kFormats[] = {
        {"json", ReviewFormat::kJson},
        {"markdown", ReviewFormat::kMarkdown},
        {"sarif", ReviewFormat::kSarif},
        {"codequality", ReviewFormat::kCodeQuality}};
    const auto* known = std::find_if(std::begin(kFormats), std::end(kFormats),
                                     [&](const auto& f) { return *format == f.first; });
    if (known == std::end(kFormats)) {
      return InvalidValue(*format, "--format <FORMAT>",
                          "possible values: json, markdown, sarif, codequality");
    }
    args.review->format = known->second;
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

// The "Exit codes:" lines of --help, from the one table (runner/exit_code.h).
std::string ExitCodesHelp() {
  std::string out;
  for (const ExitCodeInfo& e : kExitCodes) {
    out += fmt::format("  {:<8} {}\n", ToInt(e.code), e.meaning);
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
      "      --json                       Print events to stdout as JSON lines "
      "(alias --experimental-json)\n"
      "  -o, --output-last-message FILE   Also write the final agent message to FILE\n"
      "      --events-file FILE           Also write the JSON lines to FILE (with or without "
      "--json)\n"
      "      --output-schema FILE         JSON Schema the final message must follow (strict:\n"
      "                                   checked at start, the answer validated at the end)\n"
      "      --color always|never|auto    Colour on stderr (auto: only on a terminal)\n"
      "      --progress                   With --json: item.updated with a running command's "
      "output\n"
      "\n"
      "Model:\n"
      "  -m, --model MODEL                Model to use\n"
      "      --oss                        Use the local provider 'ollama'\n"
      "  -i, --image FILE                 Attach an image to the prompt (repeatable)\n"
      "\n"
      "Sandbox and approval:\n"
      "  -s, --sandbox MODE               read-only | workspace-write | danger-full-access\n"
      "      --full-auto                  Same as --sandbox workspace-write\n"
      "      --add-dir DIR                Also make DIR writable (repeatable)\n"
      "  -a, --ask-for-approval POLICY    never | on-failure (retry a denied command "
      "unsandboxed)\n"
      "      --dangerously-bypass-approvals-and-sandbox  No sandbox, and approval never\n"
      "      --yolo                       Same as --dangerously-bypass-approvals-and-sandbox\n"
      "\n"
      "Configuration:\n"
      "{}"
      "      --print-config               Print each effective setting and its source, then exit\n"
      "\n"
      "Run:\n"
      "  -C, --cd DIR                     Work in DIR\n"
      "      --skip-git-repo-check        Allow running outside a git repository\n"
      "      --ephemeral                  Write no session file\n"
      "      --max-turns N                Stop after N model requests\n"
      "      --max-tokens N               Stop when the thread has used N input+output tokens\n"
      "      --timeout DURATION           Stop after DURATION: 90s, 10m, 1h30m, 500ms\n"
      "      --last                       With resume: the newest session in this directory\n"
      "  -h, --help                       Print this help\n"
      "  -V, --version                    Print the version\n"
      "\n"
      "Review (agentexec review; PROMPT = extra review instructions, '-' reads stdin):\n"
      "      --uncommitted                Review staged, unstaged and untracked changes "
      "(default)\n"
      "      --base BRANCH                Review the changes since the merge base with BRANCH\n"
      "      --commit SHA                 Review the changes introduced by a commit\n"
      "      --title TITLE                The change's title, shown to the model and in the "
      "review\n"
      "      --format FORMAT              What stdout and -o get: json (default), markdown (a "
      "pull\n"
      "                                   request comment), sarif (GitHub code scanning),\n"
      "                                   codequality (GitLab Code Quality report)\n"
      "\n"
      "Exit codes:\n"
      "{}"
      "\n"
      "Configuration: $AGENTEXEC_HOME/config.toml (default ~/.agentexec); see docs/CONFIG.md.\n",
      AGENTEXEC_VERSION, kUsage, kConfigOptionsHelp, ExitCodesHelp());
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
      "  -s, --sandbox MODE               read-only (default) | workspace-write | "
      "danger-full-access\n"
      "      --add-dir DIR                Also make DIR writable (repeatable)\n"
      "{}"
      "  -h, --help                       Print this help\n"
      "\n"
      "Example: agentexec sandbox -s workspace-write -- make test\n"
      "\n"
      "Exit codes:\n"
      "  N        the command's own exit status\n"
      "  2        usage or configuration error\n"
      "  3        the chosen sandbox cannot be enforced on this kernel\n"
      "  126/127  the command cannot be run / was not found\n",
      kSandboxUsage, kConfigOptionsHelp);
}

Result<CliArgs> ParseCli(int argc, const char* const* argv) {
  // `sandbox` first (after an optional `exec`): everything after its options is a command.
  const int at = (argc >= 2 && std::strcmp(argv[1], "exec") == 0) ? 2 : 1;
  if (argc > at && std::strcmp(argv[at], "sandbox") == 0) {
    return ParseSandbox(argc - at, argv + at);
  }

  CliArgs args;

  // Arguments after "--" are always positional: never options, never keywords.
  int literal_from = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      literal_from = i + 1;
      break;
    }
  }
  // -h and -V win over everything else on the line, as with clap.
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
      args.version_text = fmt::format("agentexec {} ({})\n", AGENTEXEC_VERSION, AGENTEXEC_COMMIT);
      return args;
    }
  }

  CLI::App app{"agentexec"};
  app.set_help_flag();
  app.allow_extras();  // unknown options are reported below, in our words

  std::vector<std::string> positionals;
  std::string color = "auto", max_turns, max_tokens, timeout;
  const auto last = CLI::MultiOptionPolicy::TakeLast;

  app.add_flag("--json,--experimental-json", args.json);
  app.add_option("-o,--output-last-message", args.output_last_message)->multi_option_policy(last);
  app.add_option("--events-file", args.events_file)->multi_option_policy(last);
  app.add_option("--output-schema", args.output_schema)->multi_option_policy(last);
  app.add_option("-m,--model", args.model)->multi_option_policy(last);
  std::optional<std::string> sandbox_text, approval_text;
  AddConfigOptions(app, args, sandbox_text);
  app.add_flag("--dangerously-bypass-approvals-and-sandbox,--yolo", args.dangerously_bypass);
  app.add_flag("--full-auto", args.full_auto);
  app.add_option("-C,--cd", args.cd)->multi_option_policy(last);
  app.add_flag("--skip-git-repo-check", args.skip_git_repo_check);
  app.add_flag("--ephemeral", args.ephemeral);
  app.add_option("--color", color)->multi_option_policy(last);
  app.add_option("-i,--image", args.images)->allow_extra_args(false);
  app.add_flag("--oss", args.oss);
  app.add_option("-a,--ask-for-approval", approval_text)->multi_option_policy(last);
  app.add_option("--max-turns", max_turns)->multi_option_policy(last);
  app.add_option("--max-tokens", max_tokens)->multi_option_policy(last);
  app.add_option("--timeout", timeout)->multi_option_policy(last);
  app.add_flag("--print-config", args.print_config);
  app.add_flag("--progress", args.progress);
  app.add_flag("--last", args.resume_last);
  ReviewArgs review;
  app.add_flag("--uncommitted", review.uncommitted);
  app.add_option("--base", review.base)->multi_option_policy(last);
  app.add_option("--commit", review.commit)->multi_option_policy(last);
  app.add_option("--title", review.title)->multi_option_policy(last);
  std::optional<std::string> review_format;
  app.add_option("--format", review_format)->multi_option_policy(last);
  // Passed by newer Codex SDKs; they change nothing in a headless run, so they are accepted
  // (and left out of --help) rather than failing the SDK's call.
  std::string sdk_thread_source, sdk_cyber_access;
  app.add_option("--thread-source", sdk_thread_source)->multi_option_policy(last);
  app.add_option("--cyber-access-program", sdk_cyber_access)->multi_option_policy(last);
  app.add_option("args", positionals);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return UsageError(DescribeParseError(e));
  }
  for (const std::string& extra : app.remaining()) {
    if (extra == "--") continue;
    return UnexpectedArgument(extra);
  }

  if (Status ok = SetSandboxMode(sandbox_text, args, kUsage); !ok.ok()) return ok.error();
  if (!OneOf(color, {"always", "never", "auto"})) {
    return InvalidValue(color, "--color <COLOR>", "possible values: always, never, auto");
  }
  args.color = color;
  // An empty name would reach the API as `"model": ""` and fail there, after the set-up.
  if (args.model && args.model->empty()) {
    return InvalidValue("", "--model <MODEL>", "a model name cannot be empty");
  }
  if (Status ok = SetApprovalPolicy(approval_text, args); !ok.ok()) return ok.error();
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

  // Keywords: an optional leading `exec`, then an optional `resume`, never after "--".
  const size_t literal_count = static_cast<size_t>(argc - literal_from);
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
  }
  if (!args.resume && next < keyword_end && positionals[next] == "review") {
    args.review = review;
    ++next;
  }
  if (Status ok = CheckReviewOptions(args, review, review_format); !ok.ok()) return ok.error();
  if (args.resume_last && !args.resume) {
    return UsageError("'--last' is only valid after 'resume'");
  }
  if (args.resume && args.resume_last) {
    // `resume --last ID [PROMPT]`: an id where the prompt goes would silently become the prompt.
    const size_t left = positionals.size() - next;
    if (left >= 2 || (left == 1 && LooksLikeSessionId(positionals[next]))) {
      return UsageError(fmt::format(
          "the argument '--last' cannot be used with '{}': '--last' and a SESSION_ID exclude "
          "each other",
          positionals[next]));
    }
  }
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

}  // namespace ae
