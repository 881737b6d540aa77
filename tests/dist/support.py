"""Fixtures shared by the tests/dist tests: a release made from the built binary, a git
repository with a failing test (examples/demo/project), scripted-provider homes."""
import atexit
import http.server
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77  # ctest SKIP_RETURN_CODE


def skip(reason):
    """Skips the whole file (ctest's SKIP_RETURN_CODE): for a module or setUpClass. Inside a
    test method unittest takes the SystemExit for an error: use self.skipTest there."""
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
    """The layout `make dist` publishes: NAME.tar.gz holding NAME/agentexec, README.md, LICENSE,
    THIRD_PARTY_NOTICES and agentexec.1, plus .sha256."""
    name = f"agentexec-{version()}-linux-{arch or platform.machine()}"
    stage = os.path.join(where, name)
    os.makedirs(stage)
    shutil.copy(binary, os.path.join(stage, "agentexec"))
    for doc in ("README.md", "LICENSE", "THIRD_PARTY_NOTICES", "docs/agentexec.1"):
        shutil.copy(os.path.join(REPO_ROOT, doc), stage)
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


def _inside(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


_OUTSIDE = []


def outside_dir():
    """A scratch directory outside /tmp and $TMPDIR, the writable roots every confined command
    has besides its workspace (under the build directory, else ~/.cache), removed at exit: a
    job's HOME, where scripts/ci/run.sh keeps its private directory, as on a real runner."""
    if not _OUTSIDE:
        roots = ["/tmp"] + ([os.environ["TMPDIR"]] if os.environ.get("TMPDIR") else [])
        for base in (os.environ.get("AE_BUILD_DIR"), os.path.expanduser("~/.cache")):
            if base and not any(_inside(base, r) for r in roots):
                os.makedirs(base, exist_ok=True)
                _OUTSIDE.append(tempfile.mkdtemp(prefix="ae-dist-outside-", dir=base))
                atexit.register(shutil.rmtree, _OUTSIDE[0], True)
                break
        else:
            skip("no scratch directory outside /tmp and $TMPDIR")
    return tempfile.mkdtemp(dir=_OUTSIDE[0])


def base_env(tmp, home):
    """A clean job environment: PATH, HOME (outside the sandbox's writable roots, as a
    runner's is), AGENTEXEC_HOME; no API keys from outside."""
    env = {k: v for k, v in os.environ.items()
           if not re.search(r"KEY|TOKEN|SECRET", k) and not k.startswith(("GITHUB_", "CI_"))}
    env.pop("XDG_RUNTIME_DIR", None)
    # A fresh machine has none: the demo's tests then leave __pycache__ behind, which
    # changes.patch must not carry (scripts/ci/artefacts.gitignore).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["HOME"] = os.path.join(outside_dir(), "user-home")
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



HOOK = "#!/bin/sh\nexit 0\n"


def attack_turns(path, dirs, victims):
    """A run whose one command, confined by workspace-write, plants links in each of `dirs`
    (globs; the CI step's output directories, old and new) for the files scripts/ci/run.sh
    writes or reads back after the run: exit-code and summary.md to files outside,
    changes.patch to the repository's pre-commit hook, events.jsonl to /proc/self/environ.
    It prints "planted DIR" for each directory it could write."""
    script = "\n".join([
        "for d in " + " ".join(dirs) + "; do",
        '  case "$d" in *"*"*) continue ;; esac',
        '  mkdir -p "$d" || continue',
        '  rm -f "$d/exit-code" "$d/summary.md" "$d/changes.patch" "$d/events.jsonl"',
        f'  ln -s {victims[0]} "$d/exit-code" || continue',
        f'  ln -s {victims[1]} "$d/summary.md"',
        '  ln -s "$PWD/.git/hooks/pre-commit" "$d/changes.patch"',
        '  ln -s /proc/self/environ "$d/events.jsonl"',
        '  echo "planted $d"',
        "done 2>&1; true"])
    return write_turns(path, [
        {"items": [{"type": "function_call", "name": "exec_command",
                    "arguments": {"cmd": script}}]},
        {"items": [{"type": "message", "text": "planted what I could"}]}])


def key_scan_turns(path, *key_parts):
    """A run whose one command (meant for danger-full-access) reads /proc/PID/environ and
    /proc/PID/cmdline of every process it can, and the writable memory of scripts/ci/run.sh's
    shells where it may (ptrace access: root, or no Yama), and prints which hold the key (the parts
    joined; given in parts so that the command's own command line and the events do not hold
    it): "key found in: COMM PART[ (run.sh)], ..." or "none", after "parent environ readable:
    yes" (the scan is not blind). "(run.sh)" marks scripts/ci/run.sh's shell."""
    scan = "\n".join([
        "python3 - <<'EOF'",
        "import glob, os",
        f"key = ({' + '.join(repr(p) for p in key_parts)}).encode()",
        "found = []",
        "for d in glob.glob('/proc/[0-9]*'):",
        "    if int(d[6:]) == os.getpid():",
        "        continue",
        "    for part in ('environ', 'cmdline'):",
        "        try:",
        "            with open(f'{d}/{part}', 'rb') as f:",
        "                data = f.read()",
        "            with open(f'{d}/cmdline', 'rb') as f:",
        "                argv = f.read().split(b'\\0')",
        "            with open(f'{d}/comm') as f:",
        "                comm = f.read().strip()",
        "        except OSError:",
        "            continue",
        "        if key in data:",
        "            run_sh = any(a.endswith(b'/ci/run.sh') for a in argv)",
        "            found.append(f'{comm} {part}' + (' (run.sh)' if run_sh else ''))",
        "    if not any(a.endswith(b'/ci/run.sh') for a in argv):",
        "        continue",
        "    try:",
        "        with open(f'{d}/maps') as maps, open(f'{d}/mem', 'rb', 0) as mem:",
        "            for line in maps:",
        "                lo, hi = (int(x, 16) for x in line.split()[0].split('-'))",
        "                if line.split()[1].startswith('rw'):",
        "                    mem.seek(lo)",
        "                    if key in mem.read(hi - lo):",
        "                        found.append(f'{comm} mem (run.sh)')",
        "    except OSError:",
        "        continue",
        "with open(f'/proc/{os.getppid()}/environ', 'rb') as f:",
        "    print('parent environ readable:', 'yes' if b'PATH=' in f.read() else 'no')",
        "print('key found in:', ', '.join(sorted(found)) or 'none')",
        "EOF"])
    return write_turns(path, [
        {"items": [{"type": "function_call", "name": "exec_command",
                    "arguments": {"cmd": scan}}]},
        {"items": [{"type": "message", "text": "scanned"}]}])


def attack_setup(case, repo):
    """Two files outside every writable root and an executable pre-commit hook: what the
    planted links point at."""
    outside = outside_dir()
    victims = [os.path.join(outside, "victim-1"), os.path.join(outside, "victim-2")]
    for v in victims:
        with open(v, "w") as f:
            f.write("precious\n")
    hook = os.path.join(repo, ".git", "hooks", "pre-commit")
    with open(hook, "w") as f:
        f.write(HOOK)
    os.chmod(hook, 0o755)
    return victims, hook


def assert_nothing_written_through(case, victims, hook):
    for v in victims:
        with open(v) as f:
            case.assertEqual(f.read(), "precious\n", v)
    with open(hook) as f:
        case.assertEqual(f.read(), HOOK)


def assert_no_links_no_environment(case, directory, secret):
    """The artifact directory holds regular files only, none with an environment in it."""
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        case.assertFalse(os.path.islink(path), path)
        case.assertTrue(os.path.isfile(path), path)
        with open(path, "rb") as f:
            data = f.read()
        case.assertNotIn(secret.encode(), data, path)
        case.assertNotRegex(data, rb"(^|\0)PATH=", path)


def hostile_git_config(repo, marker):
    """Configuration and attributes naming a program that appends its role to `marker`:
    each thing git may run in a repository it did not make (core.fsmonitor, filter drivers,
    diff.external, textconv, a diff driver's command, the pager, the signature program, the
    hooks). Returns the environment variables of the same kind."""
    prog = os.path.join(os.path.dirname(marker), "marker-prog")
    with open(prog, "w") as f:
        f.write(f'#!/bin/sh\necho "$1" >> {marker}\nexec cat\n')
    os.chmod(prog, 0o755)
    hooks = os.path.join(os.path.dirname(marker), "hooks")
    os.makedirs(hooks, exist_ok=True)
    for hook in ("pre-commit", "post-index-change", "reference-transaction"):
        with open(os.path.join(hooks, hook), "w") as f:
            f.write(f'#!/bin/sh\necho hook-{hook} >> {marker}\n')
        os.chmod(os.path.join(hooks, hook), 0o755)
    with open(os.path.join(repo, ".gitattributes"), "a") as f:
        f.write("*.py diff=x filter=f\n*.md filter=a.b\n")
    git(repo, "add", ".gitattributes")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "attrs")
    for key, value in [("core.fsmonitor", f"{prog} fsmonitor"), ("core.pager", f"{prog} pager"),
                       ("diff.external", f"{prog} external"),
                       ("diff.x.textconv", f"{prog} textconv"), ("diff.x.command", f"{prog} command"),
                       ("filter.f.clean", f"{prog} clean"), ("filter.f.smudge", f"{prog} smudge"),
                       ("filter.f.required", "true"),
                       ("filter.a.b.process", f"{prog} process"),
                       ("log.showSignature", "true"), ("gpg.program", f"{prog} gpg"),
                       ("core.hooksPath", hooks)]:
        git(repo, "config", key, value)
    return {"GIT_EXTERNAL_DIFF": f"{prog} env-external", "GIT_PAGER": f"{prog} env-pager",
            "PAGER": f"{prog} env-pager2", "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor={prog} env-params'",
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "filter.f.clean",
            "GIT_CONFIG_VALUE_0": f"{prog} env-count"}


class PermissionApi(http.server.BaseHTTPRequestHandler):
    """GitHub's GET /repos/OWNER/REPO/collaborators/USER/permission, answered from `answers`
    (user -> permission); an unknown user gets 404, "broken" a body that is not JSON."""
    answers = {}
    requests = []

    def do_GET(self):
        PermissionApi.requests.append((self.path, self.headers.get("Authorization")))
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


def permission_api(case, answers):
    """Starts PermissionApi on loopback for the test `case` (stopped at its cleanup) with
    `answers`; the Action reaches it as github.api_url = f"http://127.0.0.1:{server_port}"."""
    PermissionApi.answers = answers
    PermissionApi.requests = []
    server = http.server.HTTPServer(("127.0.0.1", 0), PermissionApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    case.addCleanup(server.server_close)
    case.addCleanup(server.shutdown)
    return server
