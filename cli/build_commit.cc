#include "cli/build_commit.h"

#ifndef AGENTEXEC_COMMIT
#define AGENTEXEC_COMMIT "unknown"
#endif

namespace ae {

const char* BuildCommit() {
  return AGENTEXEC_COMMIT;
}

}  // namespace ae
