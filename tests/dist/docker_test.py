"""The Dockerfile, without a Docker engine: its structure is checked, the runtime stage's
RUN step runs for real in bash with apt-get/useradd/git replaced by recorders, and the runtime root
is assembled from its COPY steps (the binary as `make dist` packs it) and then used:
agentexec prints its version, the CI scripts run from where the image keeps them (the GitLab
component's path), and the entrypoint (scripts/docker-entrypoint.sh) runs from there: the
default sandbox mode and what overrides it, the one-line sandbox report, and, as root, the
drop to the workspace's owner with a private HOME. tests/engines/docker.sh does the same in
a real container."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
from gitlab import _read  # noqa: E402

DOCKERFILE = os.path.join(support.REPO_ROOT, "Dockerfile")


def stages():
    """[(name, [(instruction, args)])] with continuation lines joined."""
    text = re.sub(r"\\\n", " ", _read(DOCKERFILE))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, args = line.partition(" ")
        instr = instr.upper()
        if not out and instr == "ARG":
            continue  # the build arguments the FROM lines use
        if instr == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", args, re.I)
            out.append((m.group(2), m.group(1), []))
        else:
            out[-1][2].append((instr, args.strip()))
    return out


ENTRYPOINT = "/usr/local/share/agentexec/scripts/docker-entrypoint.sh"


def assemble_root(tmp):
    """The runtime stage's file tree under tmp/root, from its COPY steps: --from=build takes
    /out/ as the build stage fills it from the dist tarball (the built binary, packed as
    `make dist` packs it)."""
    root = os.path.join(tmp, "root")
    os.makedirs(root, exist_ok=True)
    rel = os.path.join(tmp, "release")
    os.makedirs(rel)
    binary = os.environ.get("AGENTEXEC_PORTABLE_BIN")
    if not binary or not os.path.exists(binary):
        binary = support.agentexec_bin()
    name = support.make_release(binary, rel)
    out = os.path.join(tmp, "out")
    os.makedirs(out)
    subprocess.run(["tar", "-xzf", os.path.join(rel, name + ".tar.gz"), "-C", out,
                    "--strip-components=1"], check=True)
    for _, args in [r for r in stages()[1][2] if r[0] == "COPY"]:
        parts = args.split()
        if parts[0].startswith("--from=build"):
            src = os.path.join(out, os.path.relpath(parts[1], "/out"))
            parts = parts[1:]
        else:
            src = os.path.join(support.REPO_ROOT, parts[0])
        dst = root + parts[1]
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(src, dst)
    return root


class DockerfileTest(unittest.TestCase):
    def test_structure(self):
        s = stages()
        self.assertEqual([(n, b) for n, b, _ in s], [("build", "debian:${BUILD_TAG}"),
                                                     ("runtime", "debian:${BASE_TAG}")])
        text = _read(DOCKERFILE)
        self.assertRegex(text, r"(?m)^ARG BUILD_TAG=12$")
        self.assertRegex(text, r"(?m)^ARG BASE_TAG=12-slim$")
        runtime = s[1][2]
        self.assertIn(("ENTRYPOINT", f'["{ENTRYPOINT}"]'), runtime)
        # No USER: the entrypoint starts as root to become the workspace's owner.
        self.assertEqual([a for i, a in runtime if i == "USER"], [])
        build_runs = " ".join(a for i, a in s[0][2] if i == "RUN")
        self.assertIn("./scripts/install-deps.sh dist", build_runs)
        self.assertIn("make dist", build_runs)
        ignore = _read(os.path.join(support.REPO_ROOT, ".dockerignore")).split()
        for p in (".git", "build*/", "dist/"):
            self.assertIn(p, ignore)

    def test_build_stage_ships_a_given_tarball_or_compiles(self):
        """The build stage's last RUN, with make replaced by a recorder: without
        AGENTEXEC_TARBALL it runs `make dist` and unpacks what that made; with it, it unpacks
        that tarball and compiles nothing."""
        run = [a for i, a in stages()[0][2] if i == "RUN"][-1]
        with support.Tmp() as tmp:
            src = os.path.join(tmp, "src")
            os.makedirs(os.path.join(src, "given"))
            fake = os.path.join(tmp, "fake")
            os.makedirs(fake)
            log = os.path.join(tmp, "calls")
            made = os.path.join(tmp, "made")
            os.makedirs(os.path.join(made, "agentexec-9-linux-x"))
            with open(os.path.join(made, "agentexec-9-linux-x", "agentexec"), "w") as f:
                f.write("compiled")
            with open(os.path.join(fake, "make"), "w") as f:
                f.write(f'#!/bin/sh\necho "make $*" >> "{log}"\nmkdir -p dist\n'
                        f'tar -C "{made}" -czf dist/agentexec-9-linux-x.tar.gz agentexec-9-linux-x\n')
            os.chmod(os.path.join(fake, "make"), 0o755)
            os.makedirs(os.path.join(made, "given", "agentexec-8"))
            with open(os.path.join(made, "given", "agentexec-8", "agentexec"), "w") as f:
                f.write("given")
            subprocess.run(["tar", "-C", os.path.join(made, "given"), "-czf",
                            os.path.join(src, "given", "a.tar.gz"), "agentexec-8"], check=True)
            for tarball, expect, calls in (("", "compiled", "make dist DIST_CMAKE_ARGS=-DAGENTEXEC_COMMIT=abc\n"),
                                           ("given/a.tar.gz", "given", "")):
                out = os.path.join(tmp, "out")
                shutil.rmtree(out, ignore_errors=True)
                if os.path.exists(log):
                    os.remove(log)
                p = subprocess.run(["sh", "-c", "set -e\n" + run.replace("/out", out)], cwd=src,
                                   env={"PATH": fake + ":/usr/bin:/bin", "AGENTEXEC_TARBALL": tarball,
                                        "AGENTEXEC_COMMIT": "abc"},
                                   capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(_read(os.path.join(out, "agentexec")), expect)
                self.assertEqual(_read(log) if os.path.exists(log) else "", calls)

    def test_runtime_steps_and_assembled_root(self):
        runtime = stages()[1][2]
        with support.Tmp() as tmp:
            root = os.path.join(tmp, "root")
            os.makedirs(root)
            # RUN: with recorders for the commands that need a Debian root and the network.
            fake = os.path.join(tmp, "fake")
            os.makedirs(fake)
            log = os.path.join(tmp, "calls")
            for cmd in ("apt-get", "useradd", "git"):
                with open(os.path.join(fake, cmd), "w") as f:
                    f.write(f'#!/bin/sh\necho "{cmd} $*" >> "{log}"\n')
                os.chmod(os.path.join(fake, cmd), 0o755)
            for _, args in [r for r in runtime if r[0] == "RUN"]:
                p = subprocess.run(["sh", "-c", "set -e\n" + args.replace("/var/lib", root)],
                                   env={"PATH": fake + ":/usr/bin:/bin"}, capture_output=True,
                                   text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
            calls = _read(log).splitlines()
            self.assertEqual(calls[0], "apt-get update -qq")
            self.assertRegex(calls[1], r"^apt-get install -y -qq --no-install-recommends .*")
            for pkg in ("git", "bash", "jq", "ca-certificates"):
                self.assertIn(f" {pkg}", calls[1])
            self.assertEqual(calls[2], "useradd --create-home --uid 10001 --shell /bin/bash agent")
            self.assertEqual(calls[3], "git config --system --add safe.directory *")
            root = assemble_root(tmp)
            for doc in ("LICENSE", "THIRD_PARTY_NOTICES"):
                self.assertEqual(_read(root + "/usr/share/doc/agentexec/" + doc),
                                 _read(os.path.join(support.REPO_ROOT, doc)))
            self.assertTrue(os.access(root + ENTRYPOINT, os.X_OK))
            ver = subprocess.run([root + "/usr/local/bin/agentexec", "--version"],
                                 capture_output=True, text=True)
            self.assertEqual(ver.returncode, 0)
            self.assertTrue(ver.stdout.startswith("agentexec " + support.version()))
            # The component's script path works inside the assembled root's layout.
            repo = support.demo_repo(os.path.join(tmp, "repo"))
            turns = support.write_turns(os.path.join(tmp, "t.json"), [
                {"items": [{"type": "message", "text": "from the image layout"}]}])
            home = support.scripted_home(os.path.join(tmp, "home"), turns)
            env = support.base_env(tmp, home)
            env.update({"INPUT_PROMPT": "hi", "AGENTEXEC_OUT_DIR": os.path.join(tmp, "o"),
                        "AGENTEXEC_BIN": root + "/usr/local/bin/agentexec"})
            p = subprocess.run([root + "/usr/local/share/agentexec/scripts/ci/run.sh"], cwd=repo,
                               env=env, capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(_read(os.path.join(tmp, "o/final-message.md")), "from the image layout")


def report_line(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("agentexec image: ")]
    return lines


class EntrypointTest(unittest.TestCase):
    """scripts/docker-entrypoint.sh from the assembled root, agentexec found on PATH there."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ae-dist-entry-")
        os.chmod(self.tmp, 0o755)  # the dropped user reads the root and the turns
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = assemble_root(self.tmp)
        self.repo = support.demo_repo(os.path.join(self.tmp, "repo"))
        self.home = os.path.join(self.tmp, "home")  # AGENTEXEC_HOME, empty: no user config
        os.makedirs(self.home)
        self.env = support.base_env(self.tmp, self.home)
        self.env["PATH"] = self.root + "/usr/local/bin:/usr/bin:/bin"
        for fake in [k for k in self.env if k.startswith("AGENTEXEC_SANDBOX_FAKE")]:
            del self.env[fake]

    def entry(self, *args, env=None, cwd=None):
        return subprocess.run([self.root + ENTRYPOINT, *args], cwd=cwd or self.repo,
                              env={**self.env, **(env or {})}, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)

    def mode(self, *args):
        p = self.entry("--print-config", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        return [l for l in p.stdout.splitlines() if l.startswith("sandbox_mode = ")][0]

    def test_default_mode_is_workspace_write_and_everything_the_user_gives_wins(self):
        self.assertEqual(self.mode(), 'sandbox_mode = "workspace-write"  # -c')
        self.assertEqual(self.mode("-s", "read-only"), 'sandbox_mode = "read-only"  # --sandbox')
        self.assertEqual(self.mode("-c", "sandbox_mode=danger-full-access"),
                         'sandbox_mode = "danger-full-access"  # -c')
        self.assertEqual(self.mode("--full-auto"),
                         'sandbox_mode = "workspace-write"  # --full-auto')
        user = os.path.join(self.home, "config.toml")
        with open(user, "w") as f:
            f.write('sandbox_mode = "read-only"\n')
        self.assertEqual(self.mode(), f'sandbox_mode = "read-only"  # {user}:1')
        os.remove(user)
        # A project file may tighten the mode, never loosen it past the image's default.
        os.makedirs(os.path.join(self.repo, ".agentexec"))
        project = os.path.join(self.repo, ".agentexec", "config.toml")
        with open(project, "w") as f:
            f.write('sandbox_mode = "danger-full-access"\n')
        self.assertEqual(self.mode(), 'sandbox_mode = "workspace-write"  # -c')
        with open(project, "w") as f:
            f.write('sandbox_mode = "read-only"\n')
        self.assertEqual(self.mode(), f'sandbox_mode = "read-only"  # {project}:1')

    def test_other_commands_pass_through_without_a_report(self):
        for args in (["--version"], ["schema"], ["sandbox", "--", "true"],
                     ["exec", "sandbox", "--", "true"]):
            p = self.entry(*args)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertEqual(report_line(p.stderr), [], args)

    def test_one_line_sandbox_report(self):
        seccomp = re.search(r"^Seccomp:\s*(\d)", _read("/proc/self/status"), re.M)
        filtered = seccomp is not None and seccomp.group(1) == "2"
        masked = re.search(r" /proc/[^ ]", _read("/proc/self/mountinfo")) is not None
        no_mount = ("docker run --security-opt seccomp=unconfined --security-opt "
                    "systempaths=unconfined adds them" if filtered
                    else "mount namespace (unshare: Operation not permitted)")
        no_pid = ("docker run --security-opt systempaths=unconfined adds it" if masked
                  else "PID namespace (unshare: Operation not permitted)")
        cases = {
            "AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK":
                "agentexec image: sandbox: none: cannot enforce workspace-write: Landlock is not "
                "supported by this kernel (landlock_create_ruleset: Function not implemented). "
                "Run with -s danger-full-access where the container is the boundary, or enable "
                "Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock).; agentexec exits 3 unless run "
                "with -s danger-full-access",
            "AGENTEXEC_SANDBOX_FAKE_NO_USERNS":
                "agentexec image: sandbox: partial: Landlock, seccomp; no mount or PID namespace "
                "(.git writable, no private /dev/shm, host sockets reachable, leftover processes "
                "not ended): " + no_mount,
            "AGENTEXEC_SANDBOX_FAKE_NO_PIDNS":
                "agentexec image: sandbox: partial: Landlock, seccomp, mount namespace; no PID "
                "namespace (processes a command leaves running can outlive it): " + no_pid,
        }
        probe = subprocess.run([self.root + "/usr/local/bin/agentexec", "sandbox", "-s",
                                "workspace-write", "--", "true"], cwd=self.repo, env=self.env,
                               capture_output=True, text=True)
        if probe.returncode == 0 and "namespace" not in probe.stderr:
            cases[""] = "agentexec image: sandbox: full: Landlock, seccomp, mount and PID namespaces"
        # No probe where the run is chosen to have no sandbox.
        for args in (["-s", "danger-full-access"], ["--yolo"]):
            p = self.entry("--print-config", *args, env={"AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK": "1"})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(report_line(p.stderr), [
                "agentexec image: sandbox: none: danger-full-access was chosen, so the container "
                "is the boundary"], args)
        for fake, line in cases.items():
            # --print-config: the report comes before agentexec starts, and nothing runs.
            p = self.entry("--print-config", env={fake: "1"} if fake else {})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(report_line(p.stderr), [line], fake)

    def test_an_empty_workspace_with_nothing_mounted_names_work(self):
        # The repository mounted elsewhere (-v "$PWD:/src"): the run would start in an empty
        # /work; the entrypoint says where to mount it instead, before any request (exit 2).
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        p = self.entry("--json", "fix it", cwd=empty)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        lines = report_line(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertTrue(lines[0].startswith(
            f"agentexec image: workspace: {empty} is empty and nothing is mounted there: mount "
            "the repository at /work, the image's working directory (docker run -v "
            "\"$PWD:/work\" ...)"), lines[0])
        # -C names where it is: no complaint about the working directory.
        p = self.entry("--print-config", "-C", self.repo, cwd=empty)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_a_workspace_the_user_cannot_write_is_refused_unless_read_only(self):
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("running as another user than the workspace's owner needs root")
        os.chown(self.repo, 0, 0)
        os.chmod(self.repo, 0o755)
        os.chmod(self.home, 0o777)

        def as_1002(*args):
            return subprocess.run(["setpriv", "--reuid=1002", "--regid=1002", "--clear-groups",
                                   self.root + ENTRYPOINT, *args], cwd=self.repo,
                                  env={**self.env, "HOME": "/"}, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
        p = as_1002("--json", "fix it")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(report_line(p.stderr), [
            f"agentexec image: workspace: {self.repo} cannot be written: uid 1002 may not write "
            "it, it belongs to uid 0 (run as its owner: drop --user, or --user 0:0; or run with "
            "-s read-only)"])
        # A read-only run needs no write: it goes ahead.
        turns = support.write_turns(os.path.join(self.tmp, "turns.json"),
                                    [{"items": [{"type": "message", "text": "looked"}]}])
        os.chmod(turns, 0o644)
        p = as_1002("-s", "read-only", "--json", "-c", "model_provider=scripted", "-c",
                    f'model_providers.scripted.script="{turns}"', "look")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse([l for l in report_line(p.stderr) if "workspace" in l], p.stderr)
        self.assertIn('"text":"looked"', p.stdout)

    def test_becomes_the_workspace_owner_with_a_private_home(self):
        if os.geteuid() != 0:
            self.skipTest("dropping to the workspace's owner needs root")
        if shutil.which("setpriv") is None:
            self.skipTest("no setpriv (util-linux)")
        subprocess.run(["chown", "-R", "1001:1001", self.repo], check=True)
        turns = support.write_turns(os.path.join(self.tmp, "turns.json"), [
            {"items": [{"type": "custom_tool_call", "name": "apply_patch",
                        "input": "*** Begin Patch\n*** Add File: fixed.txt\n+fixed\n*** End Patch"}]},
            {"items": [{"type": "function_call", "name": "exec_command",
                        "arguments": {"cmd": "id -u; id -G; stat -c '%a %u' \"$HOME\"; echo \"$HOME\""}}]},
            {"items": [{"type": "message", "text": "done"}]}])
        env = {k: v for k, v in self.env.items() if k != "AGENTEXEC_HOME"}
        env["HOME"] = "/root"
        p = subprocess.run([self.root + ENTRYPOINT, "--json", "-c", "model_provider=scripted",
                            "-c", f'model_providers.scripted.script="{turns}"', "fix it"],
                           cwd=self.repo, env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.stat(os.path.join(self.repo, "fixed.txt"))
        self.assertEqual((st.st_uid, st.st_gid), (1001, 1001))
        events = [json.loads(l) for l in p.stdout.splitlines()]
        out = [e["item"]["aggregated_output"] for e in events if e["type"] == "item.completed"
               and e["item"]["type"] == "command_execution"][0].splitlines()
        self.assertEqual(out[:3], ["1001", "1001", "700 1001"])
        home = out[3]
        self.addCleanup(shutil.rmtree, home, True)
        self.assertRegex(home, r"^/var/tmp/agentexec-home\.[A-Za-z0-9]{8}$")
        # The session went there, out of the workspace.
        self.assertTrue(os.listdir(os.path.join(home, ".agentexec", "sessions")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
