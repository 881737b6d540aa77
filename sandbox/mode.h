// The sandbox mode and its names: the one table by which the command line, the config files,
// --print-config, the events and the error messages read and write a mode. Header-only, so
// the configuration library parses modes without linking the sandbox.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "base/name_table.h"
#include "base/result.h"

namespace ae::sandbox {

// Declared from the tightest to the loosest: a project config may not move the mode down this
// list (config/config_keys.cc compares by this order).
enum class Mode { kReadOnly, kWorkspaceWrite, kDangerFullAccess };

inline constexpr std::array<NameEntry<Mode>, 3> kModeNames = {{
    {Mode::kReadOnly, "read-only"},
    {Mode::kWorkspaceWrite, "workspace-write"},
    {Mode::kDangerFullAccess, "danger-full-access"},
}};

inline const char* ModeName(Mode mode) {
  return NameOf(kModeNames, mode);
}

// The mode called `text`; an error naming the choices otherwise.
inline Result<Mode> ParseMode(std::string_view text) {
  if (std::optional<Mode> mode = FromName(kModeNames, text)) return *mode;
  return MakeError("invalid sandbox mode '" + std::string(text) + "' (expected " +
                   JoinNames(kModeNames, ", ", " or ") + ")");
}

}  // namespace ae::sandbox
