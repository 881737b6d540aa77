// Shell quoting for display: how a command line is shown in events (`/bin/bash -lc 'echo hi'`),
// matching codex, which quotes each word only when needed and picks single or double quotes
// per run of characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ae {

std::string ShellQuote(std::string_view word);
// Words quoted as needed and joined by single spaces.
std::string ShellJoin(const std::vector<std::string>& words);

}  // namespace ae
