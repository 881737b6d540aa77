#include "outputs/review_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string_view>
#include <utility>

#include "base/markup_entity.h"
#include "base/utf8.h"

namespace ae {
namespace {

std::string RelativePath(const std::string& path, const std::string& root) {
  if (!root.empty() && path.size() > root.size() + 1 && path.starts_with(root) &&
      path[root.size()] == '/') {
    return path.substr(root.size() + 1);
  }
  return path;
}

// The length of the run of `c` at text[at].
size_t RunAt(std::string_view text, size_t at, char c) {
  size_t n = 0;
  while (at + n < text.size() && text[at + n] == c) ++n;
  return n;
}

// An inline code span that backticks in the text cannot close: its fence is one backtick
// longer than the text's longest run.
std::string Code(const std::string& text) {
  size_t longest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`') {
      const size_t run = RunAt(text, i, '`');
      longest = std::max(longest, run);
      i += run - 1;
    }
  }
  if (longest == 0) return "`" + text + "`";
  const std::string fence(longest + 1, '`');
  return fence + " " + text + " " + fence;
}

// Outside code, what each of these characters of model text becomes, beside the markup
// entities (base/markup_entity.h).
constexpr std::pair<char, const char*> kInertChars[] = {{'[', "\\["}, {']', "\\]"}, {'\\', "\\\\"}};

// One line of model text, inert: its code spans as they are (Markdown shows them as text);
// elsewhere no raw HTML or <URL> autolink (<, >, & as entities) and no link or image (\[, \]
// escaped, and \ so that no escape of the model's undoes ours).
std::string InertLine(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size();) {
    if (line[i] == '`') {
      const size_t run = RunAt(line, i, '`');
      size_t close = i + run;
      while (close < line.size()) {
        const size_t other = line[close] == '`' ? RunAt(line, close, '`') : 0;
        if (other == run) break;
        close += other > 0 ? other : 1;
      }
      const size_t end = close < line.size() ? close + run : i + run;  // unmatched: literal
      out.append(line.substr(i, end - i));
      i = end;
      continue;
    }
    const auto* inert = std::find_if(std::begin(kInertChars), std::end(kInertChars),
                                     [&](const auto& e) { return e.first == line[i]; });
    if (const char* entity = MarkupEntity(line[i])) {
      out += entity;
    } else if (inert != std::end(kInertChars)) {
      out += inert->second;
    } else {
      out += line[i];
    }
    ++i;
  }
  return out;
}

// Model text for a pull request comment, inert (InertLine), fenced code blocks kept as they
// are; one the model leaves open is closed where its text ends, so it cannot swallow what
// follows.
std::string Inert(std::string_view text) {
  std::string out;
  std::string fence;  // the open fence's run (``` or ~~~ or longer); empty: none open
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    const size_t indent = std::min(line.find_first_not_of(' '), line.size());
    const std::string_view lead = line.substr(indent);
    if (!fence.empty()) {
      out.append(line);
      const size_t run = RunAt(lead, 0, fence[0]);
      if (indent <= 3 && run >= fence.size() &&
          lead.find_first_not_of(" \t", run) == std::string_view::npos) {
        fence.clear();
      }
    } else if (indent <= 3 && (lead.starts_with("```") || lead.starts_with("~~~"))) {
      fence.assign(RunAt(lead, 0, lead[0]), lead[0]);
      out.append(line);
    } else {
      out += InertLine(line);
    }
    if (nl == text.size()) break;
    out += '\n';
    pos = nl + 1;
  }
  if (!fence.empty()) out += "\n" + fence;
  return out;
}

// Text on one line (titles, explanations never break the list they sit in).
std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

// Line numbers beyond this are not a file's (the review schema's own bound).
constexpr int64_t kMaxLine = 100000000;

// What each priority means (the review guidelines' words) and how CI systems weigh it.
struct PriorityRule {
  const char* id;
  const char* name;
  const char* text;
  const char* sarif_level;
  const char* codequality_severity;
};
constexpr PriorityRule kRules[] = {
    {"agentexec/review/p0", "ReviewP0",
     "P0: must fix before merging (breaks the build, common inputs, security or data)", "error",
     "blocker"},
    {"agentexec/review/p1", "ReviewP1", "P1: should fix soon (a real bug on a plausible path)",
     "error", "critical"},
    {"agentexec/review/p2", "ReviewP2", "P2: fix eventually (an edge case, a minor leak)",
     "warning", "major"},
    {"agentexec/review/p3", "ReviewP3", "P3: low (a small improvement the author would still take)",
     "note", "minor"},
};

