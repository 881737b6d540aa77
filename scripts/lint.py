#!/usr/bin/env python3
"""The source checks `make test` runs (tests/lint) and `make lint` runs by hand.

  lint.py format               clang-format --dry-run --Werror over every tracked .cc and .h
  lint.py tidy BUILD_DIR       clang-tidy (.clang-tidy) over the product files whose content
                               differs from .clang-tidy-baseline's, through BUILD_DIR's
                               compile_commands.json; fails on a finding the baseline lacks
  lint.py baseline BUILD_DIR   clang-tidy over every product file; rewrites the baseline

clang-tidy takes seconds of CPU per file, so `make test` lints only what changed since the
baseline was written: a file's findings are compared with the ones it had then (by check and
message, not line, so moving code does not count as new). Both checks need the LLVM major
version the baseline and the formatting were made with (LLVM_MAJOR): another version formats
and warns differently, so they skip (exit 77) saying so rather than fail on its opinions.
"""
import collections
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, ".clang-tidy-baseline")
LLVM_MAJOR = 14
PRODUCT_DIRS = ("base", "batch", "cli", "config", "engine", "main", "net", "outputs", "runner", "sandbox")
SKIP = 77
FINDING = re.compile(r"^(/[^:]+):(\d+):(\d+): (?:warning|error): (.*) \[([\w.,-]+)\]$")


def tool(name):
    """The path of an LLVM tool of LLVM_MAJOR, or None with the reason printed."""
    for candidate in (f"{name}-{LLVM_MAJOR}", name):
        path = shutil.which(candidate)
        if not path:
            continue
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"version (\d+)\.", out)
        if m and int(m.group(1)) == LLVM_MAJOR:
            return path
        print(f"SKIP: {path} is LLVM {m.group(1) if m else '?'}, the checks are made with "
              f"LLVM {LLVM_MAJOR} (scripts/install-deps.sh test installs it)")
        return None
    print(f"SKIP: no {name} (scripts/install-deps.sh test installs it)")
    return None


def tracked(patterns):
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *patterns],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return [line for line in out.stdout.splitlines() if line]


def product_files():
    files = tracked([f"{d}/*.{ext}" for d in PRODUCT_DIRS for ext in ("cc", "h")])
    if files is None:  # not a git checkout (a source tarball): walk the folders
        files = []
        for d in PRODUCT_DIRS:
            for dirpath, _, names in os.walk(os.path.join(ROOT, d)):
                files += [os.path.relpath(os.path.join(dirpath, n), ROOT)
                          for n in names if n.endswith((".cc", ".h"))]
    return sorted(files)


