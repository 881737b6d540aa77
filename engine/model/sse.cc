#include "engine/model/sse.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace ae {

Status SseParser::Feed(std::string_view bytes, const Handler& on_event) {
  bytes_fed_ += bytes.size();
  if (!head_done_) {
    // A leading BOM is dropped even when the network splits it across reads: the first
    // bytes are held until they either complete the BOM or differ from it.
    constexpr std::string_view kBom = "\xEF\xBB\xBF";
    const size_t take = std::min(bytes.size(), kBom.size() - head_.size());
    head_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (head_.size() < kBom.size() && kBom.starts_with(head_)) return {};
    head_done_ = true;
    if (head_ != kBom) {
      std::string held = std::move(head_);
      if (Status s = FeedLines(held, on_event); !s.ok()) return s;
    }
    head_.clear();
  }
  return FeedLines(bytes, on_event);
}

Status SseParser::FeedLines(std::string_view bytes, const Handler& on_event) {
  if (skip_lf_ && !bytes.empty()) {
    if (bytes.front() == '\n') bytes.remove_prefix(1);
    skip_lf_ = false;
  }
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  // The next CR is searched once and cached, so a piece without CRs costs one memchr pass.
  const char* next_cr = static_cast<const char*>(std::memchr(p, '\r', end - p));
  while (p < end) {
    if (next_cr && next_cr < p) next_cr = static_cast<const char*>(std::memchr(p, '\r', end - p));
    const char* lf = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const char* eol = lf;
    if (next_cr && (!eol || next_cr < eol)) eol = next_cr;
    if (!eol) {
      partial_.append(p, end - p);
      if (partial_.size() + current_.data.size() > max_event_bytes_) {
        return MakeError(fmt::format(
            "server-sent event larger than {} bytes (a line never ended); the stream is broken",
            max_event_bytes_));
      }
      return {};
    }
    if (partial_.empty()) {
      Line(std::string_view(p, eol - p), on_event);
    } else {
      partial_.append(p, eol - p);
      Line(partial_, on_event);
      partial_.clear();
    }
    if (current_.data.size() > max_event_bytes_) {
      return MakeError(fmt::format("server-sent event larger than {} bytes; the stream is broken",
                                   max_event_bytes_));
    }
    p = eol + 1;
    if (*eol == '\r') {
      if (p < end) {
        if (*p == '\n') ++p;
      } else {
        skip_lf_ = true;
      }
    }
  }
  return {};
}

void SseParser::Line(std::string_view line, const Handler& on_event) {
  if (line.empty()) {
    Dispatch(on_event);
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (saw_data_) current_.data.push_back('\n');
    current_.data.append(value);
    saw_data_ = true;
  } else if (field == "event") {
    current_.event.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) current_.id.assign(value);
  }
  // "retry" and unknown fields are ignored, as the standard says.
}

void SseParser::Dispatch(const Handler& on_event) {
  if (saw_data_) on_event(current_);
  current_.event.clear();
  current_.data.clear();
  saw_data_ = false;
  // The id persists across events (last event id), per the standard.
}

}  // namespace ae
