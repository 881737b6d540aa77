#include "sandbox/prepared.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "base/fd.h"
#include "sandbox/preflight.h"
#include "sandbox/prepared_sandbox.h"
#include "sandbox/seccomp.h"

namespace ae::sandbox {

void PreparedDeleter::operator()(PreparedSandbox* p) const {
  delete p;
}

Result<PreparedPtr> Prepare(const Policy& policy, const PrepareOptions& options) {
  PreparedPtr prepared(new PreparedSandbox);
  if (policy.unrestricted()) return prepared;
  prepared->enforce = true;
  if (policy.writable_roots.size() > kMaxWritableRoots) {
    return MakeError(fmt::format("sandbox: {} writable roots given; at most {} are supported",
                                 policy.writable_roots.size(), kMaxWritableRoots));
  }
  prepared->landlock_abi = landlock::Abi();
  if (prepared->landlock_abi < 1) {
    return MakeError(LandlockUnavailableMessage(policy.mode, errno));
  }
  prepared->mounts = BuildMountPlan(policy, options.mount_namespace,
                                    options.mount_namespace && options.pid_namespace);
  if (!prepared->mounts.hold_error.empty()) return MakeError(prepared->mounts.hold_error);
  // Test hook (docs/SANDBOX.md "Test hooks"); acts only in commands' set-up (ApplyMountPlan).
  if (const char* vanish = std::getenv("AGENTEXEC_SANDBOX_FAKE_VANISH")) {
    prepared->mounts.fake_vanish = vanish;
  }
  if (policy.proxy_port != 0) {
    // The allow-list is the network namespace: without one, nothing would hold it.
    if (!prepared->mounts.enabled) {
      return MakeError(
          "sandbox: cannot enforce the network allow-list (network.allow): no network namespace "
          "can be made here, as no mount namespace could; in Docker, run the container with "
          "--security-opt seccomp=unconfined --security-opt apparmor=unconfined (or "
          "--cap-add SYS_ADMIN), or allow the whole network with "
          "sandbox_workspace_write.network_access = true");
    }
    prepared->network.proxy_port = policy.proxy_port;
  }
  Result<HostSocketPlan> host_sockets = PlanHostSockets(policy, prepared->mounts.enabled);
  if (!host_sockets.ok()) return host_sockets.error();
  prepared->host_sockets = std::move(host_sockets.value());
  Result<landlock::RulesetPlan> ruleset =
      landlock::PlanRuleset(policy, prepared->landlock_abi, prepared->mounts.private_devpts);
  if (!ruleset.ok()) return ruleset.error();
  prepared->ruleset = std::move(ruleset.value());
  Result<std::vector<sock_filter>> filter = seccomp::BuildProgram(policy);
  if (!filter.ok()) return filter.error();
  prepared->filter = std::move(filter.value());
  prepared->program.len = static_cast<unsigned short>(prepared->filter.size());
  prepared->program.filter = prepared->filter.data();
  prepared->watch.policy = policy;
  prepared->watch.landlock_abi = prepared->landlock_abi;
  prepared->watch.mount_namespace = prepared->mounts.enabled;
  prepared->watch.carveouts = prepared->mounts.carveouts;
  prepared->watch.dev_shm = prepared->mounts.dev_shm;
  const bool proxied = policy.proxy_port != 0;
  const seccomp::WatchSet sets[2] = {{options.write_watch, proxied}, {false, proxied}};
  const sock_fprog** programs[2] = {&prepared->watch.program, &prepared->watch.network_program};
  for (int i = 0; i < 2; ++i) {
    if (!sets[i].writes && !sets[i].network) continue;
    Result<std::vector<sock_filter>> watch = seccomp::BuildWatchProgram(sets[i]);
    if (!watch.ok()) {
      prepared->watch.unavailable = watch.message();
      break;
    }
    prepared->watch_filter[i] = std::move(watch.value());
    prepared->watch_program[i].len = static_cast<unsigned short>(prepared->watch_filter[i].size());
    prepared->watch_program[i].filter = prepared->watch_filter[i].data();
    *programs[i] = &prepared->watch_program[i];
  }
  if (!options.write_watch) prepared->watch.unavailable = "the write watch is switched off";
  if (prepared->mounts.writable_roots.size() > kMaxWritableRoots) {
    return MakeError(fmt::format("sandbox: {} writable mounts needed; at most {} are supported",
                                 prepared->mounts.writable_roots.size(), kMaxWritableRoots));
  }
  return prepared;
}

Status UpdateCarveouts(PreparedSandbox& prepared, const Policy& policy) {
  if (!prepared.enforce) return {};
  // Only the mount plan and the watch's view of the policy hold carve-outs; the plan's other
  // findings are made again from the same policy and host.
  MountPlan mounts = BuildMountPlan(policy, prepared.mounts.enabled, prepared.mounts.new_pid_ns);
  if (!mounts.hold_error.empty()) return MakeError(mounts.hold_error);
  mounts.fake_vanish = std::move(prepared.mounts.fake_vanish);
  prepared.mounts = std::move(mounts);
  prepared.watch.policy = policy;
  prepared.watch.carveouts = prepared.mounts.carveouts;
  return {};
}

std::string CommandTmpdir(const PreparedSandbox& prepared) {
  if (!prepared.mounts.private_tmp.empty()) return prepared.mounts.tmp;
  return prepared.watch.policy.private_tmp;
}

std::string DescribePrepared(const PreparedSandbox& prepared) {
  if (!prepared.enforce) return "none";
  std::string text = fmt::format("landlock abi {} + seccomp", prepared.landlock_abi);
  if (prepared.mounts.enabled) text += " + mount namespace";
  if (prepared.mounts.new_pid_ns) text += " + pid namespace";
  return text;
}

const WatchPlan& PreparedWatch(const PreparedSandbox& prepared) {
  return prepared.watch;
}

}  // namespace ae::sandbox