def digest(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def read_baseline():
    hashes, findings = {}, collections.Counter()
    if not os.path.exists(BASELINE):
        return hashes, findings
    with open(BASELINE, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("file\t"):
                _, path, sha = line.split("\t")
                hashes[path] = sha
            elif line.startswith("finding\t"):
                findings[tuple(line.split("\t")[1:4])] += 1
    return hashes, findings


def run_tidy(clang_tidy, build_dir, units):
    """(path, check, message) -> count over `units`, each location counted once."""
    def one(unit):
        out = subprocess.run([clang_tidy, "-p", build_dir, "--quiet", unit], cwd=ROOT,
                             capture_output=True, text=True)
        return out.stdout

    seen = set()
    findings = collections.Counter()
    jobs = max(1, os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for text in pool.map(one, units):
            for line in text.splitlines():
                m = FINDING.match(line)
                if not m:
                    continue
                path = os.path.relpath(m.group(1), ROOT)
                if path.startswith(".."):
                    continue
                for check in m.group(5).split(","):
                    where = (path, m.group(2), m.group(3), check)
                    if where in seen:
                        continue
                    seen.add(where)
                    findings[(path, check, m.group(4))] += 1
    return findings


def clang_database(build_dir):
    """True when build_dir's compile commands are clang's: GCC's flags (-Wno-restrict) and
    warnings are not clang's, so linting through them would report the build, not the code."""
    path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.exists(path):
        print(f"SKIP: {path} is missing: configure the build first")
        return False
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    command = entries[0].get("command") or " ".join(entries[0].get("arguments", []))
    compiler = os.path.basename(command.split()[0]) if command else ""
    if "clang" not in compiler:
        print(f"SKIP: {build_dir} is built with {compiler or '?'}; clang-tidy reads a clang "
              "build's compile commands (make test's sanitizer build)")
        return False
    return True


def units_for(paths):
    """The translation units that lint `paths`: a .cc itself, a header through its .cc."""
    units = set()
    for path in paths:
        cc = path[:-2] + ".cc" if path.endswith(".h") else path
        if os.path.exists(os.path.join(ROOT, cc)):
            units.add(cc)
    return sorted(units)


def cmd_format():
    clang_format = tool("clang-format")
    if not clang_format:
        return SKIP
    files = tracked(["*.cc", "*.h"])
    if files is None:
        print("SKIP: not a git checkout, so no list of tracked files")
        return SKIP
    out = subprocess.run([clang_format, "--dry-run", "--Werror", *files], cwd=ROOT,
                         capture_output=True, text=True)
    bad = sorted({line.split(":")[0] for line in out.stderr.splitlines()
                  if "-Wclang-format-violations" in line})
    if out.returncode != 0:
        for path in bad:
            print(f"{path}: not clang-formatted (make format)")
        if not bad:
            print(out.stderr)
        return 1
    print(f"clang-format: {len(files)} files formatted")
    return 0


def cmd_tidy(build_dir):
    clang_tidy = tool("clang-tidy")
    if not clang_tidy:
        return SKIP
    if not clang_database(build_dir):
        return SKIP
    hashes, baseline = read_baseline()
    changed = [p for p in product_files() if hashes.get(p) != digest(p)]
    units = units_for(changed)
    start = time.monotonic()
    found = run_tidy(clang_tidy, build_dir, units)
    new = []
    for key, count in sorted(found.items()):
        if count > baseline.get(key, 0):
            new.append((key, count - baseline.get(key, 0)))
    for (path, check, message), extra in new:
        print(f"{path}: {message} [{check}]" + (f" (x{extra})" if extra > 1 else ""))
    print(f"clang-tidy: {len(units)} of {len(product_files())} product files changed since the "
          f"baseline, linted in {time.monotonic() - start:.0f} s; {len(new)} new finding(s)")
    if new:
        print("Fix them (clang-tidy -p BUILD --fix-errors FILE helps), or, for a false positive, "
              "a NOLINT(check) comment saying why.")
    return 1 if new else 0


def cmd_baseline(build_dir):
    clang_tidy = tool("clang-tidy")
    if not clang_tidy or not clang_database(build_dir):
        return SKIP
    files = product_files()
    found = run_tidy(clang_tidy, build_dir, [p for p in files if p.endswith(".cc")])
    write_baseline(files, found)
    print(f"{BASELINE}: {sum(found.values())} findings in {len(files)} files")
    return 0


def write_baseline(files, found):
    with open(BASELINE, "w", encoding="utf-8") as f:
        f.write("# clang-tidy findings the product files had when this was written "
                "(scripts/lint.py baseline, `make lint-baseline`),\n"
                "# and each file's content digest: `make test` lints the files whose digest "
                "differs and fails on findings not listed here.\n")
        for path in files:
            f.write(f"file\t{path}\t{digest(path)}\n")
        for (path, check, message), count in sorted(found.items()):
            for _ in range(count):
                f.write(f"finding\t{path}\t{check}\t{message}\n")


def main(argv):
    if len(argv) == 2 and argv[1] == "format":
        return cmd_format()
    if len(argv) == 3 and argv[1] == "tidy":
        return cmd_tidy(os.path.abspath(argv[2]))
    if len(argv) == 3 and argv[1] == "baseline":
        return cmd_baseline(os.path.abspath(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
