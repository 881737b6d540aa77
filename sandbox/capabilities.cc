#include "sandbox/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>

namespace ae::sandbox {

uint64_t KeptCapabilities() {
  uint64_t keep = 0;
  for (int cap : {CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID,
                  CAP_SETUID, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_CHROOT,
                  CAP_MKNOD, CAP_AUDIT_WRITE}) {
    keep |= uint64_t{1} << cap;
  }
  return keep;
}

bool DropCapabilities(const char** failed_step, int* err) noexcept {
  const uint64_t keep = KeptCapabilities();
  for (int cap = 0; cap < 64; ++cap) {
    if (keep & (uint64_t{1} << cap)) continue;
    int in_bounding = ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (in_bounding < 0) break;  // EINVAL: past the last capability this kernel knows
    if (in_bounding == 0) continue;
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EPERM && ::geteuid() != 0) break;  // see the header
      *failed_step = "drop capabilities (bounding set)";
      *err = errno;
      return false;
    }
  }
  // Old kernels lack ambient capabilities (EINVAL); then there are none to clear.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    *failed_step = "drop capabilities (ambient set)";
    *err = errno;
    return false;
  }
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    *failed_step = "capget";
    *err = errno;
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    const uint32_t mask = static_cast<uint32_t>(keep >> (32 * i));
    data[i].effective &= mask;
    data[i].permitted &= mask;
    data[i].inheritable &= mask;
  }
  if (::syscall(SYS_capset, &header, data) != 0) {
    *failed_step = "drop capabilities (capset)";
    *err = errno;
    return false;
  }
  return true;
}

}  // namespace ae::sandbox
