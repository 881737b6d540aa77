// Result<T>: an expected-style return for recoverable failures. Modules never throw across
// their borders; they return a value or an Error whose message is fit to show a user.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ae {

struct Error {
  std::string message;
  // Why, for callers that must tell failures apart without reading the message: the producer
  // sets a machine-readable name (the model client sets turn.failed's error.code names, see
  // engine/events/error_code.h); "" when nobody classified it.
  std::string code;
};

inline Error MakeError(std::string message) {
  return Error{std::move(message), {}};
}
inline Error MakeError(std::string message, std::string code) {
  return Error{std::move(message), std::move(code)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(v_); }
  const std::string& message() const { return error().message; }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }
  const std::string& message() const { return error_->message; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace ae
