#!/usr/bin/env python3
"""Whole-process comparison of agentexec and `codex exec`, side by side, in one table.

Usage: compare.py --agentexec BIN [--agentexec-static BIN]
                  [--codex BIN | --codex-skip REASON] --out DIR [--runs N]
                  [--server tests/support/model_server.py]

Both binaries talk to the repository's loopback model server (--lenient), one fresh server per
run, each configured through its home (AGENTEXEC_HOME, CODEX_HOME) with a provider whose
base_url is that server. Every figure is the median of N runs, the two binaries alternating so
that the machine's load hits both alike. Wall time is measured around the process; peak RSS is
the ru_maxrss of the binary as GNU time (/usr/bin/time) reports it: the largest single process of
the tree (the binary itself, or a command it ran when that is larger). Not this script's own
wait4: a child forked from Python and then exec'd keeps the fork's high-water mark (/bin/true
"peaks" at ~14 MiB, the size of Python), while time is small. Without GNU time, the binary's
VmHWM read every 2 ms until it exits stands in (it can read low under load). A run that fails is
reported as failed, with its exit code; nothing here asserts: a benchmark never fails the build.

Prints one table (each row a ratio from this run) and writes DIR/compare.json.
"""

import argparse
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time

USAGE = {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50}


def message_turn(text):
    return {"items": [{"type": "message", "text": text}], "usage": USAGE}


def command_turn(cmd):
    return {"items": [{"type": "function_call", "name": "exec_command", "arguments": {"cmd": cmd}}],
            "usage": USAGE}


