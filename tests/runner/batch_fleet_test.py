"""A fleet that proves and delivers (#39), end to end with real git servers on loopback:

  batch_fleet_test.py AGENTEXEC

Six repositories, four served by `git http-backend` over https (tests/engines/
net_clients_servers.py's handler, here on 127.0.0.1 with a certificate made for the test) and
two by `git daemon`. Every task adds new.txt (the scripted model); the check of two of them
fails. `batch run --push` must report 4 succeeded and 2 check_failed in the Markdown, JUnit and
JSON reports, the 4 branches must be on their remotes with a pull-request body beside each,
and a second `batch publish` must push nothing. A branch that diverged on its remote is
reported and left alone, and replaced only with --force. The model's answer carries HTML and
a link: the pull-request body renders them inert."""
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "engines"))
import net_clients_servers as servers  # noqa: E402  (the https git server, reused as it is)

AGENTEXEC = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "agentexec"
HOSTILE = '<img src=x onerror=alert(1)> see [here](https://evil.example/x)'
TURNS = {"turns": [
    {"items": [{"type": "custom_tool_call", "name": "apply_patch",
                "input": "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch"}]},
    {"items": [{"type": "message", "text": "Added new.txt. " + HOSTILE}],
     "usage": {"input_tokens": 100, "output_tokens": 20}}]}
HTTPS_REPOS = ["r1", "r2", "r3", "r4"]
DAEMON_REPOS = ["r5", "r6"]
FAILING = {"r3", "r6"}  # their check fails


