// What a credential's host answers inside a terminated tunnel, on its way back to the command:
// read with llhttp in response mode, each head and each body (decoded from its chunked framing)
// through the broker's StreamFilter, then framed again. Filtering the bytes on the wire would
// let a chunk boundary split a reflected value past the filter. A body the filter cannot read
// (a Content-Encoding other than identity, a Transfer-Encoding other than chunked), in any of
// the responses (a 103's final response included), is refused.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/credentials.h"

namespace ae::net {

class ResponseFilter {
 public:
  // `forms`: Broker::ResponseForms. `head_request`: the request was HEAD (its response has a
  // Content-Length but no body).
  ResponseFilter(std::vector<std::pair<std::string, std::string>> forms, bool head_request);
  ~ResponseFilter();
  ResponseFilter(const ResponseFilter&) = delete;
  ResponseFilter& operator=(const ResponseFilter&) = delete;

  // Reads `data` from the server, appending to *out what may go to the command. False (and
  // error() says why) when the response must not reach it; nothing more is fed then.
  bool Feed(std::string_view data, std::string* out);
  // The server's end of the stream (a body delimited by the close ends here).
  bool Finish(std::string* out);
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

}  // namespace ae::net
