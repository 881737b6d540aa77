// SseParser: an incremental Server-Sent Events parser (WHATWG "event stream" rules). Bytes
// arrive in arbitrary pieces from the network; events come out whole. Handles LF, CRLF and
// lone CR line ends (also split across reads), comments, multi-line data, the `event:` and
// `id:` fields, a leading BOM, and very long lines, with a bound on the memory one event may
// take so a hostile or broken server cannot exhaust it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace ae {

struct SseEvent {
  std::string event;  // the `event:` field; empty when the server sent none
  std::string data;   // `data:` lines joined by "\n"
  std::string id;     // the `id:` field
};

class SseParser {
 public:
  using Handler = std::function<void(SseEvent&)>;
  static constexpr size_t kDefaultMaxEventBytes = 64u << 20;

  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes`, calling `on_event` for each event completed by them. An event (its
  // pending line plus data) over the bound is an error; the parser must not be fed after one.
  Status Feed(std::string_view bytes, const Handler& on_event);

  // Number of bytes fed so far.
  size_t bytes_fed() const { return bytes_fed_; }

 private:
  Status FeedLines(std::string_view bytes, const Handler& on_event);
  void Line(std::string_view line, const Handler& on_event);
  void Dispatch(const Handler& on_event);

  size_t max_event_bytes_;
  size_t bytes_fed_ = 0;
  std::string head_;        // the stream's first bytes while they may still be a BOM
  bool head_done_ = false;  // the leading BOM (if any) has been dropped
  std::string partial_;     // an unterminated line carried to the next Feed
  bool skip_lf_ = false;    // the last piece ended in CR: a leading LF completes a CRLF
  bool saw_data_ = false;   // a data field was seen in the current event
  SseEvent current_;
};

}  // namespace ae
