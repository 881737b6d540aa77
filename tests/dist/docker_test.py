"""The Dockerfile, without a Docker engine: its structure is checked, the runtime stage's
RUN step runs for real in bash with apt-get/useradd/git replaced by recorders, and the
runtime root is assembled from its COPY steps (the binary as `make dist` packs it) and then
used: the entrypoint prints its version and the CI scripts run from where the image keeps
them (the GitLab component's path)."""
import os
import re
import shutil
import subprocess
import sys
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
        if instr == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", args, re.I)
            out.append((m.group(2), m.group(1), []))
        else:
            out[-1][2].append((instr, args.strip()))
    return out


class DockerfileTest(unittest.TestCase):
    def test_structure(self):
        s = stages()
        self.assertEqual([(n, b) for n, b, _ in s], [("build", "debian:12"),
                                                     ("runtime", "debian:12-slim")])
        runtime = s[1][2]
        self.assertIn(("ENTRYPOINT", '["agentexec"]'), runtime)
        users = [a for i, a in runtime if i == "USER"]
        self.assertEqual(users, ["agent"])
        build_runs = " ".join(a for i, a in s[0][2] if i == "RUN")
        self.assertIn("./scripts/install-deps.sh dist", build_runs)
        self.assertIn("make dist", build_runs)
        ignore = _read(os.path.join(support.REPO_ROOT, ".dockerignore")).split()
        for p in (".git", "build*/", "dist/"):
            self.assertIn(p, ignore)

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
            # COPY: --from=build takes /out/ as the build stage fills it from the dist tarball.
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
            for _, args in [r for r in runtime if r[0] == "COPY"]:
                parts = args.split()
                if parts[0].startswith("--from=build"):
                    src = os.path.join(out, os.path.relpath(parts[1], "/out"))
                    parts = parts[1:]
                else:
                    src = os.path.join(support.REPO_ROOT, parts[0])
                dst = root + parts[1]
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)
            for doc in ("LICENSE", "THIRD_PARTY_NOTICES"):
                self.assertEqual(_read(root + "/usr/share/doc/agentexec/" + doc),
                                 _read(os.path.join(support.REPO_ROOT, doc)))
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
