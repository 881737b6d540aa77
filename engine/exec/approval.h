// The approval policy and its names: the one table by which the command line, the config files
// and the events read and write a policy.
#pragma once

#include <array>

#include "base/name_table.h"

namespace ae {

// Declared from the tightest to the loosest: a project config may not move the policy down
// this list (config/config_keys.cc compares by this order).
enum class ApprovalPolicy { kNever, kOnFailure };

inline constexpr std::array<NameEntry<ApprovalPolicy>, 2> kApprovalPolicyNames = {{
    {ApprovalPolicy::kNever, "never"},
    {ApprovalPolicy::kOnFailure, "on-failure"},
}};

inline const char* ApprovalPolicyName(ApprovalPolicy p) {
  return NameOf(kApprovalPolicyNames, p);
}

}  // namespace ae
