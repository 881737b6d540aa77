"""The GitHub example workflows (ci-examples/github/*.yml), every step run by gha.py: the
agent step through this repository's action.yml, the others as written, with `gh` replaced
by a recorder and `origin` by a local bare repository."""
import os
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gha  # noqa: E402
import support  # noqa: E402
from gha import _read  # noqa: E402

EXAMPLES = os.path.join(support.REPO_ROOT, "ci-examples/github")

FAKE_GH = """#!/usr/bin/env bash
# Records a gh call: its arguments, one per line, then the body (--body or --body-file).
log="$FAKE_GH_LOG"
{ echo "--- gh"; printf '%s\\n' "$@"; } >>"$log"
prev=""
for a in "$@"; do
  [ "$prev" = --body-file ] && { echo "--- body"; cat "$a"; } >>"$log"
  prev="$a"
done
echo "https://github.com/octo/repo/pull/1"
"""


class ExamplesTest(support.ReleaseCase):
    def setUp(self):
        super().setUp()
        with open(os.path.join(self.release, "latest"), "w") as f:
            f.write(support.version() + "\n")
        self.remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", self.remote], check=True)
        support.git(self.repo, "remote", "add", "origin", self.remote)
        support.git(self.repo, "push", "-q", "origin", "main")
        bindir = os.path.join(self.tmp, "fakebin")
        os.makedirs(bindir)
        gh = os.path.join(bindir, "gh")
        with open(gh, "w") as f:
            f.write(FAKE_GH)
        os.chmod(gh, 0o755)
        self.gh_log = os.path.join(self.tmp, "gh.log")
        self.bindir = bindir

    def runner(self, turns, github=None):
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns)
        env = support.base_env(self.tmp, home)
        env["PATH"] = self.bindir + ":" + env["PATH"]
        env["FAKE_GH_LOG"] = self.gh_log
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        return gha.Runner(self.repo, env=env, secrets={"OPENAI_API_KEY": "sk-test"},
                          github=github, tmp=self.tmp)

    def log(self, r):
        return "\n".join(f"== {s[0]} ({s[1]}, {s[2]})\n{s[3]}" for s in r.steps)

    def test_fix_failing_test_opens_a_pull_request(self):
        wf = os.path.join(EXAMPLES, "fix-failing-test.yml")
        r = self.runner(support.DEMO_TURNS).run_job(
            wf, "fix", inputs={"task": "make the failing test pass"})
        self.assertTrue(r.success, self.log(r))
        self.assertEqual([s[1] for s in r.steps], ["success"] * 3, self.log(r))
        fixed = support.git(self.remote, "show", "agent/fix-1:calc.py")
        self.assertIn("len(values)", fixed)
        import json
        demo = json.loads(_read(support.DEMO_TURNS))["turns"][-1]["items"]
        final = [i["text"] for i in demo if i["type"] == "message"][-1]
        gh = _read(self.gh_log)
        self.assertTrue(gh.startswith("--- gh\npr\ncreate\n--head\nagent/fix-1\n--title\n"
                                      "agent: make the failing test pass\n--body\n" + final + "\n"), gh)
        self.assertIn("### agentexec: completed", r.summary)
        wfy = gha.yaml.safe_load(_read(wf))
        self.assertEqual(wfy["permissions"], {"contents": "write", "pull-requests": "write"})
        msg = support.git(self.remote, "log", "-1", "--format=%B", "agent/fix-1")
        self.assertEqual(msg, "agent: make the failing test pass\n\n" + final + "\n\n")

    def test_fix_failing_test_failed_run_opens_nothing_and_fails(self):
        turns = support.write_turns(os.path.join(self.tmp, "f.json"), [{"fail": "down"}])
        r = self.runner(turns).run_job(os.path.join(EXAMPLES, "fix-failing-test.yml"), "fix",
                                       inputs={"task": "x"})
        self.assertFalse(r.success)
        self.assertEqual([s[1] for s in r.steps], ["success", "failure", "skipped"])
        self.assertFalse(os.path.exists(self.gh_log))
        self.assertNotIn("agent/", support.git(self.remote, "branch", "--list"))

    def test_review_posts_the_answer_as_a_comment(self):
        turns = support.write_turns(os.path.join(self.tmp, "r.json"), [
            {"items": [{"type": "function_call", "name": "exec_command",
                        "arguments": {"cmd": "git log --oneline | head -1"}}]},
            {"items": [{"type": "message", "text": "1. calc.py: mean() divides by n-1."}]}])
        event = {"pull_request": {"number": 42, "head": {"repo": {"full_name": "octo/repo"}}}}
        # A pull_request event is checked: the Action asks for the actor's permission.
        api = support.permission_api(self, {"alice": "write"})
        r = self.runner(turns, github={
            "event_name": "pull_request", "event": event, "base_ref": "main", "actor": "alice",
            "token": "ghs_job", "api_url": f"http://127.0.0.1:{api.server_port}"}).run_job(
            os.path.join(EXAMPLES, "review-pr.yml"), "review")
        self.assertTrue(r.success, self.log(r))
        self.assertEqual(support.PermissionApi.requests,
                         [("/repos/octo/repo/collaborators/alice/permission", "Bearer ghs_job")])
        self.assertEqual(_read(self.gh_log),
                         "--- gh\npr\ncomment\n42\n--body-file\nreview.md\n--- body\n"
                         "1. calc.py: mean() divides by n-1.\n\n<sub>agentexec review, run 1</sub>\n")
        # The review ran read-only: the checkout is unchanged.
        self.assertEqual(support.git(self.repo, "status", "--porcelain", "--untracked-files=no"), "")

    def test_review_is_skipped_for_forks(self):
        event = {"pull_request": {"number": 1, "head": {"repo": {"full_name": "evil/repo"}}}}
        r = self.runner(support.DEMO_TURNS, github={"event": event}).run_job(
            os.path.join(EXAMPLES, "review-pr.yml"), "review")
        self.assertEqual(r.steps, [("(job)", "skipped", None, "")])

    def test_matrix_entries_each_run_in_their_directory(self):
        wf = os.path.join(EXAMPLES, "matrix.yml")
        entries = gha.yaml.safe_load(_read(wf))["jobs"]["agent"]["strategy"]["matrix"]["include"]
        self.assertEqual(len(entries), 3)
        for i, entry in enumerate(entries):
            d = os.path.join(self.repo, entry["dir"])
            os.makedirs(d, exist_ok=True)
            turns = support.write_turns(os.path.join(self.tmp, f"m{i}.json"), [
                {"items": [{"type": "custom_tool_call", "name": "apply_patch",
                            "input": "*** Begin Patch\n*** Add File: NOTE.md\n+done\n*** End Patch"}]},
                {"items": [{"type": "message", "text": f"done {entry['dir']}"}]}])
            r = self.runner(turns).run_job(wf, "agent", matrix=entry, job_index=i)
            self.assertTrue(r.success, self.log(r))
            self.assertEqual(_read(os.path.join(d, "NOTE.md")), "done\n")
            uploads = [w["name"] for u, w in r.uses if u.startswith("actions/upload-artifact")]
            self.assertEqual(uploads, [f"agent-{i}"])
            self.assertIn(f"{entry['dir']}: exit code 0, ", r.summary)


if __name__ == "__main__":
    unittest.main(verbosity=2)
