"""The end of each network test script: run its unittest cases inside namespaces of its own."""

import sys
import unittest

from netns import reexec_inside


def run_inside(tools):
    """Re-runs the calling script inside a user and network namespace (skipping, 77, when one of
    `tools` is missing or the host refuses the namespace); once inside, runs __main__'s test
    cases verbosely. Returns the exit code."""
    code = reexec_inside(tools)
    if code is not None:
        return code
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1
