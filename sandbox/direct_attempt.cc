#include "sandbox/direct_attempt.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ae::sandbox {
namespace {

// IPv4's loopback and unspecified addresses, which a connect sends to the namespace's own lo.
bool IsLocalV4(const uint8_t* a) {
  return a[0] == 127 || (a[0] == 0 && a[1] == 0 && a[2] == 0 && a[3] == 0);
}

bool IsLocal(const DirectAttempt& d) {
  if (d.family == AF_INET) return IsLocalV4(d.address);
  static const uint8_t kZero[15] = {};
  if (std::memcmp(d.address, kZero, 15) == 0) return d.address[15] <= 1;  // :: and ::1
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(d.address, kMapped, 12) == 0 && IsLocalV4(d.address + 12);
}

// Only /proc/PID/net/{tcp,udp}[6] of a command's process: base/read_file.h refuses the proc
// file system on purpose (a file agentexec reads for itself must never be its own /proc), so
// this reads that one kind of table and nothing a command names.
bool ReadFile(const char* path, std::string* out) {
  out->clear();
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

}  // namespace

bool DirectAttempt::operator==(const DirectAttempt& other) const {
  return call == other.call && family == other.family && port == other.port &&
         std::memcmp(address, other.address, sizeof address) == 0;
}

bool ReadDestination(pid_t pid, seccomp::NetworkCall call, const uint64_t args[6],
                     DirectAttempt* out) {
  *out = DirectAttempt{};
  out->call = call;
  if (call == seccomp::NetworkCall::kRawSocket) {
    out->family = static_cast<int>(args[0]);
    return true;
  }
  // connect(fd, addr, len); sendto(fd, buf, n, flags, addr, len).
  const bool is_connect = call == seccomp::NetworkCall::kConnect;
  const uint64_t addr = args[is_connect ? 1 : 4];
  const uint64_t len = args[is_connect ? 2 : 5] & 0xffffffffu;
  sockaddr_storage sa = {};
  if (addr == 0 || len < sizeof(sa_family_t)) return false;
  const size_t want = len < sizeof sa ? static_cast<size_t>(len) : sizeof sa;
  iovec local = {&sa, want};
  // An address in the caller's memory, for process_vm_readv: never dereferenced here.
  iovec remote = {reinterpret_cast<void*>(addr), want};  // NOLINT(performance-no-int-to-ptr)
  if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(want)) return false;
  if (sa.ss_family == AF_INET && want >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    out->family = AF_INET;
    std::memcpy(out->address, &in->sin_addr, 4);
    out->port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6 && want >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    out->family = AF_INET6;
    std::memcpy(out->address, &in6->sin6_addr, 16);
    out->port = ntohs(in6->sin6_port);
  } else {
    return false;
  }
  out->loopback = IsLocal(*out);
  return true;
}

bool TableHasPort(const std::string& table, uint16_t port, const char* state) {
  // "  sl  local_address rem_address   st ...": local_address is ADDR:PORT in hex.
  std::string_view rest = table;
  const size_t first_eol = rest.find('\n');
  if (first_eol == std::string_view::npos) return false;
  rest.remove_prefix(first_eol + 1);
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    std::string_view fields[4];
    for (std::string_view& field : fields) {
      const size_t start = line.find_first_not_of(' ');
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      const size_t end = line.find(' ');
      field = line.substr(0, end);
      line.remove_prefix(end == std::string_view::npos ? line.size() : end);
    }
    const size_t colon = fields[1].rfind(':');
    if (colon == std::string_view::npos || fields[3] != state) continue;
    const std::string hex(fields[1].substr(colon + 1));
    char* end = nullptr;
    const unsigned long local_port = std::strtoul(hex.c_str(), &end, 16);
    if (end != hex.c_str() && *end == '\0' && local_port == port) return true;
  }
  return false;
}

bool ServedInside(pid_t pid, const DirectAttempt& attempt, uint16_t proxy_port,
                  std::string* scratch) {
  if (attempt.port == proxy_port) return true;
  // A connect may be TCP or UDP (the filter does not see the socket's type): either table.
  struct Table {
    const char* name;
    const char* state;
    bool for_connect_only;
  };
  static constexpr Table kTables[] = {
      {"udp", "07", false}, {"udp6", "07", false}, {"tcp", "0A", true}, {"tcp6", "0A", true}};
  for (const Table& t : kTables) {
    if (t.for_connect_only && attempt.call != seccomp::NetworkCall::kConnect) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/net/%s", static_cast<int>(pid), t.name);
    if (ReadFile(path, scratch) && TableHasPort(*scratch, attempt.port, t.state)) return true;
  }
  return false;
}

}  // namespace ae::sandbox
