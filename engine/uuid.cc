#include "engine/uuid.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <chrono>
#include <cstdint>
#include <random>

namespace ae {

std::string NewUuidV7() {
  uint8_t b[16];
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    std::random_device rd;  // getrandom cannot fail for 16 bytes after boot; belt and braces
    for (uint8_t& x : b) x = static_cast<uint8_t>(rd());
  }
  uint64_t ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  b[6] = static_cast<uint8_t>(0x70 | (b[6] & 0x0F));  // version 7
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3F));  // variant 10
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:"
      "02x}"
      "{:02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
      b[15]);
}

}  // namespace ae
