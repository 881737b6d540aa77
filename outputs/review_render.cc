#include "outputs/review_render.h"

#include <fmt/format.h>

#include <algorithm>

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

// An inline code span that cannot be broken by backticks in the text.
std::string Code(const std::string& text) {
  const char* fence = text.find('`') == std::string::npos ? "`" : "`` ";
  const char* close = text.find('`') == std::string::npos ? "`" : " ``";
  return fence + text + close;
}

// Text on one line (titles, explanations never break the list they sit in).
std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
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
  std::string md = title ? fmt::format("## Code review: {}\n\n", OneLine(*title))
                         : std::string("## Code review\n\n");
  md += fmt::format("**Verdict: {}** (confidence {:.2f})\n\n", OneLine(review.overall_correctness),
                    review.overall_confidence_score);
  if (!review.overall_explanation.empty()) md += review.overall_explanation + "\n\n";
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
                      OneLine(f->title), Code(OneLine(anchor)), f->confidence_score);
    // The body stays inside the list item: every line indented under it.
    size_t pos = 0;
    std::string body = f->body;
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

}  // namespace ae
