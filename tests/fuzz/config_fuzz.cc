// The config loader (config/config.h) on an arbitrary config.toml plus -c overrides. The
// input is the file's text, then a line "#-c", then one override per line. Invariants: no
// crash or escaped exception; an error has a message; a loaded config prints (--print-config)
// as TOML that parses again.
#include <toml++/toml.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

const std::string& Home() {
  return ae::fuzz::ScratchDir("/tmp/ae-fuzz-config-XXXXXX");
}

void WriteConfig(std::string_view text) {
  std::ofstream(Home() + "/config.toml", std::ios::binary | std::ios::trunc)
      .write(text.data(), static_cast<std::streamsize>(text.size()));
}

ae::LoadOptions Options(std::vector<std::string> overrides, bool strict) {
  ae::LoadOptions o;
  o.home = Home();
  o.process_cwd = Home();
  o.strict = strict;
  o.overrides = std::move(overrides);
  o.getenv = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t sep = in.find("\n#-c\n");
  std::string_view file = in.substr(0, sep);
  std::vector<std::string> overrides;
  if (sep != std::string_view::npos) {
    std::string_view rest = in.substr(sep + 5);
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      overrides.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  for (bool strict : {false, true}) {
    WriteConfig(file);
    ae::Result<ae::Config> config = ae::LoadConfig(Options(overrides, strict));
    if (!config.ok()) {
      ae::fuzz::Check(!config.message().empty(), "a config error without a message");
      continue;
    }
    std::string printed = ae::FormatConfig(*config);
    try {
      (void)toml::parse(std::string_view(printed));
    } catch (const toml::parse_error& e) {
      ae::fuzz::Fail(std::string("--print-config is not TOML: ") + e.what(), printed);
    }
  }
  return 0;
}
