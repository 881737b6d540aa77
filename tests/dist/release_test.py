"""The release workflow (.github/workflows/release.yml) and the action (action.yml) agree.

- The tag filter, the build matrix, the publish script and the action's installer name the
  same versions and architectures, and the build job uploads the files `make dist` writes.
- End to end, through tests/dist/gha.py: the publish job runs for real (scripts/
  publish-release.sh, with `gh` recorded and its uploads kept by a loopback stand-in for
  GitHub's release pages), then action.yml runs with its default `version: latest` against
  that stand-in (GITHUB_SERVER_URL), resolves the latest release through the same redirect
  github.com sends, verifies the checksum, installs and runs the binary.
- The publish job refuses a release with an architecture missing, a bad checksum or a tag
  that is not the version. With no release at all, `version: latest` builds the
  action's checkout (with a warning); a version that is not published fails the install.
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
IMAGE_SH = os.path.join(ROOT, "scripts/publish-image.sh")

# `docker` as publish-image.sh calls it: records argv (and what `login` read on stdin);
# `run IMAGE --version` says DOCKER_SAYS, as the built image's entrypoint would.
FAKE_DOCKER = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
entry = {"argv": args}
if args[:1] == ["login"]:
    entry["stdin"] = sys.stdin.read()
with open(os.environ["DOCKER_LOG"], "a") as f:
    f.write(json.dumps(entry) + "\n")
if args[:1] == ["run"]:
    print(os.environ["DOCKER_SAYS"])
"""

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


