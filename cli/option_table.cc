#include "cli/option_table.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace ae {

void AddTableOption(CLI::App& app, const char* names, OptionField field) {
  if (bool** flag = std::get_if<bool*>(&field)) {
    app.add_flag(names, **flag);
  } else if (auto** value = std::get_if<std::optional<std::string>*>(&field)) {
    app.add_option(names, **value)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  } else if (auto** values = std::get_if<std::vector<std::string>*>(&field)) {
    app.add_option(names, **values)->allow_extra_args(false);
  }
}

std::string DescribeParseError(const CLI::ParseError& e) {
  std::string what = e.what();
  size_t colon = what.find(": ");
  if (colon != std::string::npos && what.find(" required ", colon) != std::string::npos &&
      what.ends_with(" missing")) {
    return fmt::format("a value is required for '{}' but none was supplied", what.substr(0, colon));
  }
  return what;
}

}  // namespace ae
