"""The portable binary (make dist): ldd shows no dynamic dependencies, and it runs in an
empty root (a chroot in a private mount namespace holding only the binary, a CA bundle and
a scratch directory; no /bin/sh, no libraries) through a scripted run and a plain-HTTP run
against tests/support/model_server.py on loopback. The dynamic build is the contrast: ldd
lists libcurl, and in the same empty root it cannot even start.

A binary for another architecture (make dist ARCH=aarch64, ctest dist_portable_aarch64) runs
the same tests through qemu-user: the static qemu-<arch>-static is copied into the empty
root and starts the binary, so the root still holds no libraries. qemu-user refuses seccomp
(PR_SET_SECCOMP), so those runs use danger-full-access, as the native ones do; the sandbox
itself is tested on real aarch64 hardware by the release workflow's `make test`."""
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

PORTABLE = os.environ.get("AGENTEXEC_PORTABLE_BIN", "")
ELF_MACHINES = {62: "x86_64", 183: "aarch64"}  # e_machine: EM_X86_64, EM_AARCH64


def elf_arch(path):
    with open(path, "rb") as f:
        head = f.read(20)
    if head[:4] != b"\x7fELF":
        return None
    return ELF_MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")


def in_root(root, argv, env, emulator=()):
    """Runs argv (paths inside root) chrooted, as root in a new mount namespace if we are
    root, else in a user namespace mapping us to root; emulator (a path in root) first when
    the binary is for another architecture."""
    # Absolute paths: argv's PATH is the empty root's, not ours.
    unshare, chroot = shutil.which("unshare"), shutil.which("chroot")
    pre = [unshare, "--mount"] if os.geteuid() == 0 else [unshare, "--mount", "--user",
                                                           "--map-root-user"]
    return subprocess.run(pre + [chroot, root, *emulator] + argv, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


class PortableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not PORTABLE or not os.access(PORTABLE, os.X_OK):
            arch = os.environ.get("AGENTEXEC_PORTABLE_ARCH", "")
            support.skip(f"no portable binary at {PORTABLE!r}: run `make dist"
                         + (f" ARCH={arch}" if arch else "") + "` first")
        cls.arch = elf_arch(PORTABLE)
        cls.qemu = None
        cls.emulator = ()  # ("/qemu",) in the root for a foreign binary
        if cls.arch != platform.machine():
            cls.qemu = shutil.which(f"qemu-{cls.arch}-static")
            if not cls.qemu:
                support.skip(f"{PORTABLE} is for {cls.arch}, this machine is "
                             f"{platform.machine()}, and qemu-{cls.arch}-static is not "
                             "installed (scripts/install-deps.sh dist-aarch64)")
            cls.emulator = ("/qemu",)
        probe = subprocess.run(["unshare", "--mount", "true"] if os.geteuid() == 0 else
                               ["unshare", "--mount", "--user", "--map-root-user", "true"],
                               capture_output=True)
        if probe.returncode != 0:
            support.skip("cannot create a mount namespace here for the empty root: "
                         + probe.stderr.decode().strip())

    def setUp(self):
        self.tmp = support.scratch(self)
        self.root = os.path.join(self.tmp, "root")
        for d in ("work", "home", "etc/ssl/certs", "tmp"):
            os.makedirs(os.path.join(self.root, d))
        shutil.copy(PORTABLE, os.path.join(self.root, "agentexec"))
        if self.qemu:
            shutil.copy(self.qemu, os.path.join(self.root, "qemu"))
        if os.path.exists("/etc/ssl/certs/ca-certificates.crt"):
            shutil.copy("/etc/ssl/certs/ca-certificates.crt",
                        os.path.join(self.root, "etc/ssl/certs/ca-certificates.crt"))
        self.env = {"HOME": "/home", "AGENTEXEC_HOME": "/home", "PATH": "/"}

    def run_in_root(self, config, turns, args=()):
        with open(os.path.join(self.root, "home/config.toml"), "w") as f:
            f.write(config)
        shutil.copy(turns, os.path.join(self.root, "home/turns.json"))
        return in_root(self.root, ["/agentexec", "--json", "--skip-git-repo-check", "-C", "/work",
                                   "-s", "danger-full-access", *args, "say hello"], self.env,
                       self.emulator)

    def test_ldd_shows_a_static_binary(self):
        p = subprocess.run(["ldd", PORTABLE], capture_output=True, text=True)
        self.assertIn("not a dynamic executable", p.stdout + p.stderr)
        # ldd also says that of a foreign binary it cannot read: the ELF header says static
        # (no PT_INTERP program header, type 3).
        r = subprocess.run(["readelf", "-lW", PORTABLE], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("INTERP", r.stdout)
        self.assertIn("LOAD", r.stdout)
        d = subprocess.run(["ldd", support.agentexec_bin()], capture_output=True, text=True)
        self.assertIn("libcurl", d.stdout)

    def test_version_in_the_empty_root(self):
        p = in_root(self.root, ["/agentexec", "--version"], self.env, self.emulator)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^agentexec " + support.version().replace(".", r"\.")
                         + r" \(([0-9a-f]{12}|unknown)\)\n$")

    def test_the_dynamic_build_cannot_start_there(self):
        shutil.copy(support.agentexec_bin(), os.path.join(self.root, "dynamic"))
        p = in_root(self.root, ["/dynamic", "--version"], self.env)  # this machine's build
        self.assertNotEqual(p.returncode, 0)

    def test_scripted_run_in_the_empty_root(self):
        turns = support.write_turns(os.path.join(self.tmp, "t.json"), [
            {"items": [{"type": "message", "text": "hello from an empty root"}]}])
        p = self.run_in_root('model_provider = "scripted"\n[model_providers.scripted]\n'
                             'script = "/home/turns.json"\n', turns)
        self.assertEqual(p.returncode, 0, p.stderr)
        events = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual([e["type"] for e in events],
                         ["thread.started", "turn.started", "item.completed", "turn.completed"])
        self.assertEqual(events[2]["item"]["text"], "hello from an empty root")

    def test_http_run_in_the_empty_root(self):
        turns = support.write_turns(os.path.join(self.tmp, "h.json"), [
            {"items": [{"type": "message", "text": "hello over loopback"}]}])
        port_file = os.path.join(self.tmp, "port")
        server = subprocess.Popen([sys.executable, os.path.join(
            support.REPO_ROOT, "tests/support/model_server.py"), "--script", turns,
            "--port-file", port_file, "--max-seconds", "120"])
        try:
            for _ in range(600):
                if os.path.exists(port_file):
                    break
                time.sleep(0.05)
            port = int(open(port_file).read())
            self.env["MOCK_KEY"] = "test-key"
            p = self.run_in_root(
                'model_provider = "mock"\n[model_providers.mock]\nname = "mock"\n'
                f'base_url = "http://localhost:{port}/v1"\nenv_key = "MOCK_KEY"\n'
                'wire_api = "responses"\nrequest_max_retries = 0\n', turns)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)
        self.assertEqual(p.returncode, 0, p.stderr)
        events = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(events[-2]["item"]["text"], "hello over loopback")


if __name__ == "__main__":
    unittest.main(verbosity=2)