# The pinned refs of .github/workflows/release.yml (commit SHAs).
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
DOWNLOAD = "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093"


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
        self.tmp = support.scratch(self)
        self.wf = yaml.safe_load(_read(WORKFLOW))
        self.version = support.version()

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
        image = self.wf["jobs"]["image"]
        self.assertEqual({e["arch"]: e["runner"] for e in image["strategy"]["matrix"]["include"]},
                         matrix)  # each image is built natively, after the tests passed
        self.assertEqual(image["needs"], "build")
        self.assertEqual(self.wf["jobs"]["image-manifest"]["needs"], ["image", "publish"])
        for job in ("image", "image-manifest"):
            self.assertEqual(self.wf["jobs"][job]["permissions"],
                             {"contents": "read", "packages": "write"})
        m = re.search(r"^arches=\(([^)]*)\)", _read(IMAGE_SH), re.M)
        self.assertEqual(sorted(m.group(1).split()), sorted(matrix))
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
            CHECKOUT: checkout, DOWNLOAD: download},
            github={"repository": REPO, "ref": f"refs/tags/{tag or 'v' + self.version}",
                    "ref_name": tag or f"v{self.version}", "event_name": "push"})
        result = runner.run_job(WORKFLOW, "publish")
        calls = [json.loads(l) for l in _read(log).splitlines()] if os.path.exists(log) else []
        return result, calls, store

    def install_latest(self, server_url, turns=support.DEMO_TURNS, env=None):
        repo = support.demo_repo(os.path.join(self.tmp, "repo"))
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns)
        env = {**support.base_env(self.tmp, home), **(env or {})}
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

    def test_no_release_builds_latest_from_the_checkout(self):
        # Before the first tag (or in a fork) GitHub has no release: `version: latest` warns
        # and builds the action's own checkout with make, and the step still runs the agent.
        # The action's make builds into this test's own build tree (up to date, so it only
        # checks), which must be the one holding the binary under test.
        build = os.environ["AE_BUILD_DIR"]
        self.assertEqual(os.path.realpath(os.path.join(build, "agentexec")),
                         os.path.realpath(support.agentexec_bin()))
        store = os.path.join(self.tmp, "empty-store")
        os.makedirs(store)
        server = GitHubReleases(store)
        try:
            result, _ = self.install_latest(server.url, env={"AGENTEXEC_BUILD_DIR": build})
        finally:
            server.close()
        logs = "\n".join(s[3] for s in result.steps)
        self.assertTrue(result.success, logs)
        install = [s for s in result.steps if s[0] == "Install agentexec"][0]
        self.assertEqual(install[1], "success")
        self.assertIn(f"::warning::agentexec: no release found in {REPO}; building it from the "
                      "action's checkout (version: source caches that build)", install[3])
        self.assertNotIn("agentexec: fetching", install[3])
        self.assertEqual(result.outputs["exit-code"], "0")
        self.assertIn("len(values)", _read(os.path.join(self.tmp, "repo", "calc.py")))

    def test_a_version_that_is_not_published_fails_the_install(self):
        store = os.path.join(self.tmp, "empty-store")
        os.makedirs(store)
        server = GitHubReleases(store)
        try:
            repo = support.demo_repo(os.path.join(self.tmp, "repo"))
            home = support.scripted_home(os.path.join(self.tmp, "home"), support.DEMO_TURNS)
            env = support.base_env(self.tmp, home)
            env.pop("AGENTEXEC_DOWNLOAD_BASE", None)
            runner = gha.Runner(repo, env=env, tmp=self.tmp,
                                github={"server_url": server.url, "action_repository": REPO})
            result = runner.run_action(gha.REPO_ROOT, {"prompt": "x", "version": "9.9.9"})
        finally:
            server.close()
        self.assertFalse(result.success)
        install = [s for s in result.steps if s[0] == "Install agentexec"][0]
        self.assertEqual(install[1], "failure")
        self.assertIn(f"agentexec: fetching {server.url}/{REPO}/releases/download/v9.9.9/"
                      f"agentexec-9.9.9-linux-{platform.machine()}.tar.gz", install[3])
        self.assertIn("404", install[3])
        self.assertNotIn("::warning::", install[3])
        self.assertEqual([s[1] for s in result.steps if s[0] == "Run agentexec"], ["skipped"])

    def image_job(self, job, says=None, arch=None, repo="Octo/AgentExec"):
        """Runs release.yml's image job (this machine's architecture, or ARCH) or its
        image-manifest job with a recording docker whose image says SAYS ({commit}: the
        checkout's); returns (result, docker calls, commit)."""
        ws = os.path.join(self.tmp, "ws")
        bindir = os.path.join(self.tmp, "bin")
        for d in (ws, bindir):
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(bindir, "docker"), "w") as f:
            f.write(FAKE_DOCKER)
        os.chmod(os.path.join(bindir, "docker"), 0o755)
        log = os.path.join(self.tmp, "docker.log")
        git = ["git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@t"]

        for f in ("Makefile", "CMakeLists.txt"):  # the checkout the job builds from
            shutil.copy(os.path.join(ROOT, f), ws)
        shutil.copytree(os.path.join(ROOT, "scripts"), os.path.join(ws, "scripts"),
                        dirs_exist_ok=True)
        subprocess.run(git + ["init", "-q"], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", "release"], check=True)
        commit = subprocess.run(git + ["rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()

        env = support.base_env(self.tmp, os.path.join(self.tmp, "home"))
        arch = arch or platform.machine()
        runner_name = {"x86_64": "ubuntu-24.04", "aarch64": "ubuntu-24.04-arm"}[arch]
        env.update({"PATH": bindir + ":" + env["PATH"], "DOCKER_LOG": log,
                    "DOCKER_SAYS": (says or "").format(commit=commit)})
        runner = gha.Runner(ws, env=env, tmp=self.tmp,
                            uses_stubs={CHECKOUT: lambda w, r: (0, "checked out", {})},
                            github={"repository": repo, "ref": f"refs/tags/v{self.version}",
                                    "ref_name": f"v{self.version}", "event_name": "push"})
        matrix = {"arch": arch, "runner": runner_name} if job == "image" else None
        result = runner.run_job(WORKFLOW, job, matrix=matrix)
        calls = [json.loads(l) for l in _read(log).splitlines()] if os.path.exists(log) else []
        return result, calls, commit

    def test_image_is_built_checked_pushed_then_named_for_both_architectures(self):
        v, arch = self.version, platform.machine()
        image = "ghcr.io/octo/agentexec"  # registry names are lower case
        result, calls, commit = self.image_job("image", says=f"agentexec {v} ({{commit}})")
        self.assertTrue(result.success, "\n".join(s[3] for s in result.steps))
        self.assertEqual([c["argv"] for c in calls], [
            ["build", "--build-arg", f"AGENTEXEC_COMMIT={commit}", "-t", f"{image}:{v}-{arch}",
             os.path.join(self.tmp, "ws")],
            ["run", "--rm", f"{image}:{v}-{arch}", "--version"],
            ["login", "ghcr.io", "-u", "octocat", "--password-stdin"],
            ["push", f"{image}:{v}-{arch}"]])
        self.assertEqual(calls[-2]["stdin"], "ghs_test")  # the job's token, never on argv

        os.remove(os.path.join(self.tmp, "docker.log"))
        shutil.rmtree(os.path.join(self.tmp, "ws"))
        result, calls, _ = self.image_job("image-manifest")
        self.assertTrue(result.success, "\n".join(s[3] for s in result.steps))
        self.assertEqual([c["argv"] for c in calls], [
            ["login", "ghcr.io", "-u", "octocat", "--password-stdin"],
            ["buildx", "imagetools", "create", "-t", f"{image}:{v}", "-t", f"{image}:latest",
             f"{image}:{v}-x86_64", f"{image}:{v}-aarch64"]])

    def test_image_that_is_not_this_version_is_not_pushed(self):
        result, calls, commit = self.image_job("image", says="agentexec 0.0.1 (0123456789ab)")
        self.assertFalse(result.success)
        self.assertIn(f"publish-image: the image's agentexec says 'agentexec 0.0.1 "
                      f"(0123456789ab)', not 'agentexec {self.version} ({commit})'; not pushing",
                      result.steps[-1][3])
        self.assertEqual([c["argv"][0] for c in calls], ["build", "run"])

    def test_image_is_built_only_on_its_own_architecture(self):
        other = "aarch64" if platform.machine() == "x86_64" else "x86_64"
        result, calls, _ = self.image_job("image", says="x", arch=other)
        self.assertFalse(result.success)
        self.assertIn(f"publish-image: the {other} image is built on an {other} runner, not "
                      f"{platform.machine()}", result.steps[-1][3])
        self.assertEqual(calls, [])

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
