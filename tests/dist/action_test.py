"""The GitHub Action (action.yml), run step by step by tests/dist/gha.py against the real
binary: installed from a release tarball (file:// base), run with the scripted provider or
over loopback HTTP, with GITHUB_OUTPUT / GITHUB_STEP_SUMMARY in temp files."""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gha  # noqa: E402
from gha import _read  # noqa: E402
import support  # noqa: E402


# Every event GitHub documents ("Events that trigger workflows", docs.github.com), and names
# it does not (invented ones, as GitHub may add, and an empty one): the permission check must
# run on all of them but UNCHECKED, the events only people with write access can cause.
DOCUMENTED_EVENTS = (
    "branch_protection_rule", "check_run", "check_suite", "create", "delete", "deployment",
    "deployment_status", "discussion", "discussion_comment", "fork", "gollum", "image_version",
    "issue_comment", "issues", "label", "merge_group", "milestone", "page_build", "project",
    "project_card", "project_column", "public", "pull_request", "pull_request_review",
    "pull_request_review_comment", "pull_request_target", "push", "registry_package", "release",
    "repository_dispatch", "schedule", "status", "watch", "workflow_call", "workflow_dispatch",
    "workflow_run")
FUTURE_EVENTS = ("brand_new_event", "dynamic", "")
UNCHECKED = {"push", "workflow_dispatch", "schedule", "repository_dispatch", "create", "delete",
             "release"}


