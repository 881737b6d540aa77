"""`make install` and the .deb, run for real (cmake/Package.cmake, docs/CI.md).

dist_package (always runs):
  - `make install BUILD=<this build> PREFIX=/opt/agentexec DESTDIR=<temp>`: exactly the
    binary (0755, byte for byte the build's), the manual page (docs/agentexec.1, gzipped) and
    the docs (0644), nothing outside DESTDIR;
    the installed binary prints `agentexec <version> (<commit>)` and does a scripted run.
  - CPack's DEB generator over this build (`cpack -G DEB`, what `make deb` runs over the
    portable build): the control fields (`dpkg-deb -f`), the file list with owners and
    modes (`dpkg-deb -c`), dpkg-shlibdeps' Depends for a dynamic build, and --version from
    the unpacked tree.
dist_deb_portable (after `make deb`): the released .deb, dist/agentexec_<v>_<arch>.deb:
  the same checks, plus no Depends at all and a statically linked binary; skipped, saying
  why, until `make deb` has been run.
"""
import gzip
import os
import shutil
import platform
import re
import stat
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

ROOT = support.REPO_ROOT
BUILD = os.environ.get("AE_BUILD_DIR", "")
COMMIT = os.environ.get("AGENTEXEC_COMMIT", "")
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
DOCS = ["README.md", "CI.md", "SANDBOX.md", "CONFIG.md", "LICENSE", "THIRD_PARTY_NOTICES",
        "copyright", "changelog.gz"]
# Where each installed doc comes from; changelog.gz is made at configure time.
MAN = "share/man/man1/agentexec.1.gz"  # docs/agentexec.1 (scripts/gen-manpage.py), gzip -9n
DOC_SOURCES = {"README.md": "README.md", "LICENSE": "LICENSE",
               "THIRD_PARTY_NOTICES": "THIRD_PARTY_NOTICES", "copyright": "cmake/debian/copyright",
               "CI.md": "docs/CI.md", "SANDBOX.md": "docs/SANDBOX.md", "CONFIG.md": "docs/CONFIG.md"}


