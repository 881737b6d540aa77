#include "net/response_filter.h"

#include <fmt/format.h>
#include <llhttp.h>

#include <optional>

#include "net/host_name.h"

namespace ae::net {

struct ResponseFilter::Impl {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  std::vector<std::pair<std::string, std::string>> forms;
  bool head_request = false;
  std::optional<StreamFilter> body;  // the current message's
  std::string status, field, value;
  std::vector<std::pair<std::string, std::string>> headers;
  bool in_body = false;  // header callbacks from here on are a chunked body's trailers
  bool chunked = false;
  std::string* out = nullptr;  // Feed's, while llhttp runs
  std::string* error = nullptr;

  static Impl* Of(llhttp_t* p) { return static_cast<Impl*>(p->data); }

  void Emit(const std::string& bytes) {
    if (bytes.empty()) return;
    if (chunked) {
      out->append(fmt::format("{:x}\r\n", bytes.size())).append(bytes).append("\r\n");
    } else {
      out->append(bytes);
    }
  }

  // The head as the server sent it, with the forms replaced; "" after a refusal.
  bool Head() {
    for (const auto& [name, v] : headers) {
      const std::string lower = AsciiLower(name);
      std::string coding = AsciiLower(v);
      coding.erase(0, coding.find_first_not_of(" \t"));
      coding.erase(coding.find_last_not_of(" \t") + 1);
      const bool unreadable =
          (lower == "content-encoding" && !coding.empty() && coding != "identity") ||
          (lower == "transfer-encoding" && coding != "chunked");
      if (unreadable) {
        *error = fmt::format(
            "answered with {}: {}, which the credential filter cannot read; the "
            "response was dropped",
            name, v);
        return false;
      }
    }
    std::string head =
        fmt::format("HTTP/{}.{} {} {}\r\n", llhttp_get_http_major(&parser),
                    llhttp_get_http_minor(&parser), llhttp_get_status_code(&parser), status);
    for (const auto& [name, v] : headers) head.append(name).append(": ").append(v).append("\r\n");
    head += "\r\n";
    StreamFilter whole(forms);
    out->append(whole.Feed(head)).append(whole.Finish());
    return true;
  }
};

ResponseFilter::ResponseFilter(std::vector<std::pair<std::string, std::string>> forms,
                               bool head_request)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.forms = std::move(forms);
  impl.head_request = head_request;
  impl.error = &error_;
  llhttp_settings_init(&impl.settings);
  impl.settings.on_message_begin = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    impl->status.clear();
    impl->headers.clear();
    impl->in_body = false;
    impl->body.emplace(impl->forms);
    return 0;
  };
  impl.settings.on_status = [](llhttp_t* p, const char* at, size_t n) {
    Impl::Of(p)->status.append(at, n);
    return 0;
  };
  impl.settings.on_header_field = [](llhttp_t* p, const char* at, size_t n) {
    Impl* impl = Impl::Of(p);
    if (!impl->in_body) impl->field.append(at, n);
    return 0;
  };
  impl.settings.on_header_value = [](llhttp_t* p, const char* at, size_t n) {
    Impl* impl = Impl::Of(p);
    if (!impl->in_body) impl->value.append(at, n);
    return 0;
  };
  impl.settings.on_header_value_complete = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    if (impl->in_body) return 0;  // a trailer: dropped with the framing it came in
    while (impl->value.ends_with(' ') || impl->value.ends_with('\t')) impl->value.pop_back();
    impl->headers.emplace_back(std::move(impl->field), std::move(impl->value));
    impl->field.clear();
    impl->value.clear();
    return 0;
  };
  impl.settings.on_headers_complete = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    impl->in_body = true;
    impl->chunked = (p->flags & F_CHUNKED) != 0;
    if (!impl->Head()) return -1;
    // 1: no body follows (a HEAD's answer); llhttp knows 1xx, 204 and 304 itself.
    return impl->head_request && llhttp_get_status_code(p) >= 200 ? 1 : 0;
  };
  impl.settings.on_body = [](llhttp_t* p, const char* at, size_t n) {
    Impl* impl = Impl::Of(p);
    impl->Emit(impl->body->Feed(std::string_view(at, n)));
    return 0;
  };
  impl.settings.on_message_complete = [](llhttp_t* p) {
    Impl* impl = Impl::Of(p);
    impl->Emit(impl->body->Finish());
    if (impl->chunked) impl->out->append("0\r\n\r\n");
    impl->chunked = false;
    return 0;
  };
  llhttp_init(&impl.parser, HTTP_RESPONSE, &impl.settings);
  impl.parser.data = &impl;
}

ResponseFilter::~ResponseFilter() = default;

bool ResponseFilter::Feed(std::string_view data, std::string* out) {
  if (!error_.empty()) return false;
  impl_->out = out;
  const llhttp_errno_t err = llhttp_execute(&impl_->parser, data.data(), data.size());
  impl_->out = nullptr;
  if (err == HPE_OK) return true;
  if (error_.empty()) {
    const char* reason = llhttp_get_error_reason(&impl_->parser);
    error_ =
        "malformed response: " + AsciiLower(reason != nullptr ? reason : llhttp_errno_name(err));
  }
  return false;
}

bool ResponseFilter::Finish(std::string* out) {
  if (!error_.empty()) return false;
  impl_->out = out;
  const llhttp_errno_t err = llhttp_finish(&impl_->parser);
  impl_->out = nullptr;
  if (err == HPE_OK) return true;
  const char* reason = llhttp_get_error_reason(&impl_->parser);
  error_ = "the response ended early: " +
           AsciiLower(reason != nullptr ? reason : llhttp_errno_name(err));
  return false;
}

}  // namespace ae::net
