// The golden turn.completed and turn.failed lines that tests compare a stream's end to, built
// from the numbers each test is about: the field order of the usage objects is the JSONL
// contract, spelled once here rather than in every expectation.
#pragma once

#include <string>

#include "engine/events/events.h"

namespace ae::test {

// Written out here, not by the code under test, so that a change of the contract shows.
inline std::string UsageJson(const Usage& u) {
  return R"({"input_tokens":)" + std::to_string(u.input_tokens) + R"(,"cached_input_tokens":)" +
         std::to_string(u.cached_input_tokens) + R"(,"cache_write_input_tokens":)" +
         std::to_string(u.cache_write_input_tokens) + R"(,"output_tokens":)" +
         std::to_string(u.output_tokens) + R"(,"reasoning_output_tokens":)" +
         std::to_string(u.reasoning_output_tokens) + "}";
}

// What follows a turn's outcome in both lines. `duration_ms` is "<ms>" for a line that went
// through NormalizeThreadId.
inline std::string UsageTail(const Usage& usage, const Usage& last, int requests,
                             const std::string& duration_ms) {
  return R"("usage":)" + UsageJson(usage) + R"(,"last_usage":)" + UsageJson(last) +
         R"(,"requests":)" + std::to_string(requests) + R"(,"duration_ms":)" + duration_ms + "}";
}

// `usage`: the whole turn's; `last`: its last request's.
inline std::string TurnCompletedLine(const Usage& usage, const Usage& last, int requests,
                                     const std::string& duration_ms = "<ms>") {
  return R"({"type":"turn.completed",)" + UsageTail(usage, last, requests, duration_ms);
}

// `message` as it stands in the JSON (already escaped).
inline std::string TurnFailedLine(const std::string& message, const std::string& code,
                                  const Usage& usage, const Usage& last, int requests,
                                  const std::string& duration_ms = "<ms>") {
  return R"({"type":"turn.failed","error":{"message":")" + message + R"(","code":")" + code +
         R"("},)" + UsageTail(usage, last, requests, duration_ms);
}

}  // namespace ae::test
