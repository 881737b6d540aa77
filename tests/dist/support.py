"""Fixtures shared by the tests/dist tests: a release made from the built binary, a git
repository with a failing test (examples/demo/project), scripted-provider homes."""
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77  # ctest SKIP_RETURN_CODE


def skip(reason):
    print(f"SKIPPED: {reason}", flush=True)
    sys.exit(SKIP)


def agentexec_bin():
    b = os.environ.get("AGENTEXEC_BIN")
    if not b or not os.access(b, os.X_OK):
        raise SystemExit(f"AGENTEXEC_BIN not set or not executable: {b!r}")
    return b


def version():
    with open(os.path.join(REPO_ROOT, "CMakeLists.txt")) as f:
        text = f.read()
    return re.search(r"project\(agentexec VERSION ([0-9.]+)", text).group(1)


def make_release(binary, where, arch=None):
    """The layout `make dist` publishes: NAME.tar.gz holding NAME/agentexec, plus .sha256."""
    name = f"agentexec-{version()}-linux-{arch or platform.machine()}"
    stage = os.path.join(where, name)
    os.makedirs(stage)
    shutil.copy(binary, os.path.join(stage, "agentexec"))
    subprocess.run(["tar", "-C", where, "-czf", f"{name}.tar.gz", name], check=True, cwd=where)
    shutil.rmtree(stage)
    with open(os.path.join(where, f"{name}.tar.gz.sha256"), "w") as f:
        subprocess.run(["sha256sum", f"{name}.tar.gz"], check=True, cwd=where, stdout=f)
    return name


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def demo_repo(path):
    """A git repository whose test fails (the `make demo` project), on branch main."""
    shutil.copytree(os.path.join(REPO_ROOT, "examples/demo/project"), path)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "calc")
    return path


DEMO_TURNS = os.path.join(REPO_ROOT, "examples/demo/turns.json")


def write_turns(path, turns):
    with open(path, "w") as f:
        json.dump({"turns": turns}, f)
    return path


def scripted_home(path, turns_file):
    """An AGENTEXEC_HOME whose config selects the scripted provider: the workflows under
    test stay exactly as a user would write them."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.toml"), "w") as f:
        f.write('model_provider = "scripted"\n')
        f.write(f'[model_providers.scripted]\nscript = "{turns_file}"\n')
    return path


def base_env(tmp, home):
    """A clean job environment: PATH, HOME, AGENTEXEC_HOME; no API keys from outside."""
    env = {k: v for k, v in os.environ.items()
           if not re.search(r"KEY|TOKEN|SECRET", k) and not k.startswith(("GITHUB_", "CI_"))}
    env["HOME"] = os.path.join(tmp, "user-home")
    os.makedirs(env["HOME"], exist_ok=True)
    env["AGENTEXEC_HOME"] = home
    return env


class Tmp:
    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="ae-dist-")
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def scratch(case):
    """A temp directory that `case` removes whatever happens, a setUp that fails included
    (unittest gives such a setUp no tearDown, but runs its cleanups)."""
    t = Tmp()
    path = t.__enter__()
    case.addCleanup(t.__exit__, None, None, None)
    return path


class ReleaseCase(unittest.TestCase):
    """A scratch directory holding a local release of the built binary and a demo repository:
    what the action and the CI examples install from and run in."""

    def setUp(self):
        self.tmp = scratch(self)
        self.release = os.path.join(self.tmp, "release")
        os.makedirs(self.release)
        make_release(agentexec_bin(), self.release)
        self.repo = demo_repo(os.path.join(self.tmp, "repo"))

