#include "base/sanitizer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define AE_HAS_LSAN 1
#endif
#endif
#if !defined(AE_HAS_LSAN) && defined(__SANITIZE_ADDRESS__)  // GCC
#define AE_HAS_LSAN 1
#endif

#ifdef AE_HAS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace ae {

void CheckLeaksNow() {
#ifdef AE_HAS_LSAN
  __lsan_do_leak_check();
#endif
}

}  // namespace ae
