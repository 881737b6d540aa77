// `agentexec batch run|report|plan ...`: the batch command line, parsed and dispatched.
//
//   agentexec batch run MANIFEST --out DIR [-j N] [--shard I/N] [--resume] [EXEC OPTIONS]
//   agentexec batch report DIR... [--format markdown|junit|json] [--manifest MANIFEST]
//   agentexec batch plan MANIFEST --shards N
//
// Read by CLI11 through option tables, as exec is: `batch run` passes the exec options that
// configure a task (exec's own table marks them: -m, -s, -c, -p, --max-turns,
// --timeout, ...) to every task's `agentexec exec`; those that would change what batch relies
// on (--json is implied; -o, -C, review and resume options) are refused.
#pragma once

#include <string>
#include <vector>

namespace ae {

// argv[0] is "batch". Returns the process exit code.
int RunBatchCommand(int argc, const char* const* argv);

std::string BatchHelpText();

}  // namespace ae