class Bench:
    def __init__(self, args):
        self.args = args
        self.ae = os.path.abspath(args.agentexec)
        # Rows 1-2 also measure the static binary of `make dist` (what the release tarball, the
        # .deb and the Docker image ship) when there is one.
        self.ae_static = os.path.abspath(args.agentexec_static) if args.agentexec_static else None
        self.codex = os.path.abspath(args.codex) if args.codex else None
        self.codex_skip_reason = args.codex_skip or ("" if self.codex else "codex not installed")
        # The reason is printed once under the table; the cells only say "skipped".
        self.codex_skip = "" if self.codex else "skipped"
        # codex refuses a CODEX_HOME under /tmp; /var/tmp is the same disk here.
        self.work = tempfile.mkdtemp(prefix="ae-compare-", dir="/var/tmp")
        # The write-heavy row needs a tmpfs workspace.
        self.shm = tempfile.mkdtemp(prefix="ae-compare-", dir="/dev/shm") \
            if os.path.isdir("/dev/shm") else None
        self.home = os.path.join(self.work, "home")
        os.makedirs(self.home)
        self.rows = []
        self.codex_sandbox = "workspace-write"

    def cleanup(self):
        shutil.rmtree(self.work, ignore_errors=True)
        if self.shm:
            shutil.rmtree(self.shm, ignore_errors=True)

    # ---------------------------------------------------------------- processes

    def env(self, port=None):
        # A fixed, small environment: the same for both binaries, no login files from the real
        # home (bash -lc would read them), no real credentials.
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8",
               "MOCK_KEY": "test-bench-key"}
        if port is not None:
            env["AGENTEXEC_HOME"] = self.provider_home("ae", port)
            env["CODEX_HOME"] = self.provider_home("codex", port)
        else:
            env["AGENTEXEC_HOME"] = self.provider_home("ae", 9)
            env["CODEX_HOME"] = self.provider_home("codex", 9)
        return env

    def provider_home(self, which, port):
        home = os.path.join(self.work, f"{which}-home")
        os.makedirs(home, exist_ok=True)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write(f'''model = "gpt-5.5"
model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "MOCK_KEY"
wire_api = "responses"
''')
        return home

    def measure(self, argv, cwd, env, timeout=300):
        """Runs argv; returns (wall seconds, peak RSS KiB, exit status, stdout text)."""
        out = tempfile.TemporaryFile()
        rss_file = None
        if GNU_TIME:
            rss_file = tempfile.NamedTemporaryFile(dir=self.work, prefix="rss-", delete=False)
            rss_file.close()
            argv = [GNU_TIME, "-f", "%M", "-o", rss_file.name] + list(argv)
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = start + timeout
        hwm = 0
        while True:
            if not GNU_TIME:
                hwm = max(hwm, vm_hwm_kib(proc.pid))
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                status = -1
                break
            time.sleep(0.002)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status) if status != -1 else -1
        if rss_file:
            with open(rss_file.name) as f:
                lines = f.read().split()  # "Command exited with non-zero status N" first
            os.unlink(rss_file.name)
            hwm = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        out.seek(0)
        return wall, hwm or None, proc.returncode, out.read().decode(errors="replace")

    def start_server(self, turns):
        d = tempfile.mkdtemp(dir=self.work, prefix="server-")
        script = os.path.join(d, "turns.json")
        with open(script, "w") as f:
            json.dump({"turns": turns}, f)
        port_file = os.path.join(d, "port")
        proc = subprocess.Popen([sys.executable, self.args.server, "--script", script,
                                 "--port-file", port_file, "--lenient", "--max-seconds", "600"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.05)
        with open(port_file) as f:
            return proc, int(f.read().strip())

    def exec_argv(self, who, prompt, sandbox):
        if who in ("agentexec", "agentexec-static"):
            binary = self.ae if who == "agentexec" else self.ae_static
            return [binary, "--json", "-s", sandbox, "--ephemeral", prompt]
        # codex syncs its plugin marketplace from github.com at start-up (git ls-remote);
        # switched off so that the bench stays on loopback. Everything else is its default.
        return [self.codex, "exec", "--json", "-s", sandbox, "--ephemeral",
                "--skip-git-repo-check", "--disable", "plugins", "--disable", "remote_plugin",
                prompt]

    def run_agent(self, who, turns, cwd, sandbox, answer):
        """One agent run against a fresh server; (wall, rss, error or None)."""
        server, port = self.start_server(turns)
        try:
            wall, rss, rc, out = self.measure(self.exec_argv(who, "do the task", sandbox), cwd,
                                              self.env(port))
        finally:
            server.terminate()
            server.wait()
        err = None
        if rc != 0:
            err = f"exit {rc}"
        elif answer not in out:
            err = "no final answer"
        return wall, rss, err

    def series(self, who_list, fn, runs):
        """Alternates the runners; returns {who: {"wall": [...], "rss": [...], "error": str}}."""
        res = {w: {"wall": [], "rss": [], "error": None} for w in who_list}
        for _ in range(runs):
            for w in who_list:
                if res[w]["error"]:
                    continue
                wall, rss, err = fn(w)
                if err:
                    res[w]["error"] = err
                else:
                    res[w]["wall"].append(wall)
                    res[w]["rss"].append(rss)
        return res

    def runners(self):
        return ["agentexec", "codex"] if self.codex else ["agentexec"]

    def runners_with_static(self):
        return self.runners() + (["agentexec-static"] if self.ae_static else [])

    def static_rows(self, row, what, res):
        """Rows 1-2 again for the static `make dist` binary, against the same codex runs."""
        if not self.ae_static:
            return
        self.pair_rows(row, what + " [static `make dist` binary]",
                       {"agentexec": res["agentexec-static"], "codex": res.get("codex")})

    # ---------------------------------------------------------------- workspaces

    def repo(self, name, dirs=0, base=None):
        path = os.path.join(base or self.work, name)
        os.makedirs(path)
        subprocess.run(["git", "init", "-q", path], check=True)
        with open(os.path.join(path, "README.md"), "w") as f:
            f.write("hello\n")
        subprocess.run(["git", "-C", path, "add", "-A"], check=True)
        subprocess.run(["git", "-C", path, "-c", "user.name=b", "-c", "user.email=b@example.invalid",
                        "commit", "-qm", "init"], check=True)
        for i in range(dirs):
            os.makedirs(os.path.join(path, "tree", f"d{i // 100:03d}", f"e{i % 100:02d}"))
        return path

    def fresh(self, prefix):
        self.count = getattr(self, "count", 0) + 1
        return f"{prefix}-{self.count}"

    # ---------------------------------------------------------------- rows

    @staticmethod
    def med(xs):
        return statistics.median(xs) if xs else None

    def add(self, row, what, ae, codex, ratio, note=""):
        self.rows.append({"row": row, "what": what, "agentexec": ae, "codex": codex,
                          "ratio": ratio, "note": note})

    def pair_rows(self, row, what, res, per=1, rss=True):
        a, c = res["agentexec"], res.get("codex")
        aw = self.med(a["wall"])
        ar = self.med(a["rss"])
        cw = cr = None
        cnote = self.codex_skip
        if c is not None:
            cw, cr = self.med(c["wall"]), self.med(c["rss"])
            if c["error"]:
                cnote = f"codex failed: {c['error']}"
        if a["error"]:
            self.add(row, what + ": wall", f"failed: {a['error']}", fmt_s(cw, per), None)
            return
        self.add(row, what + ": wall" + (f" per turn (/{per})" if per > 1 else ""),
                 fmt_s(aw, per), fmt_s(cw, per) if cw else cnote,
                 ratio(cw, aw), f"codex/agentexec, median of {len(a['wall'])}")
        if rss:
            self.add(row, what + ": peak RSS" + (" (whole run)" if per > 1 else ""), fmt_kib(ar), fmt_kib(cr) if cr else cnote,
                     ratio(cr, ar), "codex/agentexec")
        return {"agentexec": {"wall_s": aw, "rss_kib": ar, "runs": a["wall"]},
                "codex": {"wall_s": cw, "rss_kib": cr, "runs": c["wall"] if c else []}}

    def row1_one_message(self):
        repo = self.repo("one-message")
        turns = [message_turn("Hello from the bench.")]
        res = self.series(self.runners_with_static(),
                          lambda w: self.run_agent(w, turns, repo, "workspace-write",
                                                   "Hello from the bench."), self.args.runs)
        self.pair_rows(1, "one message", res)
        self.static_rows(1, "one message", res)

    def codex_sandbox_works(self):
        if not self.codex:
            return
        probe = self.repo("probe")
        _, _, rc, _ = self.measure([self.codex, "sandbox", "-c", 'sandbox_mode="workspace-write"',
                                    "--", "sh", "-c", "touch ok && test -f ok"], probe, self.env())
        if rc != 0:
            self.codex_sandbox = "danger-full-access"

    def row2_two_commands(self):
        def once(w):
            repo = self.repo(self.fresh(f"two-commands-{w}"))
            turns = [command_turn("echo one > a.txt && ls"), command_turn("cat a.txt | wc -c"),
                     message_turn("Both commands ran.")]
            sandbox = self.codex_sandbox if w == "codex" else "workspace-write"
            wall, rss, err = self.run_agent(w, turns, repo, sandbox, "Both commands ran.")
            if not err and not os.path.exists(os.path.join(repo, "a.txt")):
                err = "the command did not run"
            return wall, rss, err

        res = self.series(self.runners_with_static(), once, self.args.runs)
        label = "two sandboxed commands (workspace-write)"
        if self.codex_sandbox != "workspace-write":
            label += "; codex UNSANDBOXED (danger-full-access): its sandbox cannot run here"
        self.pair_rows(2, label, res)
        self.static_rows(2, "two sandboxed commands", res)

    def row3_many_dirs(self):
        empty = self.repo("empty")
        t0 = time.monotonic()
        big = self.repo("15k-dirs", dirs=15000)
        made = time.monotonic() - t0
        runs = self.args.runs

        def sandbox_argv(w):
            if w == "agentexec":
                return [self.ae, "sandbox", "-s", "workspace-write", "--", "true"]
            return [self.codex, "sandbox", "-c", 'sandbox_mode="workspace-write"', "--", "true"]

        out = {}
        # A run waits for the search for nested repositories before its first command, not
        # before its first model request: "one command" shows what that wait costs.
        for kind in ("sandbox true", "one message", "one command"):
            walls = {(w, ws): [] for w in self.runners() for ws in ("empty", "15k")}
            errors = {}
            for _ in range(runs):
                for w in self.runners():
                    for ws, path in (("empty", empty), ("15k", big)):
                        if (w, ws) in errors:
                            continue
                        if kind == "sandbox true":
                            wall, _, rc, _ = self.measure(sandbox_argv(w), path, self.env())
                            err = f"exit {rc}" if rc else None
                        elif kind == "one message":
                            wall, _, err = self.run_agent(w, [message_turn("Hi.")], path,
                                                          "workspace-write", "Hi.")
                        else:
                            sandbox = "workspace-write" if w == "agentexec" else self.codex_sandbox
                            wall, _, err = self.run_agent(
                                w, [command_turn("true"), message_turn("Ran it.")], path,
                                sandbox, "Ran it.")
                        if err:
                            errors[(w, ws)] = err
                        else:
                            walls[(w, ws)].append(wall)
            cells = {}
            for w in ("agentexec", "codex"):
                if w == "codex" and not self.codex:
                    cells[w] = (self.codex_skip, None)
                    continue
                e, b = self.med(walls[(w, "empty")]), self.med(walls[(w, "15k")])
                if (w, "empty") in errors or (w, "15k") in errors:
                    cells[w] = ("failed: " + (errors.get((w, "empty")) or errors[(w, "15k")]), None)
                else:
                    cells[w] = (f"{fmt_s(e)} -> {fmt_s(b)}", ratio(b, e))
            self.add(3, f"start-up, empty vs 15,000 dirs: {kind}",
                     cells["agentexec"][0] + (f" ({cells['agentexec'][1]})"
                                              if cells["agentexec"][1] else ""),
                     cells["codex"][0] + (f" ({cells['codex'][1]})" if cells["codex"][1] else ""),
                     cells["agentexec"][1],
                     "15k/empty for agentexec (codex's own ratio in its column)")
            out[kind] = {f"{w}/{ws}": v for (w, ws), v in walls.items()}
        out["tree_created_s"] = made
        return out

    def row4_write_heavy(self):
        """A write-heavy command (create+delete 4,000 files) in a whole exec run, the command
        given by a scripted turn as in the other rows: the sandboxed run (workspace-write)
        against the same run unconfined (danger-full-access), under -a never (the default:
        no write watch) and -a on-failure (whose rerun needs the watch's record), for
        agentexec and codex exec alike; the bare command for reference."""
        base = self.shm or self.work
        ws = self.repo("write-heavy", base=base)
        loop = ("import os\n"
                "for i in range(4000):\n"
                "    p = f'f{i}'\n"
                "    with open(p, 'w') as f: f.write('x')\n"
                "    os.unlink(p)\n")
        # The command as both agents run it (bash -lc), and as the bare reference runs it.
        cmd = "python3 -c '" + loop.replace("'", "'\\''") + "'"
        answer = "Wrote and deleted."
        turns = [command_turn(cmd), message_turn(answer)]

        def agent(who, sandbox, approval):
            argv = self.exec_argv(who, "do the task", sandbox)
            argv[-1:-1] = (["-a", approval] if who == "agentexec"
                           else ["-c", f'approval_policy="{approval}"'])
            server, port = self.start_server(turns)
            try:
                wall, _, rc, out = self.measure(argv, ws, self.env(port))
            finally:
                server.terminate()
                server.wait()
            if rc != 0:
                return wall, f"exit {rc}"
            if answer not in out:
                return wall, "no final answer"
            if '"exit_code":0' not in out.replace(" ", ""):
                return wall, "the command failed"
            return wall, None

        codex_confined = self.codex_sandbox
        configs = {("bare", "", ""): None}
        for approval in ("never", "on-failure"):
            for who in self.runners():
                confined = "workspace-write" if who == "agentexec" else codex_confined
                configs[(who, "confined", approval)] = (confined, approval)
                configs[(who, "unconfined", approval)] = ("danger-full-access", approval)
        walls = {k: [] for k in configs}
        errors = {}
        for _ in range(self.args.runs):
            for key, cfg in configs.items():
                if key in errors:
                    continue
                if cfg is None:
                    wall, _, rc, _ = self.measure(["bash", "-lc", cmd], ws, self.env())
                    err = f"exit {rc}" if rc else None
                else:
                    wall, err = agent(key[0], *cfg)
                if err:
                    errors[key] = err
                else:
                    walls[key].append(wall)

        bare = self.med(walls[("bare", "", "")])
        where = "tmpfs" if self.shm else "disk (no /dev/shm)"
        for approval in ("never", "on-failure"):
            cells = {}
            for who in ("agentexec", "codex"):
                c, u = (who, "confined", approval), (who, "unconfined", approval)
                if c not in configs:
                    cells[who] = (self.codex_skip, None)
                elif c in errors or u in errors:
                    cells[who] = ("failed: " + (errors.get(c) or errors[u]), None)
                else:
                    mc, mu = self.med(walls[c]), self.med(walls[u])
                    cells[who] = (f"{fmt_s(mc)} vs {fmt_s(mu)} ({ratio(mc, mu)})", ratio(mc, mu))
            label = (f"write-heavy: create+delete 4,000 files on {where}, -a {approval}: "
                     "sandboxed run vs unconfined run")
            if self.codex and codex_confined != "workspace-write":
                label += "; codex UNSANDBOXED (danger-full-access): its sandbox cannot run here"
            self.add(4, label, cells["agentexec"][0], cells["codex"][0], cells["agentexec"][1],
                     "workspace-write/danger-full-access for agentexec (codex's own in its "
                     f"column); the bare command: {fmt_s(bare)}")
            if self.codex:
                a, c = ("agentexec", "confined", approval), ("codex", "confined", approval)
                if a not in errors and c not in errors:
                    ma, mc = self.med(walls[a]), self.med(walls[c])
                    self.add(4, f"write-heavy, -a {approval}: sandboxed run, agentexec vs codex",
                             fmt_s(ma), fmt_s(mc), ratio(mc, ma),
                             f"codex/agentexec, median of {len(walls[a])}")
        return {"/".join(k for k in key if k): v for key, v in walls.items()}

    def row5_long_thread(self):
        turns = [command_turn(f"echo step {i}") for i in range(50)]
        turns.append(message_turn("Fifty steps done."))

        def once(w):
            repo = self.repo(self.fresh(f"long-{w}"))
            sandbox = "workspace-write" if w == "agentexec" else self.codex_sandbox
            return self.run_agent(w, turns, repo, sandbox, "Fifty steps done.")

        res = self.series(self.runners(), once, max(1, min(self.args.runs, 3)))
        label = "long thread: 50 commands + answer (51 requests)"
        if self.codex_sandbox != "workspace-write":
            label += "; codex UNSANDBOXED (danger-full-access)"
        self.pair_rows(5, label, res, per=51)

    def batch_once(self, tasks, jobs):
        """One `agentexec batch run` of `tasks` one-message tasks over one local repository:
        (wall seconds, sum of the tasks' own duration_ms in seconds, the orchestrator's peak
        RSS in KiB from its VmHWM, error, the orchestrator's own CPU seconds). The CPU time is
        batch's process alone (utime + stime of /proc/PID/stat, its children not included):
        its overhead, task by task, beside the clones, gits and agentexecs it runs."""
        base = self.fresh(f"batch-{tasks}")
        work = os.path.join(self.work, base)
        os.makedirs(work)
        src = self.repo("src", base=work)
        script = os.path.join(work, "turns.json")
        with open(script, "w") as f:
            json.dump({"turns": [message_turn("Done.")]}, f)
        manifest = os.path.join(work, "manifest.jsonl")
        with open(manifest, "w") as f:
            for i in range(tasks):
                # A one-message task changes nothing, and is not expected to (else: no_change).
                f.write(json.dumps({"id": f"t{i:04d}", "repo": src, "prompt": "answer",
                                    "expect_change": False}) + "\n")
        out = os.path.join(work, "out")
        argv = [self.ae, "batch", "run", manifest, "--out", out, "-j", str(jobs),
                "--work-dir", os.path.join(work, "clones"), "-s", "workspace-write",
                "-c", "model_provider=scripted",
                "-c", f'model_providers.scripted.script="{script}"']
        start = time.monotonic()
        # stderr to a file: batch writes a progress line per event (500 tasks fill a pipe no
        # one reads until the end, and then batch waits on it).
        errlog = open(os.path.join(work, "batch.stderr"), "w+")
        proc = subprocess.Popen(argv, cwd=work, env=self.env(), stdout=subprocess.DEVNULL,
                                stderr=errlog, text=True)
        hwm, cpu = 0, 0.0
        ticks = os.sysconf("SC_CLK_TCK")
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as st:
                    for line in st:
                        if line.startswith("VmHWM:"):
                            hwm = max(hwm, int(line.split()[1]))
                with open(f"/proc/{proc.pid}/stat") as st:
                    fields = st.read().rsplit(")", 1)[1].split()
                    cpu = max(cpu, (int(fields[11]) + int(fields[12])) / ticks)
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.02)
        wall = time.monotonic() - start
        errlog.seek(0)
        err = errlog.read()
        errlog.close()
        if proc.returncode != 0:
            return wall, None, hwm, f"exit {proc.returncode}: {err.strip()[-200:]}", cpu
        own = 0
        with open(os.path.join(out, "results.jsonl")) as f:
            for line in f:
                own += json.loads(line).get("duration_ms", 0)
        return wall, own / 1000.0, hwm, None, cpu

    def row6_batch(self):
        try:
            helptext = subprocess.run([self.ae, "batch", "--help"], capture_output=True, text=True,
                                      timeout=30, env=self.env()).stdout
        except (OSError, subprocess.TimeoutExpired):
            helptext = ""
        if "batch run" not in helptext:
            self.add(6, "agentexec batch throughput", "n/a: batch not built", "n/a", None)
            return None
        jobs = 8
        # #39: batch's own cost must stay flat from 50 to 500 tasks (memory: it streams the
        # manifest and the records; CPU: the progress line and the heartbeat are per event).
        small = self.batch_once(50, jobs)
        large = self.batch_once(500, jobs)
        for n, (wall, own, hwm, err, cpu) in ((50, small), (500, large)):
            if err:
                self.add(6, f"batch: {n} one-message tasks at -j {jobs}", f"failed: {err}",
                         "n/a (codex has no batch)", None)
                continue
            self.add(6, f"batch: {n} one-message tasks at -j {jobs}: wall vs the tasks' own time",
                     f"{fmt_s(wall)} vs {fmt_s(own)} summed ({ratio(own, wall)} in parallel on "
                     f"{os.cpu_count()} CPUs); {fmt_s(wall, n)} a task",
                     "n/a (codex has no batch)", ratio(own, wall))
        if not small[3] and not large[3]:
            self.add(6, "batch: orchestrator peak RSS, 50 -> 500 tasks",
                     f"{fmt_kib(small[2])} -> {fmt_kib(large[2])} "
                     f"({ratio(large[2], small[2])} for 10x the tasks)",
                     "n/a", ratio(large[2], small[2]))
            per_small, per_large = small[4] * 1000 / 50, large[4] * 1000 / 500
            self.add(6, "batch: orchestrator's own CPU per task, 50 -> 500 tasks",
                     f"{per_small:.2f} -> {per_large:.2f} ms a task",
                     "n/a", ratio(per_large, per_small) if per_small else None)
        return {"small": small, "large": large}


GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def vm_hwm_kib(pid):
    """The process's peak RSS so far in KiB (0 once it has exited: a zombie has no memory)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def fmt_s(v, per=1):
    if v is None:
        return "-"
    v = v / per
    return f"{v * 1000:.0f} ms" if v >= 0.01 else f"{v * 1000:.1f} ms"


def fmt_kib(v):
    return "-" if v is None else f"{v / 1024:.1f} MiB"


def ratio(num, den):
    if not num or not den:
        return None
    return f"{num / den:.2f}x"


def count_dirs(root):
    """Directories below root on its file system: the sandbox searches /tmp, a writable root of
    every workspace-write run, for nested repositories, so a used machine's /tmp is part of
    every sandboxed figure here, agentexec's "empty workspace" included."""
    count = 0
    dev = os.lstat(root).st_dev
    for parent, dirs, _ in os.walk(root, onerror=lambda e: None):
        dirs[:] = [d for d in dirs if same_device(os.path.join(parent, d), dev)]
        count += len(dirs)
    return count


def same_device(path, dev):
    """A directory (not a symlink to one, which os.walk lists too) on the device `dev`."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_dev == dev


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agentexec", required=True)
    p.add_argument("--codex")
    # The static binary of `make dist`, measured in rows 1-2 next to --agentexec; by default
    # build-dist/agentexec of this tree when it exists ("" to leave it out).
    default_static = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build-dist",
                                  "agentexec")
    p.add_argument("--agentexec-static",
                   default=default_static if os.access(default_static, os.X_OK) else "")
    p.add_argument("--codex-skip", default="")
    p.add_argument("--codex-version", default="")
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rows", default="1,2,3,4,5,6",
                   help="which rows to run, comma-separated (all by default)")
    p.add_argument("--server", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "tests", "support", "model_server.py"))
    args = p.parse_args()
    b = Bench(args)
    raw = {}
    row_number = {"one_message": 1, "two_commands": 2, "many_dirs": 3, "write_heavy": 4,
                  "long_thread": 5, "batch": 6}
    with open("/proc/loadavg") as f:
        load_start = " ".join(f.read().split()[:3])
    tmp_dirs = count_dirs("/tmp")
    try:
        b.codex_sandbox_works()
        for name, fn in (("one_message", b.row1_one_message), ("two_commands", b.row2_two_commands),
                         ("many_dirs", b.row3_many_dirs), ("write_heavy", b.row4_write_heavy),
                         ("long_thread", b.row5_long_thread), ("batch", b.row6_batch)):
            if str(row_number[name]) not in args.rows.split(","):
                continue
            print(f"  running: {name}", file=sys.stderr, flush=True)
            raw[name] = fn()
    finally:
        b.cleanup()

    head = ("#", "what", "agentexec", "codex", "ratio", "how")
    lines = [head] + [(str(r["row"]), r["what"], r["agentexec"], r["codex"] or "-",
                       r["ratio"] or "-", r["note"]) for r in b.rows]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for line in lines[1:]:
        print("| " + " | ".join(line) + " |")

    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    model = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    machine = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "nproc": os.cpu_count(), "cpu": model, "kernel": os.uname().release,
               "loadavg_at_start": load_start, "loadavg_at_end": load, "runs": args.runs,
               "codex": args.codex_version or b.codex_skip_reason,
               "codex_sandbox": b.codex_sandbox, "tmp_directories": tmp_dirs}
    if b.codex_skip_reason:
        print(f"\ncodex: {b.codex_skip_reason}")
    else:
        print(f"\ncodex: {args.codex_version} (sandbox {b.codex_sandbox}; plugin sync off)")
    print(f"\nmachine: {machine['nproc']} CPUs, {model}, kernel {machine['kernel']}, "
          f"load average {load_start} at the start, {load} at the end, {machine['date']}; "
          f"/tmp holds {tmp_dirs:,} directories (a workspace-write run with a tool call "
          "searches it)")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compare.json"), "w") as f:
        json.dump({"machine": machine, "rows": b.rows, "raw": raw}, f, indent=1)
    print(f"results: {os.path.join(args.out, 'compare.json')}")


if __name__ == "__main__":
    main()
