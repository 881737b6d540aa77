// Command-line options as tables: a row gives an option's names, its value's name and its
// help, so the same row drives the parser and the --help line (exec and sandbox in
// cli/cli.cc, batch in batch/command.cc). Every table is read by CLI11, through AddTableOption.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace ae {

// Where a row's value goes: a flag is set when given; a value option keeps its last value; a
// repeatable one keeps every value, in order.
using OptionField = std::variant<bool*, std::optional<std::string>*, std::vector<std::string>*>;

// Registers one row with CLI11.
void AddTableOption(CLI::App& app, const char* names, OptionField field);

// CLI11 says "--model: 1 required TEXT missing"; say it the way clap does ("a value is
// required for '--model' but none was supplied"), for every command line agentexec reads.
std::string DescribeParseError(const CLI::ParseError& e);

// "-o,--output-last-message" -> {"-o", "--output-last-message"}.
inline std::vector<std::string_view> OptionNames(std::string_view names) {
  std::vector<std::string_view> out;
  while (!names.empty()) {
    const size_t comma = names.find(',');
    out.push_back(names.substr(0, comma));
    names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
  }
  return out;
}

inline bool OptionHasName(std::string_view names, std::string_view name) {
  for (std::string_view n : OptionNames(names)) {
    if (n == name) return true;
  }
  return false;
}

// "  -o, --output-last-message FILE   Also write ...": the first short and the first long name,
// the value's name, then the help from `column` (two spaces after a longer left side); the
// help's later lines are indented to `column` too.
inline std::string OptionHelpLine(std::string_view names, std::string_view value,
                                  std::string_view help, size_t column) {
  std::string shorts, longs;
  for (std::string_view name : OptionNames(names)) {
    std::string& into = name.starts_with("--") ? longs : shorts;
    if (into.empty()) into = std::string(name);
  }
  std::string line = shorts.empty() ? "      " : "  " + shorts + ", ";
  line += longs;
  if (!value.empty()) line += " " + std::string(value);
  line += line.size() + 2 <= column ? std::string(column - line.size(), ' ') : "  ";
  for (char c : help) {
    line += c;
    if (c == '\n') line += std::string(column, ' ');
  }
  return line + "\n";
}

}  // namespace ae