// The schema bounds priority to 0..3; a result built elsewhere is held to the same rules.
const PriorityRule& RuleOf(int priority) {
  return kRules[std::clamp(priority, 0, 3)];
}

// FNV-1a (64 bit): a fixed function, so a fingerprint is the same on every machine, compiler
// and run (std::hash promises none of that). Parts are NUL-separated so ("a","bc") and ("ab","c")
// differ.
std::string Fingerprint(std::initializer_list<std::string_view> parts) {
  uint64_t h = 14695981039346656037ULL;
  for (std::string_view part : parts) {
    for (unsigned char c : part) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0U) * 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

// A note quotes model text: one line, valid UTF-8, no control characters.
std::string Printable(std::string_view text) {
  std::string out = SanitizeUtf8(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

// A path relative to the repository as a URI reference: every byte but the unreserved ones and
// '/' percent-encoded, so spaces, '%', '#', '?' and non-UTF-8 bytes cannot change its meaning.
std::string UriPath(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// A finding placed in the repository: its path relative to the root, a valid 1-based range.
struct Placed {
  const ReviewFinding* finding;
  std::string path;
  int64_t start;
  int64_t end;
  const PriorityRule* rule;
};

// The findings a CI system can show; the others, and every repair, become notes.
std::vector<Placed> Place(const ReviewItem& review, const std::string& repo_root,
                          std::vector<std::string>& notes) {
  namespace fs = std::filesystem;
  std::string root_text = fs::path(repo_root).lexically_normal().string();
  while (root_text.size() > 1 && root_text.back() == '/') root_text.pop_back();
  const fs::path root(root_text);
  std::vector<Placed> placed;
  for (size_t i = 0; i < review.findings.size(); ++i) {
    const ReviewFinding& f = review.findings[i];
    const std::string which = fmt::format("finding {} (\"{}\")", i + 1, Printable(f.title));
    fs::path path(f.absolute_file_path);
    if (path.is_relative()) path = root / path;
    fs::path rel =
        root.is_absolute() ? path.lexically_normal().lexically_relative(root) : fs::path();
    const std::string rel_text = rel.string();
    // No file name holds a NUL byte; one in the path would name another file to the reader.
    if (rel.empty() || rel_text == "." || rel_text == ".." || rel_text.starts_with("../") ||
        rel.filename().empty() || rel_text.find('\0') != std::string::npos) {
      notes.push_back(
          fmt::format("{}: its path {} is not a file inside the repository {}; left out", which,
                      Printable(f.absolute_file_path), Printable(root_text)));
      continue;
    }
    int64_t start = std::clamp<int64_t>(f.line_start, 1, kMaxLine);
    int64_t end = std::clamp<int64_t>(f.line_end, start, kMaxLine);
    if (start != f.line_start || end != f.line_end) {
      notes.push_back(
          fmt::format("{}: lines {} to {} are not a valid 1-based range; shown as {} to {}", which,
                      f.line_start, f.line_end, start, end));
    }
    const PriorityRule& rule = RuleOf(f.priority);
    if (f.priority != static_cast<int>(&rule - kRules)) {
      notes.push_back(fmt::format("{}: priority {} is not 0 to 3; shown as P{}", which, f.priority,
                                  &rule - kRules));
    }
    placed.push_back({&f, rel_text, start, end, &rule});
  }
  return placed;
}

}  // namespace

void WriteReviewFields(JsonWriter& w, const ReviewItem& review) {
  w.Key("findings");
  w.StartArray();
  for (const ReviewFinding& f : review.findings) {
    w.StartObject();
    w.Key("title"), w.String(f.title);
    w.Key("body"), w.String(f.body);
    w.Key("confidence_score"), w.Double(f.confidence_score);
    w.Key("priority"), w.Int(f.priority);
    w.Key("code_location");
    w.StartObject();
    w.Key("absolute_file_path"), w.String(f.absolute_file_path);
    w.Key("line_range");
    w.StartObject();
    w.Key("start"), w.Int64(f.line_start);
    w.Key("end"), w.Int64(f.line_end);
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.Key("overall_correctness"), w.String(review.overall_correctness);
  w.Key("overall_explanation"), w.String(review.overall_explanation);
  w.Key("overall_confidence_score"), w.Double(review.overall_confidence_score);
}

std::string ReviewJson(const ReviewItem& review) {
  JsonWriter w;
  w.StartObject();
  WriteReviewFields(w, review);
  w.EndObject();
  return std::string(w.view());
}

std::string ReviewMarkdown(const ReviewItem& review, const std::string& repo_root,
                           const std::optional<std::string>& title) {
  // Everything the model wrote goes through Inert: a comment that renders its HTML or loads
  // its images would let a reviewed change speak for the reviewer.
  std::string md = title ? fmt::format("## Code review: {}\n\n", InertLine(OneLine(*title)))
                         : std::string("## Code review\n\n");
  md +=
      fmt::format("**Verdict: {}** (confidence {:.2f})\n\n",
                  InertLine(OneLine(review.overall_correctness)), review.overall_confidence_score);
  if (!review.overall_explanation.empty()) md += Inert(review.overall_explanation) + "\n\n";
  if (review.findings.empty()) {
    md += "No findings.\n";
    return SanitizeUtf8(md);
  }
  // Most urgent first; equal priorities keep the model's order.
  std::vector<const ReviewFinding*> order;
  for (const ReviewFinding& f : review.findings) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](const ReviewFinding* a, const ReviewFinding* b) {
    return a->priority < b->priority;
  });
  md += fmt::format("### Findings ({})\n", order.size());
  int n = 0;
  for (const ReviewFinding* f : order) {
    std::string anchor =
        RelativePath(f->absolute_file_path, repo_root) + ":" + std::to_string(f->line_start);
    if (f->line_end != f->line_start) anchor += "-" + std::to_string(f->line_end);
    md += fmt::format("\n{}. **[P{}] {}** — {} (confidence {:.2f})\n", ++n, f->priority,
                      InertLine(OneLine(f->title)), Code(OneLine(anchor)), f->confidence_score);
    // The body stays inside the list item: every line indented under it.
    size_t pos = 0;
    std::string body = Inert(f->body);
    while (!body.empty() && body.back() == '\n') body.pop_back();
    if (!body.empty()) md += "\n";
    while (pos < body.size()) {
      size_t nl = body.find('\n', pos);
      if (nl == std::string::npos) nl = body.size();
      std::string line = body.substr(pos, nl - pos);
      md += line.empty() ? "\n" : "   " + line + "\n";
      pos = nl + 1;
    }
  }
  return SanitizeUtf8(md);
}

namespace {

// Every priority's rule, always in the same order, so ruleIndex means the same in every log.
void WriteSarifDriver(JsonWriter& w, std::string_view version) {
  w.Key("driver");
  w.StartObject();
  w.Key("name"), w.String("agentexec");
  w.Key("version"), w.String(version);
  w.Key("rules");
  w.StartArray();
  for (const PriorityRule& rule : kRules) {
    w.StartObject();
    w.Key("id"), w.String(rule.id);
    w.Key("name"), w.String(rule.name);
    w.Key("shortDescription");
    w.StartObject();
    w.Key("text"), w.String(rule.text);
    w.EndObject();
    w.Key("defaultConfiguration");
    w.StartObject();
    w.Key("level"), w.String(rule.sarif_level);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteSarifLocation(JsonWriter& w, const Placed& p) {
  w.Key("locations");
  w.StartArray();
  w.StartObject();
  w.Key("physicalLocation");
  w.StartObject();
  w.Key("artifactLocation");
  w.StartObject();
  w.Key("uri"), w.String(UriPath(p.path));
  w.Key("uriBaseId"), w.String("%SRCROOT%");
  w.EndObject();
  w.Key("region");
  w.StartObject();
  w.Key("startLine"), w.Int64(p.start);
  w.Key("endLine"), w.Int64(p.end);
  w.EndObject();
  w.EndObject();
  w.EndObject();
  w.EndArray();
}

void WriteSarifResult(JsonWriter& w, const Placed& p) {
  const ReviewFinding& f = *p.finding;
  w.StartObject();
  w.Key("ruleId"), w.String(p.rule->id);
  w.Key("ruleIndex"), w.Int(static_cast<int>(p.rule - kRules));
  w.Key("level"), w.String(p.rule->sarif_level);
  w.Key("message");
  w.StartObject();
  std::string text = f.title.empty() ? std::string("(untitled finding)") : f.title;
  if (!f.body.empty()) text += "\n\n" + f.body;
  w.Key("text"), w.String(text);
  w.EndObject();
  WriteSarifLocation(w, p);
  // Path and title, not lines: the same finding keeps its alert when code above it moves.
  w.Key("partialFingerprints");
  w.StartObject();
  w.Key("agentexecFinding/v1"), w.String(Fingerprint({p.path, f.title}));
  w.EndObject();
  w.Key("properties");
  w.StartObject();
  w.Key("confidence"), w.Double(f.confidence_score);
  w.Key("priority"), w.Int(static_cast<int>(p.rule - kRules));
  w.EndObject();
  w.EndObject();
}

// The notes (findings left out, repairs made) as the run's warnings.
void WriteSarifNotes(JsonWriter& w, const std::vector<std::string>& notes) {
  w.Key("invocations");
  w.StartArray();
  w.StartObject();
  w.Key("executionSuccessful"), w.Bool(true);
  w.Key("toolExecutionNotifications");
  w.StartArray();
  for (const std::string& note : notes) {
    w.StartObject();
    w.Key("level"), w.String("warning");
    w.Key("message");
    w.StartObject();
    w.Key("text"), w.String(note);
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  w.EndArray();
}

}  // namespace

CiReport ReviewSarif(const ReviewItem& review, const std::string& repo_root,
                     std::string_view version) {
  CiReport report;
  std::vector<Placed> placed = Place(review, repo_root, report.notes);
  JsonWriter w;
  w.StartObject();
  w.Key("$schema"), w.String("https://json.schemastore.org/sarif-2.1.0.json");
  w.Key("version"), w.String("2.1.0");
  w.Key("runs");
  w.StartArray();
  w.StartObject();
  w.Key("tool");
  w.StartObject();
  WriteSarifDriver(w, version);
  w.EndObject();
  w.Key("results");
  w.StartArray();
  for (const Placed& p : placed) WriteSarifResult(w, p);
  w.EndArray();
  if (!report.notes.empty()) WriteSarifNotes(w, report.notes);
  w.Key("properties");
  w.StartObject();
  w.Key("overall_correctness"), w.String(review.overall_correctness);
  w.Key("overall_explanation"), w.String(review.overall_explanation);
  w.Key("overall_confidence_score"), w.Double(review.overall_confidence_score);
  w.EndObject();
  w.EndObject();
  w.EndArray();
  w.EndObject();
  report.text = std::string(w.view());
  return report;
}

CiReport ReviewCodeQuality(const ReviewItem& review, const std::string& repo_root) {
  CiReport report;
  std::vector<Placed> placed = Place(review, repo_root, report.notes);
  // GitLab keeps one issue per fingerprint: the same title twice in a file counts its copies.
  std::map<std::pair<std::string, std::string>, int> seen;
  JsonWriter w;
  w.StartArray();
  for (const Placed& p : placed) {
    const ReviewFinding& f = *p.finding;
    const int copy = seen[{p.path, f.title}]++;
    w.StartObject();
    w.Key("description"), w.String(f.title.empty() ? "(untitled finding)" : Printable(f.title));
    w.Key("check_name"), w.String(p.rule->id);
    w.Key("fingerprint"), w.String(Fingerprint({p.path, f.title, std::to_string(copy)}));
    w.Key("severity"), w.String(p.rule->codequality_severity);
    w.Key("location");
    w.StartObject();
    w.Key("path"), w.String(p.path);
    w.Key("lines");
    w.StartObject();
    w.Key("begin"), w.Int64(p.start);
    w.Key("end"), w.Int64(p.end);
    w.EndObject();
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  report.text = std::string(w.view());
  return report;
}

}  // namespace ae
