// Preflight: before the turn, find out what this kernel can enforce for the policy.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "sandbox/policy.h"

namespace ae::sandbox {

struct PreflightReport {
  std::string description;            // e.g. "landlock abi 7 + seccomp + mount namespace"
  std::vector<std::string> warnings;  // e.g. carve-outs not enforceable in this run
};

// An error means the mode cannot be enforced here; its message says why and what to do.
Result<PreflightReport> Preflight(const Policy& policy);

}  // namespace ae::sandbox
