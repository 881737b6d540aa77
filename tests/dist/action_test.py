"""The GitHub Action (action.yml), run step by step by tests/dist/gha.py against the real
binary: installed from a release tarball (file:// base), run with the scripted provider or
over loopback HTTP, with GITHUB_OUTPUT / GITHUB_STEP_SUMMARY in temp files."""
import glob
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gha  # noqa: E402
from gha import _read  # noqa: E402
import support  # noqa: E402


class _PermissionApi(http.server.BaseHTTPRequestHandler):
    """GitHub's GET /repos/OWNER/REPO/collaborators/USER/permission, answered from `answers`
    (user -> permission); an unknown user gets 404, "broken" a body that is not JSON."""
    answers = {}
    requests = []

    def do_GET(self):
        _PermissionApi.requests.append((self.path, self.headers.get("Authorization")))
        m = re.fullmatch(r"/repos/octo/repo/collaborators/([^/]+)/permission", self.path)
        user = m.group(1) if m else None
        if user not in self.answers:
            self.send_response(404)
            body = b'{"message": "Not Found"}'
        elif self.answers[user] == "broken":
            self.send_response(200)
            body = b"<html>"
        else:
            self.send_response(200)
            body = json.dumps({"permission": self.answers[user], "user": {"login": user}}).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class PermissionCheckTest(support.ReleaseCase):
    """The Action's first step on events anyone can trigger: the actor's permission read from
    a fake API (loopback), fail closed."""

    STEP = "Check the triggering actor's permission"

    def setUp(self):
        super().setUp()
        _PermissionApi.answers = {"alice": "write", "olga": "admin", "mallory": "read",
                                  "nobody": "none", "garbled": "broken"}
        _PermissionApi.requests = []
        self.server = http.server.HTTPServer(("127.0.0.1", 0), _PermissionApi)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    def run_as(self, actor, event="issue_comment", **inputs):
        env = support.base_env(self.tmp, os.path.join(self.tmp, "home"))
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        runner = gha.Runner(self.repo, env=env, tmp=self.tmp, github={
            "event_name": event, "actor": actor, "token": "ghs_job",
            "api_url": f"http://127.0.0.1:{self.server.server_port}"})
        # No prompt: an allowed run goes on and stops at once with exit 2 (usage).
        inputs.setdefault("version", support.version())
        result = runner.run_action(gha.REPO_ROOT, inputs)
        steps = {s[0]: s for s in result.steps}
        return steps[self.STEP], steps["Install agentexec"]

    def test_read_permission_is_refused_and_nothing_runs(self):
        check, install = self.run_as("mallory")
        self.assertEqual(check[1], "failure")
        self.assertIn("::error::agentexec: mallory has read permission on octo/repo; the "
                      "issue_comment event runs agentexec only for actors with write or admin "
                      "permission (or bots in allowed-bots); not running", check[3])
        self.assertEqual(install[1], "skipped")
        self.assertEqual(_PermissionApi.requests,
                         [("/repos/octo/repo/collaborators/mallory/permission", "Bearer ghs_job")])

    def test_write_and_admin_are_allowed(self):
        for actor, permission in (("alice", "write"), ("olga", "admin")):
            check, install = self.run_as(actor, event="pull_request_target")
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
        self.assertEqual(_PermissionApi.requests, [])  # bots are decided by the list alone

    def test_other_events_need_no_check(self):
        env = support.base_env(self.tmp, os.path.join(self.tmp, "home"))
        env["AGENTEXEC_DOWNLOAD_BASE"] = "file://" + self.release
        runner = gha.Runner(self.repo, env=env, tmp=self.tmp,
                            github={"event_name": "pull_request", "actor": "mallory"})
        result = runner.run_action(gha.REPO_ROOT, {"version": support.version()})
        self.assertEqual({s[0]: s[1] for s in result.steps}[self.STEP], "skipped")
        self.assertEqual(_PermissionApi.requests, [])


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
