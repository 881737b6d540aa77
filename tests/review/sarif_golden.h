// The exact SARIF log pieces the review tests expect (tests/review/ci_formats_test.cc and the
// end-to-end run).
#pragma once

#include <cstdint>
#include <string>

namespace ae {

// One SARIF rule object, as every log carries it.
inline std::string Rule(int p, const std::string& text, const std::string& level) {
  return R"({"id":"agentexec/review/p)" + std::to_string(p) + R"(","name":"ReviewP)" +
         std::to_string(p) + R"(","shortDescription":{"text":")" + text +
         R"("},"defaultConfiguration":{"level":")" + level + R"("}})";
}

inline std::string SarifResult(int p, const std::string& level, const std::string& text,
                               const std::string& uri, int64_t start, int64_t end,
                               const std::string& fingerprint, const std::string& confidence) {
  return R"({"ruleId":"agentexec/review/p)" + std::to_string(p) + R"(","ruleIndex":)" +
         std::to_string(p) + R"(,"level":")" + level + R"(","message":{"text":")" + text +
         R"("},"locations":[{"physicalLocation":{"artifactLocation":{"uri":")" + uri +
         R"(","uriBaseId":"%SRCROOT%"},"region":{"startLine":)" + std::to_string(start) +
         R"(,"endLine":)" + std::to_string(end) +
         R"(}}}],"partialFingerprints":{"agentexecFinding/v1":")" + fingerprint +
         R"("},"properties":{"confidence":)" + confidence + R"(,"priority":)" + std::to_string(p) +
         "}}";
}

// The log up to its first result, for agentexec `version`.
inline std::string SarifHead(const std::string& version) {
  return R"({"$schema":"https://json.schemastore.org/sarif-2.1.0.json","version":"2.1.0","runs":[{"tool":{"driver":{"name":"agentexec","version":")" +
         version + R"(","rules":[)" +
         Rule(0, "P0: must fix before merging (breaks the build, common inputs, security or data)",
              "error") +
         "," + Rule(1, "P1: should fix soon (a real bug on a plausible path)", "error") + "," +
         Rule(2, "P2: fix eventually (an edge case, a minor leak)", "warning") + "," +
         Rule(3, "P3: low (a small improvement the author would still take)", "note") +
         R"(]}},"results":[)";
}

}  // namespace ae