class PermissionCheckTest(support.ReleaseCase):
    """The Action's first step on every event but those only people with write access can
    cause: the actor's permission read from a fake API (loopback), fail closed."""

    STEP = "Check the triggering actor's permission"

    def setUp(self):
        super().setUp()
        self.server = support.permission_api(self, {
            "alice": "write", "olga": "admin", "mallory": "read", "nobody": "none",
            "garbled": "broken"})

    def run_as(self, actor, event="issue_comment", payload=None, **inputs):
        env = support.base_env(self.tmp, os.path.join(self.tmp, "home"))
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        runner = gha.Runner(self.repo, env=env, tmp=self.tmp, github={
            "event_name": event, "actor": actor, "token": "ghs_job", "event": payload or {},
            "api_url": f"http://127.0.0.1:{self.server.server_port}"})
        # No prompt: an allowed run goes on and stops at once with exit 2 (usage).
        inputs.setdefault("version", support.version())
        self.result = runner.run_action(gha.REPO_ROOT, inputs)
        steps = {s[0]: s for s in self.result.steps}
        self.run_step = steps["Run agentexec"]
        return steps[self.STEP], steps["Install agentexec"]

    def test_read_permission_is_refused_and_nothing_runs(self):
        check, install = self.run_as("mallory")
        self.assertEqual(check[1], "failure")
        self.assertIn("::error::agentexec: mallory has read permission on octo/repo; the "
                      "issue_comment event runs agentexec only for actors with write or admin "
                      "permission (or bots in allowed-bots); not running", check[3])
        self.assertEqual(install[1], "skipped")
        self.assertEqual(support.PermissionApi.requests,
                         [("/repos/octo/repo/collaborators/mallory/permission", "Bearer ghs_job")])

    def test_write_and_admin_are_allowed(self):
        for actor, permission, event in (("alice", "write", "pull_request_target"),
                                         ("olga", "admin", "pull_request_target"),
                                         ("alice", "write", "pull_request"),
                                         ("olga", "admin", "brand_new_event")):
            check, install = self.run_as(actor, event=event)
            self.assertEqual(check[1], "success", check[3])
            self.assertIn(f"agentexec: {actor} has {permission} permission on octo/repo", check[3])
            self.assertEqual(install[1], "success", install[3])

    def test_unknown_user_api_error_and_garbage_are_refused(self):
        for actor, why in (("nobody", "nobody has none permission"),
                           ("stranger", "could not read stranger's permission on octo/repo (curl 0, HTTP 404)"),
                           ("garbled", "the permission API answered something that is not JSON")):
            check, install = self.run_as(actor, event="issues")
            self.assertEqual(check[1], "failure", actor)
            self.assertIn(why, check[3])
            self.assertEqual(install[1], "skipped")

    def test_bots_only_when_listed(self):
        check, install = self.run_as("renovate[bot]")
        self.assertEqual(check[1], "failure")
        self.assertIn("the issue_comment event was triggered by the bot renovate[bot], which is "
                      "not in allowed-bots; not running", check[3])
        self.assertEqual(install[1], "skipped")
        check, install = self.run_as("renovate[bot]", **{"allowed-bots": "dependabot, renovate"})
        self.assertEqual(check[1], "success", check[3])
        self.assertEqual(install[1], "success")
        self.assertEqual(support.PermissionApi.requests, [])  # bots are decided by the list alone

    def test_every_event_is_checked_but_those_only_writers_can_cause(self):
        # The step's `if:` evaluated for each event name: fail closed, so an event GitHub adds
        # later (or one this list forgot) is checked, not waved through.
        action = gha.yaml.safe_load(_read(os.path.join(gha.REPO_ROOT, "action.yml")))
        step = [s for s in action["runs"]["steps"] if s.get("name") == self.STEP][0]
        self.assertEqual(action["runs"]["steps"][0], step)  # before anything is installed
        ran = {}
        for event in DOCUMENTED_EVENTS + FUTURE_EVENTS:
            ctx = {"github": {"event_name": event, "actor": "mallory", "repository": "octo/repo",
                              "event": {}},
                   "inputs": {}, "env": {}, "steps": {}}
            ran[event] = gha.condition(step.get("if"), ctx, "success")
        self.assertTrue(all(isinstance(v, bool) for v in ran.values()), ran)
        self.assertEqual(sorted(e for e, checked in ran.items() if not checked), sorted(UNCHECKED))
        self.assertLessEqual(UNCHECKED, set(DOCUMENTED_EVENTS))

    def test_unlisted_events_refuse_a_reader_before_anything_runs(self):
        # A fork's pull request, a workflow_run a fork's workflow started, the merge queue and
        # an event GitHub adds later: mallory (read) is refused, nothing is installed or run.
        fork_pr = {"pull_request": {"number": 7, "head": {"repo": {"full_name": "evil/repo"}}}}
        for event, payload in (("pull_request", fork_pr), ("workflow_run", {}),
                               ("merge_group", {}), ("brand_new_event", {})):
            support.PermissionApi.requests = []
            check, install = self.run_as("mallory", event=event, payload=payload)
            self.assertEqual(check[1:3], ("failure", 1), event)
            self.assertIn("::error::agentexec: mallory has read permission on octo/repo; the "
                          f"{event} event runs agentexec only for actors with write or admin "
                          "permission (or bots in allowed-bots); not running\n", check[3])
            self.assertEqual((install[1], self.run_step[1]), ("skipped", "skipped"), event)
            self.assertFalse(self.result.success)
            self.assertEqual(support.PermissionApi.requests,
                             [("/repos/octo/repo/collaborators/mallory/permission", "Bearer ghs_job")])

    def test_an_event_without_actor_is_refused(self):
        check, install = self.run_as("", event="brand_new_event")
        self.assertEqual(check[1:], ("failure", 1, "::error::agentexec: the brand_new_event "
                                     "event names no actor to check; not running\n"))
        self.assertEqual(install[1], "skipped")
        self.assertEqual(support.PermissionApi.requests, [])

    def test_write_access_events_need_no_check(self):
        # push, workflow_dispatch, schedule, repository_dispatch, create, delete, release:
        # even with a reader named as actor the step is skipped and the API never asked.
        for event in sorted(UNCHECKED):
            check, install = self.run_as("mallory", event=event)
            self.assertEqual(check, (self.STEP, "skipped", None, ""), event)
            self.assertEqual(install[1], "success", install[3])
            self.assertEqual(self.run_step[1:3], ("failure", 2), event)  # no prompt: usage
        self.assertEqual(support.PermissionApi.requests, [])