def git(*args, cwd=None, env=None, check=True):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, env=env,
                          check=check, capture_output=True, text=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FleetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="ae-fleet-")
        root = cls.root
        cls.home = os.path.join(root, "home")
        os.makedirs(cls.home)
        cert, key = os.path.join(root, "cert.pem"), os.path.join(root, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        # git's normal configuration, as publish uses it: the user's ~/.gitconfig trusts the
        # test's certificate authority.
        with open(os.path.join(cls.home, ".gitconfig"), "w") as f:
            f.write(f"[http]\n\tsslCAInfo = {cert}\n")
        cls.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": cls.home,
                   "AGENTEXEC_HOME": os.path.join(root, "agentexec-home"), "LANG": "C.UTF-8"}
        os.makedirs(cls.env["AGENTEXEC_HOME"])

        # The bare repositories, each with one commit, pushes allowed.
        cls.bare = os.path.join(root, "served")
        seed = os.path.join(root, "seed")
        git("init", "-q", seed)
        with open(os.path.join(seed, "f.txt"), "w") as f:
            f.write("hi\n")
        git("add", ".", cwd=seed)
        git("commit", "-qm", "init", cwd=seed)
        for r in HTTPS_REPOS + DAEMON_REPOS:
            path = os.path.join(cls.bare, r + ".git")
            git("clone", "-q", "--bare", seed, path)
            git("config", "http.receivepack", "true", cwd=path)
            git("config", "daemon.receivepack", "true", cwd=path)

        # https: git http-backend behind the engines' test server, on a port of its own.
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        cls.https_log = os.path.join(root, "https.log")
        open(cls.https_log, "w").close()
        cls.https = servers.Server(("127.0.0.1", 0), servers.Handler)
        cls.https.docroot, cls.https.git_root = root, cls.bare
        cls.https.log, cls.https.lock = cls.https_log, threading.Lock()
        cls.https.socket = ctx.wrap_socket(cls.https.socket, server_side=True,
                                           do_handshake_on_connect=False)
        threading.Thread(target=cls.https.serve_forever, daemon=True).start()
        https_port = cls.https.server_address[1]

        # git://: git daemon with receive-pack enabled.
        daemon_port = free_port()
        cls.daemon = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
             "--listen=127.0.0.1", f"--port={daemon_port}", f"--base-path={cls.bare}", cls.bare],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if git("ls-remote", f"git://127.0.0.1:{daemon_port}/r5.git", check=False,
                   env=cls.env).returncode == 0:
                break
            threading.Event().wait(0.1)

        cls.url = {r: f"https://127.0.0.1:{https_port}/{r}.git" for r in HTTPS_REPOS}
        cls.url.update({r: f"git://127.0.0.1:{daemon_port}/{r}.git" for r in DAEMON_REPOS})
        with open(os.path.join(root, "turns.json"), "w") as f:
            json.dump(TURNS, f)
        cls.manifest = os.path.join(root, "fleet.jsonl")
        with open(cls.manifest, "w") as f:
            for r in HTTPS_REPOS + DAEMON_REPOS:
                task = {"id": r, "repo": cls.url[r], "prompt": f"add new.txt to {r}"}
                if r in FAILING:
                    task["check"] = "echo 'expected fixed, got:'; cat new.txt; grep -q fixed new.txt"
                f.write(json.dumps(task) + "\n")
        cls.out = os.path.join(root, "out")
        cls.run_result = cls.agentexec(
            "batch", "run", cls.manifest, "--out", cls.out, "-j", "3", "--push",
            "--check", "test -e new.txt", "-s", "workspace-write",
            "-c", "model_provider=scripted",
            "-c", f'model_providers.scripted.script="{os.path.join(root, "turns.json")}"')

    @classmethod
    def tearDownClass(cls):
        cls.https.shutdown()
        cls.daemon.terminate()
        cls.daemon.wait()
        shutil.rmtree(cls.root, ignore_errors=True)

    @classmethod
    def agentexec(cls, *args):
        return subprocess.run([AGENTEXEC, *args], env=cls.env, capture_output=True, text=True,
                              timeout=600)

    def remote_head(self, r, branch):
        out = git("ls-remote", self.url[r], "refs/heads/" + branch, env=self.env).stdout
        return out.split("\t")[0] if out else ""

    def branch_record(self, r):
        with open(os.path.join(self.out, "tasks", r, "branch.json")) as f:
            return json.load(f)

    def test_1_run_reports_four_succeeded_and_two_check_failed(self):
        run = self.run_result
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("batch: 6/6 done, 0 running, 4 succeeded, 2 failed, 0 no_change, "
                      "0 interrupted, 0 skipped, 720 tokens\n", run.stderr)
        self.assertIn("publish: 4 pushed, 0 up to date, 0 not pushed\n", run.stderr)
        records = {}
        with open(os.path.join(self.out, "results.jsonl")) as f:
            for line in f:
                rec = json.loads(line)
                records[rec["id"]] = rec
        for r in HTTPS_REPOS + DAEMON_REPOS:
            rec = records[r]
            if r in FAILING:
                self.assertEqual((rec["status"], rec["reason"], rec["error"]),
                                 ("failed", "check_failed", "the check exited 1"), rec)
                self.assertEqual(rec["check"]["exit_code"], 1)
                self.assertEqual(rec["check"]["output"], "expected fixed, got:\nhello\n")
            else:
                self.assertEqual((rec["status"], rec["reason"], rec["check"]["exit_code"]),
                                 ("succeeded", None, 0), rec)

        md = self.agentexec("batch", "report", self.out, "--manifest", self.manifest)
        self.assertEqual(md.returncode, 0, md.stderr)
        lines = md.stdout.splitlines()
        self.assertEqual(lines[2], "6 tasks: 4 succeeded, 2 failed, 0 no change, 0 interrupted, "
                                   "0 skipped; 720 tokens")
        rows = {l.split(" | ")[0][2:]: l.split(" | ") for l in lines if l.startswith("| r")}
        for r in HTTPS_REPOS + DAEMON_REPOS:
            status, reason, check, branch = rows[r][1], rows[r][2], rows[r][3], rows[r][7]
            if r in FAILING:
                self.assertEqual((status, reason, branch), ("failed", "check\\_failed", ""))
                self.assertTrue(check.startswith("exit 1 in "), check)
            else:
                self.assertEqual((status, reason, branch),
                                 ("succeeded", "", f"agentexec/{r} (pushed)"))
                self.assertTrue(check.startswith("passed in "), check)

        junit = self.agentexec("batch", "report", self.out, "--format", "junit")
        self.assertEqual(junit.returncode, 0, junit.stderr)
        suite = ET.fromstring(junit.stdout)
        self.assertEqual((suite.get("tests"), suite.get("failures")), ("6", "2"))
        for case in suite.iter("testcase"):
            failure = case.find("failure")
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            if case.get("name") in FAILING:
                self.assertEqual(failure.get("type"), "check_failed")
                self.assertTrue(failure.get("message").startswith(
                    "failed (check_failed); check: exit 1 in "), failure.get("message"))
                self.assertIn("check output (tail):\nexpected fixed, got:\nhello\n", failure.text)
                self.assertEqual(props["check.exit_code"], "1")
            else:
                self.assertIsNone(failure)
                self.assertEqual(props["branch"], f"agentexec/{case.get('name')} (pushed)")
                self.assertEqual(props["remote"], self.url[case.get("name")])

        report = self.agentexec("batch", "report", self.out, "--format", "json")
        self.assertEqual(report.returncode, 0, report.stderr)
        data = json.loads(report.stdout)
        self.assertEqual(data["summary"], {"total": 6, "succeeded": 4, "failed": 2,
                                           "no_change": 0, "interrupted": 0, "skipped": 0,
                                           "tokens": 720})
        self.assertEqual(sorted(t["id"] for t in data["tasks"] if t["reason"] == "check_failed"),
                         sorted(FAILING))
        self.assertEqual(sorted((p["id"], p["outcome"]) for p in data["published"]),
                         [(r, "pushed") for r in ["r1", "r2", "r4", "r5"]])

    def test_2_four_branches_on_the_remotes_each_with_a_pull_request(self):
        for r in HTTPS_REPOS + DAEMON_REPOS:
            head = self.remote_head(r, "agentexec/" + r)
            task = os.path.join(self.out, "tasks", r)
            if r in FAILING:
                self.assertEqual(head, "", r)
                self.assertFalse(os.path.exists(os.path.join(task, "pr-body.md")))
                continue
            record = self.branch_record(r)
            self.assertEqual(record, {"branch": "agentexec/" + r, "remote": self.url[r],
                                      "commit": head, "base": None})
            with open(os.path.join(task, "pr-title.txt")) as f:
                self.assertEqual(f.read(), f"agentexec: {r}: add new.txt to {r}\n")
            with open(os.path.join(task, "pr-body.md")) as f:
                body = f.read()
            self.assertIn("### Task\n\nadd new.txt to " + r, body)
            self.assertIn("### Check\n\n```text\ntest -e new.txt\n```\n\npassed in ", body)
            self.assertIn("### Changes\n\n```text\n new.txt | 1 +\n 1 file changed, "
                          "1 insertion(+)\n```\n", body)
            # The model's HTML and link are text, not markup.
            self.assertNotIn("<img", body)
            self.assertNotIn("](", body)
            self.assertIn("&lt;img src=x onerror=alert\\(1\\)&gt; see \\[here\\]\\(https\\://"
                          "evil.example/x\\)", body)

    def test_3_second_publish_pushes_nothing(self):
        with open(self.https_log) as f:
            pushes_before = f.read().count("git-receive-pack")
        again = self.agentexec("batch", "publish", self.out)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertTrue(again.stderr.endswith("publish: 0 pushed, 4 up to date, 0 not pushed\n"),
                        again.stderr)
        with open(self.https_log) as f:
            log = f.read()
        # Only ls-remote's reads reached the server: no receive-pack request.
        self.assertEqual(log.count("git-receive-pack"), pushes_before, log)
        # Where the CI opened the pull request (gh pr create prints it) is linked in the
        # report; anything but a plain web address is not.
        with open(os.path.join(self.out, "tasks", "r2", "pr-url.txt"), "w") as f:
            f.write("https://forge.example/o/r2/pull/7\n")
        with open(os.path.join(self.out, "tasks", "r4", "pr-url.txt"), "w") as f:
            f.write("javascript:alert(1)\n")
        md = self.agentexec("batch", "report", self.out).stdout
        self.assertIn("| agentexec/r2 (pushed) https://forge.example/o/r2/pull/7 |", md)
        self.assertIn("| agentexec/r4 (pushed) |", md)

    def test_4_a_diverged_branch_is_reported_and_replaced_only_with_force(self):
        r = "r1"
        other = os.path.join(self.root, "other")
        git("clone", "-q", self.url[r], other, env=self.env)
        with open(os.path.join(other, "elsewhere.txt"), "w") as f:
            f.write("someone else\n")
        git("add", ".", cwd=other)
        git("commit", "-qm", "someone else", cwd=other)
        git("push", "-q", "origin", "HEAD:refs/heads/agentexec/" + r, "--force", cwd=other,
            env=self.env)
        theirs = self.remote_head(r, "agentexec/" + r)
        ours = self.branch_record(r)["commit"]
        self.assertNotEqual(theirs, ours)

        publish = self.agentexec("batch", "publish", self.out)
        self.assertEqual(publish.returncode, 1, publish.stderr)
        self.assertIn(f"publish: r1: diverged agentexec/r1 -> {self.url[r]}: agentexec/r1 on the "
                      f"remote is at {theirs[:12]}, which {ours[:12]} does not contain: not "
                      "pushed (--force replaces it)\n", publish.stderr)
        self.assertTrue(publish.stderr.endswith("publish: 0 pushed, 3 up to date, 1 not pushed\n"))
        self.assertEqual(self.remote_head(r, "agentexec/" + r), theirs)
        report = self.agentexec("batch", "report", self.out)
        self.assertIn("| agentexec/r1 (diverged) |", report.stdout)

        forced = self.agentexec("batch", "publish", self.out, "--force")
        self.assertEqual(forced.returncode, 0, forced.stderr)
        self.assertIn(f"publish: r1: forced agentexec/r1 -> {self.url[r]}\n", forced.stderr)
        self.assertEqual(self.remote_head(r, "agentexec/" + r), ours)


if __name__ == "__main__":
    unittest.main(verbosity=2)
