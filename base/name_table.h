// Enum <-> name tables: one array of {value, name} per enum, read both ways, and its names
// joined for help and error texts. Text from the command line or a config file becomes an
// enum through its table, so each enum's names are written once.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ae {

template <class E>
struct NameEntry {
  E value;
  const char* name;
};

// The name of `value`; the first row's for a value the table lacks.
template <class E, size_t N>
constexpr const char* NameOf(const std::array<NameEntry<E>, N>& table, E value) {
  for (const NameEntry<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return table[0].name;
}

// The value called `name`, exactly; nullopt for any other text.
template <class E, size_t N>
constexpr std::optional<E> FromName(const std::array<NameEntry<E>, N>& table,
                                    std::string_view name) {
  for (const NameEntry<E>& e : table) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

// The names in table order joined by `separator`, the last one by `last` when it is given:
// JoinNames(t, ", ", " or ") is "a, b or c".
template <class E, size_t N>
std::string JoinNames(const std::array<NameEntry<E>, N>& table, std::string_view separator,
                      std::string_view last = {}) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += (i + 1 == N && !last.empty()) ? last : separator;
    out += table[i].name;
  }
  return out;
}

namespace name_table_detail {
template <const auto& Table>
constexpr size_t CommaNamesSize() {
  size_t n = 0;
  for (const auto& e : Table) n += std::char_traits<char>::length(e.name) + 1;
  return n;  // the names, a comma after each but the last, and a NUL
}
template <const auto& Table>
inline constexpr auto kCommaNamesStorage = [] {
  std::array<char, CommaNamesSize<Table>()> out{};
  size_t n = 0;
  for (const auto& e : Table) {
    if (n > 0) out[n++] = ',';
    for (const char* p = e.name; *p != '\0'; ++p) out[n++] = *p;
  }
  return out;
}();
}  // namespace name_table_detail

// "a,b,c" at compile time, for tables that hold a name list as a string_view (the config
// keys' choices).
template <const auto& Table>
inline constexpr std::string_view kCommaNames{name_table_detail::kCommaNamesStorage<Table>.data(),
                                              name_table_detail::CommaNamesSize<Table>() - 1};

}  // namespace ae
