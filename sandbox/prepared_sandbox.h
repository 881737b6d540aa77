// The inside of a PreparedSandbox, for the two files that read it: prepared.cc builds it in the
// parent, checklist.cc applies it in the child. Everyone else holds it by PreparedPtr.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "sandbox/host_sockets.h"
#include "sandbox/landlock.h"
#include "sandbox/mounts.h"
#include "sandbox/network.h"
#include "sandbox/prepared.h"

namespace ae::sandbox {

struct PreparedSandbox {
  bool enforce = false;  // false under danger-full-access: nothing to apply
  int landlock_abi = 0;
  landlock::RulesetPlan ruleset;
  std::vector<sock_filter> filter;
  sock_fprog program = {};
  MountPlan mounts;
  HostSocketPlan host_sockets;  // with the network off: the host's Unix sockets, hidden
  NetworkPlan network;          // proxied: the command's own network namespace
  // The watch's programs (seccomp.h): [0] the write-intent calls (with the network's calls
  // too when proxied), [1] proxied: the network's calls alone.
  std::vector<sock_filter> watch_filter[2];
  sock_fprog watch_program[2] = {};
  WatchPlan watch;
};

}  // namespace ae::sandbox
