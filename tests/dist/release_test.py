"""The release workflow (.github/workflows/release.yml) and the action (action.yml) agree.

- The tag filter, the build matrix, the publish script and the action's installer name the
  same versions and architectures, and the build job uploads the files `make dist` writes.
- End to end, through tests/dist/gha.py: the publish job runs for real (scripts/
  publish-release.sh, with `gh` recorded and its uploads kept by a loopback stand-in for
  GitHub's release pages), then action.yml runs with its default `version: latest` against
  that stand-in (GITHUB_SERVER_URL), resolves the latest release through the same redirect
  github.com sends, verifies the checksum, installs and runs the binary.
- The publish job refuses a release with an architecture missing, a bad checksum or a tag
  that is not the version, and the action fails clearly when there is no release.
"""
import fnmatch
import http.server
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gha  # noqa: E402
from gha import _read  # noqa: E402
import support  # noqa: E402
import yaml  # noqa: E402

ROOT = support.REPO_ROOT
WORKFLOW = os.path.join(ROOT, ".github/workflows/release.yml")
REPO = "octo/agentexec"

# `gh` as the publish step calls it: records its argv and environment, and for
# `release create TAG FILES...` keeps the files where the loopback GitHub serves them.
FAKE_GH = r"""#!/usr/bin/env python3
import json, os, shutil, sys
with open(os.environ["GH_LOG"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "repo": os.environ.get("GH_REPO"),
                        "token": bool(os.environ.get("GH_TOKEN"))}) + "\n")
args = sys.argv[1:]
if args[:2] != ["release", "create"]:
    sys.exit("fake gh: unexpected " + " ".join(args))
tag, rest = args[2], args[3:]
files, i = [], 0
while i < len(rest):
    if rest[i] in ("--title", "--notes", "--target"):
        i += 2
    elif rest[i].startswith("-"):
        i += 1
    else:
        files.append(rest[i]); i += 1
store = os.path.join(os.environ["GH_STORE"], tag)
if os.path.exists(store):
    sys.exit(f"fake gh: release {tag} already exists")
os.makedirs(store)
for f in files:
    shutil.copy(f, store)
if "--latest" in rest:
    open(os.path.join(os.environ["GH_STORE"], "latest"), "w").write(tag)
"""