def tree(root):
    """{relative path: mode} of every file (not directory) under root."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


class Checks(unittest.TestCase):
    def setUp(self):
        self.tmp = support.scratch(self)

    def assert_version(self, binary, emulator=()):
        p = subprocess.run([*emulator, binary, "--version"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, f"agentexec {support.version()} ({COMMIT})\n")

    def assert_scripted_run(self, binary):
        turns = support.write_turns(os.path.join(self.tmp, "t.json"), [
            {"items": [{"type": "message", "text": "hello from the installed tree"}]}])
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns)
        env = support.base_env(self.tmp, home)
        p = subprocess.run([binary, "--json", "--skip-git-repo-check", "--ephemeral", "-C",
                            self.tmp, "-s", "read-only", "say hello"], env=env,
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"text":"hello from the installed tree"', p.stdout)

    def deb_checks(self, deb, arch, portable):
        """Fields, files and modes of a .deb; returns the unpacked root."""
        fields = {}
        for name in ("Package", "Version", "Architecture", "Maintainer", "Section",
                     "Recommends", "Depends", "Description"):
            p = subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            fields[name] = p.stdout.strip()
        self.assertEqual(fields["Package"], "agentexec")
        self.assertEqual(fields["Version"], support.version())
        self.assertEqual(fields["Architecture"], arch)
        self.assertEqual(fields["Section"], "devel")
        self.assertEqual(fields["Recommends"], "git, ca-certificates")
        self.assertRegex(fields["Maintainer"], r"^agentexec maintainers <[^>]+@[^>]+>$")
        self.assertTrue(fields["Description"].startswith(
            "Headless runner for AI coding agents in CI"), fields["Description"])
        if portable:
            self.assertEqual(fields["Depends"], "")  # statically linked
        else:  # dpkg-shlibdeps found the libraries the dynamic build links
            for lib in ("libc6", "libcurl4", "libseccomp2"):
                self.assertRegex(fields["Depends"], rf"(^|, ){lib} \(>= [^)]+\)")
        # `dpkg-deb -I` prints the same control file.
        info = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True).stdout
        for line in (" Package: agentexec", f" Version: {support.version()}",
                     f" Architecture: {arch}"):
            self.assertIn(line, info.splitlines())
        listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                                 check=True).stdout
        files = {}
        for line in listing.splitlines():
            perms, owner, _size, _date, _time, path = line.split(None, 5)
            self.assertEqual(owner, "root/root", line)
            if not perms.startswith("d"):
                files[path] = perms
        doc = "./usr/share/doc/agentexec/"
        expected = {"./usr/bin/agentexec": "-rwxr-xr-x", "./usr/" + MAN: "-rw-r--r--",
                    **{doc + d: "-rw-r--r--" for d in DOCS}}
        if portable:  # the static binary's lintian overrides (statically linked, bundled libs)
            expected["./usr/share/lintian/overrides/agentexec"] = "-rw-r--r--"
        self.assertEqual(files, expected)
        root = os.path.join(self.tmp, "unpacked")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        # The packaged binary is stripped (no symbol table), like the tarball's.
        sections = subprocess.run(["readelf", "-S", os.path.join(root, "usr/bin/agentexec")],
                                  capture_output=True, text=True, check=True).stdout
        self.assertNotIn(".symtab", sections)
        # An extended description below the summary line.
        description = subprocess.run(["dpkg-deb", "-f", deb, "Description"], capture_output=True,
                                     text=True, check=True).stdout
        self.assertIn("\n agentexec runs an AI coding agent", description)
        # Debian's clang 14 (the sanitizer test build) does not build PIE by default, GCC does;
        # lintian asks PIE of a dynamic binary only (the released one is static).
        header = subprocess.run(["readelf", "-h", os.path.join(root, "usr/bin/agentexec")],
                                capture_output=True, text=True, check=True).stdout
        not_pie = not portable and re.search(r"^\s*Type:\s+EXEC\b", header, re.M)
        self.lintian(deb, allowed=["hardening-no-pie"] if not_pie else [])
        return root

    def lintian(self, deb, allowed=()):
        """Debian's lintian finds no error and no warning in the package (no-manual-page
        among them before agentexec.1 was shipped) but the `allowed` tags; skipped when it is
        not installed."""
        if not shutil.which("lintian"):
            print("lintian not installed: not run (scripts/install-deps.sh test installs it)")
            return
        p = subprocess.run(["lintian", "--tag-display-limit", "0", deb], capture_output=True,
                           text=True, timeout=600)
        errors = [l for l in p.stdout.splitlines() if l.startswith(("E: ", "W: "))
                  and l.split()[2] not in allowed]
        self.assertEqual(errors, [], p.stdout + p.stderr)


class InstallAndDebTest(Checks):
    def test_make_install_into_destdir(self):
        dest = os.path.join(self.tmp, "dest")
        existed = os.path.exists("/opt/agentexec")
        p = subprocess.run(["make", "-C", ROOT, "install", f"BUILD={BUILD}",
                            "PREFIX=/opt/agentexec", f"DESTDIR={dest}"],
                           capture_output=True, text=True, timeout=600,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(tree(dest), {
            "opt/agentexec/bin/agentexec": 0o755, f"opt/agentexec/{MAN}": 0o644,
            **{f"opt/agentexec/share/doc/agentexec/{d}": 0o644 for d in DOCS}})
        self.assertEqual(gzip.decompress(read(os.path.join(dest, "opt/agentexec", MAN), "rb")),
                         read(os.path.join(ROOT, "docs/agentexec.1"), "rb"))
        binary = os.path.join(dest, "opt/agentexec/bin/agentexec")
        self.assertEqual(read(binary, "rb"), read(os.path.join(BUILD, "agentexec"), "rb"))
        changelog = gzip.decompress(read(os.path.join(dest, "opt/agentexec/share/doc/agentexec/"
                                                     "changelog.gz"), "rb")).decode()
        self.assertTrue(changelog.startswith(f"agentexec ({support.version()}) unstable; "), changelog)
        for d, rel in DOC_SOURCES.items():
            src = os.path.join(ROOT, rel)
            self.assertEqual(read(os.path.join(dest, "opt/agentexec/share/doc/agentexec", d)),
                             read(src))
        self.assertEqual(os.path.exists("/opt/agentexec"), existed, "wrote outside DESTDIR")
        self.assert_version(binary)
        self.assert_scripted_run(binary)

    def test_deb_of_this_build(self):
        out = os.path.join(self.tmp, "pkg")
        p = subprocess.run(["cpack", "--config", os.path.join(BUILD, "CPackConfig.cmake"),
                            "-G", "DEB", "-B", out], capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                              text=True, check=True).stdout.strip()
        deb = os.path.join(out, f"agentexec_{support.version()}_{arch}.deb")
        self.assertTrue(os.path.isfile(deb), os.listdir(out))
        root = self.deb_checks(deb, arch, portable=False)
        self.assert_version(os.path.join(root, "usr/bin/agentexec"))
        self.assert_scripted_run(os.path.join(root, "usr/bin/agentexec"))


class ReleaseDebTest(Checks):
    """dist/agentexec_<v>_<arch>.deb from `make deb` (the portable build)."""

    @classmethod
    def setUpClass(cls):
        cls.arch = DEB_ARCH.get(platform.machine(), platform.machine())
        cls.deb = os.path.join(ROOT, "dist", f"agentexec_{support.version()}_{cls.arch}.deb")
        if not os.path.isfile(cls.deb):
            support.skip(f"no {os.path.relpath(cls.deb, ROOT)}: run `make deb` first")

    def test_release_deb(self):
        root = self.deb_checks(self.deb, self.arch, portable=True)
        binary = os.path.join(root, "usr/bin/agentexec")
        r = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True)
        self.assertNotIn("INTERP", r.stdout)  # static: no program interpreter
        # The .deb is built from the same configure as the tarball; its commit is the one
        # the configure read, which is this checkout's unless the tree moved on since.
        p = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, rf"^agentexec {re.escape(support.version())} "
                                   r"\([0-9a-f]{12}\)\n$")


if __name__ == "__main__":
    which = sys.argv.pop(1) if len(sys.argv) > 1 else "install"
    cls = {"install": InstallAndDebTest, "release-deb": ReleaseDebTest}[which]
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
