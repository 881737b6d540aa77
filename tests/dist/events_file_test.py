"""`--events-file FILE`, run on the real binary with the scripted provider: the file holds
exactly the lines --json prints, in either output mode; what is at FILE before the run is
never written through; a write failure ends the run with exit 5 like a stdout failure."""
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402


def _read(path):
    with open(path) as f:
        return f.read()


class EventsFileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = support.scratch(self)
        self.repo = support.demo_repo(os.path.join(self.tmp, "repo"))
        home = support.scripted_home(os.path.join(self.tmp, "home"), support.DEMO_TURNS)
        self.env = support.base_env(self.tmp, home)
        self.events = os.path.join(self.tmp, "events.jsonl")

    def run_agentexec(self, *args, pre=""):
        cmd = [support.agentexec_bin(), "--ephemeral", "--color", "never", *args,
               "make the failing test pass"]
        if pre:  # a shell prefix (ulimit, trap) before the exec
            cmd = ["bash", "-c", pre + ' exec "$@"', "bash", *cmd]
        return subprocess.run(cmd, cwd=self.repo, env=self.env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)

    def reset_repo(self):
        support.git(self.repo, "checkout", "--", ".")

    def test_file_equals_json_stdout_byte_for_byte(self):
        p = self.run_agentexec("--json", "--events-file", self.events)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreater(len(p.stdout.splitlines()), 5)
        self.assertEqual(_read(self.events), p.stdout)

    def test_human_mode_keeps_its_outputs_and_the_file_gets_the_same_stream(self):
        golden = self.run_agentexec("--json")
        self.assertEqual(golden.returncode, 0, golden.stderr)
        self.reset_repo()
        p = self.run_agentexec("--events-file", self.events)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = _read(self.events).splitlines()
        final = [json.loads(l)["item"]["text"] for l in lines
                 if json.loads(l)["type"] == "item.completed"
                 and json.loads(l)["item"]["type"] == "agent_message"][-1]
        # stdout: the final message only (human mode); stderr: the human progress, no JSON.
        self.assertEqual(p.stdout, final + "\n")
        self.assertNotIn('{"type":', p.stderr)
        self.assertIn("make the failing test pass", p.stderr)

        # The same stream as --json's, but for what differs between any two runs (the id,
        # durations, and unittest's own timing in a command's output).
        def normal(text):
            text = re.sub(r'"thread_id":"[^"]+"', '"thread_id":"T"', text)
            text = re.sub(r" in \d+\.\d+s\\n", " in 0s\\n", text)
            return re.sub(r'"duration_ms":\d+', '"duration_ms":0', text)
        self.assertEqual(normal(_read(self.events)), normal(golden.stdout))

    def test_symlink_at_file_is_refused_and_not_followed(self):
        target = os.path.join(self.tmp, "target")
        with open(target, "w") as f:
            f.write("keep\n")
        os.symlink(target, self.events)
        p = self.run_agentexec("--json", "--events-file", self.events)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stderr, f"error: cannot write --events-file '{self.events}': it is a "
                         "symbolic link (not followed)\n")
        self.assertEqual(p.stdout, "")
        self.assertEqual(_read(target), "keep\n")
        # Nothing ran: the failing test is still failing.
        self.assertEqual(support.git(self.repo, "status", "--porcelain"), "")

    def test_fifo_is_refused_without_blocking(self):
        os.mkfifo(self.events)
        p = self.run_agentexec("--events-file", self.events)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stderr, f"error: cannot write --events-file '{self.events}': not a "
                         "regular file\n")

    def test_directory_is_refused(self):
        os.mkdir(self.events)
        p = self.run_agentexec("--events-file", self.events)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(p.stderr, f"error: cannot write --events-file '{self.events}': Is a "
                         "directory\n")

    def test_write_failure_ends_the_run_with_exit_5(self):
        # A file size limit of 1 KiB (SIGXFSZ ignored: write(2) fails with EFBIG instead).
        p = self.run_agentexec("--events-file", self.events, pre="trap '' XFSZ; ulimit -f 1;")
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn(f"error: cannot write events to --events-file '{self.events}': File too "
                      "large\n", p.stderr)
        # Up to the limit (the last line may be cut, as on a full disk), then nothing more.
        self.assertEqual(os.path.getsize(self.events), 1024)
        for line in _read(self.events).split("\n")[:-1]:
            json.loads(line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