class ActionTest(support.ReleaseCase):

    def run_action(self, turns_file, **inputs):
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns_file)
        env = support.base_env(self.tmp, home)
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        runner = gha.Runner(self.repo, env=env, tmp=self.tmp)
        inputs.setdefault("version", support.version())
        result = runner.run_action(gha.REPO_ROOT, inputs)
        summary = _read(runner.summary_file)
        return result, summary, runner

    def test_demo_fix_sets_outputs_summary_and_artifact(self):
        result, summary, runner = self.run_action(support.DEMO_TURNS,
                                                  prompt="make the failing test pass")
        logs = "\n".join(s[3] for s in result.steps)
        self.assertTrue(result.success, logs)
        out = result.outputs
        self.assertEqual(out["exit-code"], "0")
        events = _read(out["events-file"]).splitlines()
        for line in events:
            json.loads(line)
        thread = json.loads(events[0])["thread_id"]
        self.assertEqual(out["thread-id"], thread)
        self.assertRegex(thread, r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")
        # The job log has the human progress (stderr, as it happens), not the JSONL.
        run_log = [s for s in result.steps if s[0] == "Run agentexec"][0][3]
        self.assertIn(f"session id: {thread}\n", run_log)
        self.assertIn("exec\n/bin/bash -lc 'python3 -m unittest -v 2>&1'\n exited 1 in ", run_log)
        self.assertNotIn('{"type":', run_log)
        finals = [json.loads(l)["item"]["text"] for l in events
                  if '"agent_message"' in l and json.loads(l)["type"] == "item.completed"]
        self.assertEqual(out["final-message"], finals[-1])
        self.assertEqual(_read(os.path.join(os.path.dirname(out["events-file"]),
                                           "final-message.md")), finals[-1])
        # The installed binary is the release's, on the tool cache path.
        self.assertIn(os.path.join(runner.runner["tool_cache"], "agentexec"), logs + " ".join(
            runner.path_prepend))
        # The summary: status, every command with its exit code, the file, tokens, message.
        self.assertTrue(summary.startswith("### agentexec: completed\n"), summary)
        cmds = [json.loads(l)["item"] for l in events if '"command_execution"' in l
                and json.loads(l)["type"] == "item.completed"]
        self.assertGreaterEqual(len(cmds), 2)
        self.assertIn(f"#### Commands ({len(cmds)})", summary)
        for c in cmds:
            self.assertIn(f"| {c['exit_code']} | <code>", summary)
        # The first test run fails; its output says why if it failed otherwise.
        self.assertEqual([c["exit_code"] for c in cmds], [0, 1, 0],
                         "\n".join(json.dumps(c) for c in cmds))
        self.assertIn("| 1 | <code>", summary)
        self.assertIn(f"- <code>{os.path.realpath(self.repo)}/calc.py</code> (update)", summary)
        self.assertRegex(summary, r"#### Tokens\ninput \d+ \(cached \d+\), output \d+")
        self.assertTrue(summary.rstrip("\n").endswith(finals[-1]), summary)
        # The fix happened in the workspace.
        self.assertIn("len(values)", _read(os.path.join(self.repo, "calc.py")))
        # The artifact step uploaded the run's directory.
        uploads = [w for u, w in result.uses if u.startswith("actions/upload-artifact@")]
        self.assertEqual(uploads, [{"name": "agentexec-events",
                                    "path": os.path.dirname(out["events-file"]),
                                    "if-no-files-found": "warn"}])

    def test_failed_run_fails_the_step_and_still_reports(self):
        turns = support.write_turns(os.path.join(self.tmp, "fail.json"),
                                    [{"fail": "simulated failure"}])
        result, summary, _ = self.run_action(turns, prompt="anything")
        self.assertFalse(result.success)
        run = [s for s in result.steps if s[0] == "Run agentexec"][0]
        self.assertEqual(run[1:3], ("failure", 1))
        self.assertEqual(result.outputs["exit-code"], "1")
        self.assertEqual(result.outputs["final-message"], "")
        self.assertTrue(summary.startswith("### agentexec: failed\n"), summary)
        self.assertIn("**Error:** ", summary)
        self.assertIn("simulated failure", summary)
        self.assertIn("_agentexec exited with code 1_", summary)
        # upload-artifact has if: always(): the events are kept for a failed run.
        self.assertTrue(any(u.startswith("actions/upload-artifact@") for u, _ in result.uses))

    def test_limit_exit_code_4_propagates(self):
        turns = support.write_turns(os.path.join(self.tmp, "loop.json"), [
            {"items": [{"type": "function_call", "name": "update_plan",
                        "arguments": {"plan": [{"step": "x", "status": "pending"}]}}]}] * 3)
        result, summary, _ = self.run_action(turns, prompt="loop", **{"max-turns": "1"})
        self.assertFalse(result.success)
        self.assertEqual(result.outputs["exit-code"], "4")
        self.assertIn("_agentexec exited with code 4_", summary)

    def test_prompt_file_inline_schema_and_quoted_args(self):
        turns = support.write_turns(os.path.join(self.tmp, "json.json"), [
            {"items": [{"type": "message", "text": "{\"ok\": true}"}]}])
        prompt = os.path.join(self.tmp, "prompt.txt")
        with open(prompt, "w") as f:
            f.write("answer in JSON\n")
        out_file = os.path.join(self.tmp, "dir with space", "last.txt")
        result, _, _ = self.run_action(
            turns, **{"prompt-file": prompt, "sandbox": "read-only",
                      "output-schema": '{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}',
                      "args": f"--ephemeral -c 'model_verbosity=\"low\"' -o '{out_file}'"})
        self.assertTrue(result.success, "\n".join(s[3] for s in result.steps))
        self.assertEqual(result.outputs["final-message"], '{"ok": true}')
        self.assertEqual(_read(out_file), '{"ok": true}')

    def test_confined_command_cannot_make_the_step_write_through_links(self):
        # The step's directory, old (under RUNNER_TEMP, here inside /tmp) and new (the
        # private one under ~/.cache, since RUNNER_TEMP is reachable here).
        victims, hook = support.attack_setup(self, self.repo)
        turns = support.attack_turns(os.path.join(self.tmp, "attack.json"),
                                     ['"$RUNNER_TEMP"/agentexec-*', '"$HOME"/.cache/agentexec-*'],
                                     victims)
        result, summary, _ = self.run_action(turns, prompt="x", **{"api-key": "test-secret-key"})
        logs = "\n".join(s[3] for s in result.steps)
        support.assert_nothing_written_through(self, victims, hook)
        out_dir = os.path.dirname(result.outputs["events-file"])
        support.assert_no_links_no_environment(self, out_dir, "test-secret-key")
        self.assertTrue(result.success, logs)
        events = [json.loads(l) for l in _read(result.outputs["events-file"]).splitlines()]
        planted = [e["item"]["aggregated_output"] for e in events if e["type"] == "item.completed"
                   and e["item"]["type"] == "command_execution"][0]
        # The command found the step's directory and could not write into it.
        # (EROFS under the mount namespace, EACCES under Landlock alone.)
        self.assertRegex(planted, re.escape(f"ln: failed to create symbolic link '{out_dir}/"
                                            "exit-code': ") + "(Read-only file system|Permission denied)\n")
        self.assertNotIn(f"planted {out_dir}", planted)
        self.assertEqual(sorted(os.listdir(out_dir)), [
            "changes.patch", "events.jsonl", "exit-code", "final-message.md", "summary.md"])
        self.assertEqual(result.outputs["final-message"], "planted what I could")
        self.assertTrue(summary.startswith("### agentexec: completed\n"), summary)

    def test_usage_error_without_prompt_is_exit_2(self):
        result, _, _ = self.run_action(support.DEMO_TURNS)
        self.assertFalse(result.success)
        run = [s for s in result.steps if s[0] == "Run agentexec"][0]
        self.assertEqual(run[2], 2)
        self.assertIn("agentexec step: no prompt: set the prompt or prompt-file input", run[3])

    def test_checksum_mismatch_refuses_the_binary(self):
        for f in glob.glob(os.path.join(self.release, "*.sha256")):
            with open(f, "w") as out:
                out.write("0" * 64 + "  " + os.path.basename(f)[:-7] + "\n")
        result, _, _ = self.run_action(support.DEMO_TURNS, prompt="x")
        self.assertFalse(result.success)
        install = [s for s in result.steps if s[0] == "Install agentexec"][0]
        self.assertEqual(install[1], "failure")
        self.assertIn("checksum mismatch", install[3])
        run = [s for s in result.steps if s[0] == "Run agentexec"][0]
        self.assertEqual(run[1], "skipped")

    def serve(self, turns, name):
        """The loopback model server answering `turns`; returns its base URL and its request
        log directory. Stopped when the test ends."""
        port_file = os.path.join(self.tmp, f"{name}.port")
        log_dir = os.path.join(self.tmp, f"{name}.log")
        server = subprocess.Popen([sys.executable, os.path.join(support.REPO_ROOT,
                                   "tests/support/model_server.py"), "--script", turns,
                                   "--port-file", port_file, "--log-dir", log_dir,
                                   "--max-seconds", "120"])
        self.addCleanup(server.wait, 30)
        self.addCleanup(server.send_signal, signal.SIGTERM)
        for _ in range(600):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        return f"http://127.0.0.1:{int(_read(port_file))}/v1", log_dir

    def run_over_http(self, url, **inputs):
        home = os.path.join(self.tmp, "home-http")
        os.makedirs(home)
        env = support.base_env(self.tmp, home)
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        runner = gha.Runner(self.repo, env=env, tmp=self.tmp)
        result = runner.run_action(gha.REPO_ROOT, {"version": support.version(),
                                                   "base-url": url, **inputs})
        return result, _read(runner.summary_file)

    def test_api_key_and_base_url_reach_the_server_not_the_commands(self):
        turns = support.write_turns(os.path.join(self.tmp, "http.json"), [
            {"items": [{"type": "function_call", "name": "exec_command",
                        "arguments": {"cmd": "env | grep -c test-secret-key || true"}}]},
            {"items": [{"type": "message", "text": "done over HTTP"}]}])
        url, log_dir = self.serve(turns, "http")
        result, _ = self.run_over_http(url, prompt="over http", **{"api-key": "test-secret-key"})
        self.assertTrue(result.success, "\n".join(s[3] for s in result.steps))
        self.assertEqual(result.outputs["final-message"], "done over HTTP")
        first = json.loads(_read(os.path.join(log_dir, "request-001.json")))
        self.assertEqual(first["headers"]["authorization"], "Bearer test-secret-key")
        events = [json.loads(l) for l in _read(result.outputs["events-file"]).splitlines()]
        cmd = [e["item"] for e in events if e["type"] == "item.completed"
               and e["item"]["type"] == "command_execution"][0]
        self.assertEqual(cmd["aggregated_output"], "0\n")

    def test_unconfined_command_finds_the_key_in_no_process(self):
        # Under danger-full-access a command can read /proc/PID/environ (the environment a
        # process started with, which `unset` does not change) and /proc/PID/cmdline of every
        # process of its user: the step's shells among them.
        key = "test-leak" + "probe-93f1c2"
        turns = support.key_scan_turns(os.path.join(self.tmp, "scan.json"), "test-leak",
                                       "probe-93f1c2")
        url, log_dir = self.serve(turns, "scan")
        result, summary = self.run_over_http(url, prompt="scan", sandbox="danger-full-access",
                                             **{"api-key": key})
        logs = "\n".join(s[3] for s in result.steps)
        self.assertTrue(result.success, logs)
        first = json.loads(_read(os.path.join(log_dir, "request-001.json")))
        self.assertEqual(first["headers"]["authorization"], f"Bearer {key}")
        events = _read(result.outputs["events-file"])
        cmd = [json.loads(l)["item"] for l in events.splitlines()
               if json.loads(l)["type"] == "item.completed"
               and json.loads(l)["item"]["type"] == "command_execution"][0]
        self.assertEqual(cmd["aggregated_output"],
                         "parent environ readable: yes\nkey found in: none\n")
        self.assertEqual(result.outputs["final-message"], "scanned")
        self.assertNotIn(key, events)
        self.assertNotIn(key, summary)
        self.assertNotIn(key, logs)
        support.assert_no_links_no_environment(
            self, os.path.dirname(result.outputs["events-file"]), key)


if __name__ == "__main__":
    unittest.main(verbosity=2)