def github_pattern(pattern):
    """A GitHub Actions filter pattern as a regex (the subset release.yml uses: [..], +, *)."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[":
            j = pattern.index("]", i)
            out += pattern[i:j + 1]
            i = j + 1
            continue
        out += {"+": "+", "*": "[^/]*", "?": "."}.get(c, re.escape(c))
        i += 1
    return re.compile(out + r"\Z")


def install_sh_arches():
    m = re.search(r'case "\$arch" in ([^)]+)\)', _read(os.path.join(ROOT, "scripts/ci/install.sh")))
    return sorted(a.strip() for a in m.group(1).split("|"))


def publish_sh_arches():
    m = re.search(r"^arches=\(([^)]*)\)", _read(os.path.join(ROOT, "scripts/publish-release.sh")),
                  re.M)
    return sorted(m.group(1).split())


class GitHubReleases(http.server.ThreadingHTTPServer):
    """github.com's release URLs over a store of published files:
    /OWNER/REPO/releases/latest -> 302 to /OWNER/REPO/releases/tag/TAG (the latest TAG),
    /OWNER/REPO/releases/tag/TAG -> 200, /OWNER/REPO/releases/download/TAG/FILE -> FILE."""

    def __init__(self, store):
        self.store = store

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.respond(head=True)

            def do_GET(self):
                self.respond(head=False)

            def respond(self, head):
                prefix = f"/{REPO}/releases/"
                path = self.path
                body, status, location = b"", 404, None
                latest = os.path.join(store, "latest")
                if path == prefix + "latest" and os.path.exists(latest):
                    status, location = 302, prefix + "tag/" + _read(latest)
                elif path.startswith(prefix + "tag/"):
                    if os.path.isdir(os.path.join(store, path[len(prefix + "tag/"):])):
                        status = 200
                elif path.startswith(prefix + "download/"):
                    f = os.path.join(store, path[len(prefix + "download/"):])
                    if ".." not in path and os.path.isfile(f):
                        status, body = 200, _read(f, mode="rb")
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self):
        self.shutdown()
        self.server_close()


class ReleaseTest(unittest.TestCase):
    def setUp(self):
        self.t = support.Tmp()
        self.tmp = self.t.__enter__()
        self.wf = yaml.safe_load(_read(WORKFLOW))
        self.version = support.version()

    def tearDown(self):
        self.t.__exit__(None, None, None)

    # ------------------------------------------------------------ structure
    def test_tag_filter_matrix_publisher_and_installer_agree(self):
        on = self.wf.get("on", self.wf.get(True))  # YAML 1.1 reads the key `on` as true
        self.assertEqual(list(on), ["push"])
        tags = [github_pattern(p) for p in on["push"]["tags"]]
        matches = lambda t: any(p.match(t) for p in tags)  # noqa: E731
        self.assertTrue(matches(f"v{self.version}"))
        for t in ("v12.0.345", "v0.1.0"):
            self.assertTrue(matches(t), t)
        for t in ("v0", "v1", "0.1.0", "v0.1.0-rc1", "v0.1", "latest"):
            self.assertFalse(matches(t), t)  # the action's major tag v0 is no release

        build = self.wf["jobs"]["build"]
        matrix = {e["arch"]: e["runner"] for e in build["strategy"]["matrix"]["include"]}
        self.assertEqual(sorted(matrix), install_sh_arches())
        self.assertEqual(sorted(matrix), publish_sh_arches())
        self.assertEqual(matrix["x86_64"], "ubuntu-24.04")
        self.assertEqual(matrix["aarch64"], "ubuntu-24.04-arm")  # GitHub's arm64 runner
        runs = "\n".join(s.get("run", "") for s in build["steps"])
        for cmd in ("make test", "make dist deb", "ctest -R '^dist_(portable|package|deb_portable)$'"):
            self.assertIn(cmd, runs)
        self.assertEqual(self.wf["jobs"]["publish"]["needs"], "build")
        self.assertEqual(self.wf["jobs"]["publish"]["permissions"], {"contents": "write"})
        self.assertEqual(self.wf["permissions"], {"contents": "read"})

        # The build job uploads what `make dist` names, for its architecture.
        dry = subprocess.run(["make", "-s", "-n", "-C", ROOT, "dist"], capture_output=True,
                             text=True, check=True).stdout
        made = re.search(r"-czf dist/(\S+\.tar\.gz)", dry).group(1)
        self.assertEqual(made, f"agentexec-{self.version}-linux-{platform.machine()}.tar.gz")
        upload = [s for s in build["steps"] if s.get("uses", "").startswith(
            "actions/upload-artifact@")][0]["with"]
        self.assertEqual(upload["if-no-files-found"], "error")
        for arch in matrix:
            globs = gha.interpolate(upload["path"], {"matrix": {"arch": arch}}).split()
            name = f"dist/agentexec-{self.version}-linux-{arch}.tar.gz"
            for f in (name, name + ".sha256", f"dist/agentexec_{self.version}_arm64.deb"):
                self.assertTrue(any(fnmatch.fnmatch(f, g) for g in globs), (f, globs))
            other = [a for a in matrix if a != arch][0]
            self.assertFalse(any(fnmatch.fnmatch(
                f"dist/agentexec-{self.version}-linux-{other}.tar.gz", g) for g in globs))

    # ------------------------------------------------------------ end to end
    def dist_dir(self, arches=("x86_64", "aarch64")):
        """What the build jobs upload: each architecture's tarball + .sha256 (this machine's
        holds the real binary; another architecture's holds the cross-built one when `make
        dist ARCH=...` ran, else this binary, which the action never installs here)."""
        d = os.path.join(self.tmp, "artifacts")
        os.makedirs(d, exist_ok=True)
        for arch in arches:
            built = os.path.join(ROOT, f"build-dist-{arch}", "agentexec")
            binary = built if arch != platform.machine() and os.path.exists(built) \
                else support.agentexec_bin()
            support.make_release(binary, d, arch)
        return d

    def publish(self, artifacts, tag=None):
        """Runs release.yml's publish job; returns (result, gh calls)."""
        ws = os.path.join(self.tmp, "ws")
        bindir = os.path.join(self.tmp, "bin")
        store = os.path.join(self.tmp, "store")
        for d in (ws, bindir, store):
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(bindir, "gh"), "w") as f:
            f.write(FAKE_GH)
        os.chmod(os.path.join(bindir, "gh"), 0o755)
        log = os.path.join(self.tmp, "gh.log")

        def checkout(with_, runner):  # the repository's files the publish step uses
            for f in ("Makefile", "CMakeLists.txt"):
                shutil.copy(os.path.join(ROOT, f), ws)
            shutil.copytree(os.path.join(ROOT, "scripts"), os.path.join(ws, "scripts"),
                            dirs_exist_ok=True)
            return 0, "checked out", {}

        def download(with_, runner):
            self.assertEqual(with_, {"pattern": "dist-*", "path": "dist",
                                     "merge-multiple": "true"})
            shutil.copytree(artifacts, os.path.join(ws, with_["path"]), dirs_exist_ok=True)
            return 0, "downloaded", {}

        env = support.base_env(self.tmp, os.path.join(self.tmp, "home"))
        env.update({"PATH": bindir + ":" + env["PATH"], "GH_LOG": log, "GH_STORE": store})
        runner = gha.Runner(ws, env=env, tmp=self.tmp, uses_stubs={
            "actions/checkout@v4": checkout, "actions/download-artifact@v4": download},
            github={"repository": REPO, "ref": f"refs/tags/{tag or 'v' + self.version}",
                    "ref_name": tag or f"v{self.version}", "event_name": "push"})
        result = runner.run_job(WORKFLOW, "publish")
        calls = [json.loads(l) for l in _read(log).splitlines()] if os.path.exists(log) else []
        return result, calls, store

    def install_latest(self, server_url, turns=support.DEMO_TURNS):
        repo = support.demo_repo(os.path.join(self.tmp, "repo"))
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns)
        env = support.base_env(self.tmp, home)
        env.pop("AGENTEXEC_DOWNLOAD_BASE", None)
        runner = gha.Runner(repo, env=env, tmp=self.tmp,
                            github={"server_url": server_url, "action_repository": REPO})
        # No `version` input: the default, latest, is what a user gets.
        return runner.run_action(gha.REPO_ROOT, {"prompt": "make the failing test pass"}), runner

    def test_published_release_is_what_version_latest_installs(self):
        result, calls, store = self.publish(self.dist_dir())
        self.assertTrue(result.success, "\n".join(s[3] for s in result.steps))
        v = self.version
        files = [f"dist/agentexec-{v}-linux-{a}.tar.gz{s}" for a in ("x86_64", "aarch64")
                 for s in ("", ".sha256")]
        self.assertEqual(calls, [{"argv": ["release", "create", f"v{v}", "--verify-tag",
                                           "--latest", "--title", f"agentexec {v}",
                                           "--generate-notes", *files],
                                  "repo": REPO, "token": True}])
        server = GitHubReleases(store)
        try:
            result, runner = self.install_latest(server.url)
        finally:
            server.close()
        logs = "\n".join(s[3] for s in result.steps)
        self.assertTrue(result.success, logs)
        self.assertIn(f"agentexec: fetching {server.url}/{REPO}/releases/download/v{v}/"
                      f"agentexec-{v}-linux-{platform.machine()}.tar.gz", logs)
        installed = os.path.join(runner.runner["tool_cache"], "agentexec", v,
                                 platform.machine(), "agentexec")
        self.assertEqual(_read(installed, mode="rb"), _read(support.agentexec_bin(), mode="rb"))
        self.assertEqual(result.outputs["exit-code"], "0")
        self.assertIn("len(values)", _read(os.path.join(self.tmp, "repo", "calc.py")))

    def test_no_release_fails_the_install_clearly(self):
        store = os.path.join(self.tmp, "empty-store")
        os.makedirs(store)
        server = GitHubReleases(store)
        try:
            result, _ = self.install_latest(server.url)
        finally:
            server.close()
        self.assertFalse(result.success)
        install = [s for s in result.steps if s[0] == "Install agentexec"][0]
        self.assertEqual(install[1], "failure")
        self.assertIn(f"agentexec: no release found in {REPO}", install[3])
        self.assertEqual([s[1] for s in result.steps if s[0] == "Run agentexec"], ["skipped"])

    def test_publish_refuses_a_missing_architecture(self):
        result, calls, _ = self.publish(self.dist_dir(arches=("x86_64",)))
        self.assertFalse(result.success)
        self.assertEqual(calls, [])
        self.assertIn(f"publish-release: dist/agentexec-{self.version}-linux-aarch64.tar.gz "
                      "is missing; not publishing", result.steps[-1][3])

    def test_publish_refuses_a_bad_checksum(self):
        d = self.dist_dir()
        with open(os.path.join(d, f"agentexec-{self.version}-linux-aarch64.tar.gz"), "ab") as f:
            f.write(b"tampered")
        result, calls, _ = self.publish(d)
        self.assertFalse(result.success)
        self.assertEqual(calls, [])
        self.assertIn(f"publish-release: checksum mismatch for agentexec-{self.version}-"
                      "linux-aarch64.tar.gz; not publishing", result.steps[-1][3])

    def test_publish_refuses_a_tag_that_is_not_the_version(self):
        result, calls, _ = self.publish(self.dist_dir(), tag="v99.0.0")
        self.assertFalse(result.success)
        self.assertEqual(calls, [])
        self.assertIn(f"publish-release: tag v99.0.0 is not v{self.version} (CMakeLists.txt)",
                      result.steps[-1][3])


if __name__ == "__main__":
    unittest.main(verbosity=2)
