#!/usr/bin/env python3
"""The egress proxy's cost, side by side with srt (@anthropic-ai/sandbox-runtime).

Runs in namespaces of its own (tests/net/netns.py: an unprivileged user, network and mount
namespace; nothing leaves them): "the internet" is a veth peer serving HTTP. Three ways run the
same commands, each as a whole process:
  direct   agentexec sandbox, network_access = true (no proxy)
  proxy    agentexec sandbox --allow-host allowed.test (its own namespace, agentexec's proxy)
  srt      srt with allowedDomains ["allowed.test"] (bubblewrap, its proxies over socat)
Figures: a bulk download's throughput (curl, plain HTTP, 1 GiB), the time a connection costs
(200 sequential requests, a new connection each, Python's urllib), and the proxy process's
resident memory with 1 and with 400 idle CONNECT tunnels open. Nothing here asserts.

Usage: net_compare.py AGENTEXEC [SRT] [--runs N]
"""
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "net"))
from netns import ALLOWED, Net, make_ca, reexec_inside, sh  # noqa: E402

BULK_BYTES = 1 << 30
SEQUENTIAL = 200
TUNNELS = 400

SEQUENTIAL_CLIENT = f"""
import time, urllib.request
opener = urllib.request.build_opener()
start = time.monotonic()
for _ in range({SEQUENTIAL}):
    opener.open("http://allowed.test/").read()
print((time.monotonic() - start) * 1000 / {SEQUENTIAL})
"""

# Opens N CONNECT tunnels through HTTPS_PROXY (or straight to the host without one), says when
# they are all open, and holds them until its stdin closes.
TUNNEL_CLIENT = """
import base64, os, socket, sys, urllib.parse
n = int(sys.argv[1])
proxy = os.environ.get("HTTPS_PROXY") or os.environ.get("https_proxy")
held = []
for _ in range(n):
    if proxy:
        u = urllib.parse.urlsplit(proxy)
        s = socket.create_connection((u.hostname, u.port))
        auth = b""
        if u.username is not None:  # srt's proxies want the credentials its URL carries
            token = base64.b64encode(f"{urllib.parse.unquote(u.username)}:"
                                     f"{urllib.parse.unquote(u.password or '')}".encode())
            auth = b"Proxy-Authorization: Basic " + token + b"\\r\\n"
        s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\\r\\nHost: allowed.test:443\\r\\n" + auth +
                  b"\\r\\n")
        reply = b""
        while b"\\r\\n\\r\\n" not in reply:
            reply += s.recv(1024)
        assert b" 200 " in reply.split(b"\\r\\n")[0], reply
    else:
        s = socket.create_connection(("allowed.test", 443))
    held.append(s)
print("open", flush=True)
sys.stdin.read()
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Bench:
    def __init__(self, ae, srt, runs, d):
        self.ae, self.srt, self.runs, self.dir = ae, srt, runs, d
        self.ws = os.path.join(d, "ws")
        os.makedirs(self.ws)
        sh(f"git init -q {self.ws}")
        settings = {"network": {"allowedDomains": ["allowed.test"], "deniedDomains": []},
                    "filesystem": {"denyRead": [], "allowWrite": [self.ws, "/tmp"],
                                   "denyWrite": []}}
        self.srt_settings = os.path.join(d, "srt.json")
        with open(self.srt_settings, "w") as f:
            json.dump(settings, f)

    def argv(self, how, command):
        if how == "direct":
            return [self.ae, "sandbox", "-s", "workspace-write", "-c",
                    "sandbox_workspace_write.network_access=true", "--", *command]
        if how == "proxy":
            return [self.ae, "sandbox", "-s", "workspace-write", "--allow-host", "allowed.test",
                    "--", *command]
        # srt reads options anywhere on its line: the command goes as one string (-c).
        return [self.srt, "--settings", self.srt_settings, "-c", shlex.join(command)]

    def ways(self):
        return ["direct", "proxy"] + (["srt"] if self.srt else [])

    def run(self, how, command):
        env = {"PATH": os.environ["PATH"], "HOME": self.dir,
               "AGENTEXEC_HOME": os.path.join(self.dir, "home")}
        out = subprocess.run(self.argv(how, command), cwd=self.ws, env=env, capture_output=True,
                             text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"{how}: exit {out.returncode}: {out.stderr.strip()[-300:]}")
        return out.stdout

    def bulk(self):
        cmd = ["curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}",
               f"http://allowed.test/big?n={BULK_BYTES}"]
        return {how: [float(self.run(how, cmd)) / (1 << 20) for _ in range(self.runs)]
                for how in self.ways()}

    def sequential(self):
        cmd = ["python3", "-c", SEQUENTIAL_CLIENT]
        return {how: [float(self.run(how, cmd)) for _ in range(self.runs)] for how in self.ways()}

    def memory(self, how, n):
        """The proxy's resident memory (KiB) with `n` tunnels open: agentexec sandbox's own
        process for `proxy`, srt's node for `srt`."""
        env = {"PATH": os.environ["PATH"], "HOME": self.dir,
               "AGENTEXEC_HOME": os.path.join(self.dir, "home")}
        p = subprocess.Popen(self.argv(how, ["python3", "-c", TUNNEL_CLIENT, str(n)]),
                             cwd=self.ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline().strip()
        if line != "open":
            p.kill()
            raise RuntimeError(f"{how}: the tunnels did not open: {line!r}")
        time.sleep(0.3)
        kib = rss_kib(p.pid)
        p.stdin.close()
        p.wait(timeout=60)
        return kib


def fmt(xs):
    return f"{statistics.median(xs):.1f}"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--runs")]
    runs = 3
    for a in sys.argv[1:]:
        if a.startswith("--runs="):
            runs = int(a.split("=", 1)[1])
    ae = os.path.abspath(args[0])
    srt = os.path.abspath(args[1]) if len(args) > 1 and args[1] else ""
    def skip(why):
        print(f"net bench skipped: {why}")
        return 0

    code = reexec_inside(("unshare", "nsenter", "ip", "curl", "openssl"), skip, "-Urnm")
    if code is not None:
        return code
    d = tempfile.mkdtemp(prefix="ae-net-bench-")
    make_ca(d)
    net = Net(d)
    # Both proxies resolve through the system's resolver: the name, in this mount namespace only.
    with open(os.path.join(d, "hosts"), "w") as f:
        f.write(f"127.0.0.1 localhost\n::1 localhost\n{ALLOWED} allowed.test\n")
    sh(f"mount --bind {d}/hosts /etc/hosts")
    try:
        b = Bench(ae, srt, runs, d)
        ways = b.ways()
        bulk = b.bulk()
        seq = b.sequential()
        mem = {how: (b.memory(how, 1), b.memory(how, TUNNELS)) for how in ways if how != "direct"}
    finally:
        net.close()
        shutil.rmtree(d, ignore_errors=True)
    print(f"| figure (median of {runs}) | " + " | ".join(ways) + " |")
    print("|---|" + "---:|" * len(ways))
    print("| bulk download, MiB/s | " + " | ".join(fmt(bulk[w]) for w in ways) + " |")
    print("| bulk, share of direct | " + " | ".join(
        f"{statistics.median(bulk[w]) / statistics.median(bulk['direct']) * 100:.0f}%"
        for w in ways) + " |")
    print(f"| a connection + request, ms ({SEQUENTIAL} in a row) | " +
          " | ".join(fmt(seq[w]) for w in ways) + " |")
    print("| added per connection vs direct, ms | " + " | ".join(
        f"{statistics.median(seq[w]) - statistics.median(seq['direct']):+.2f}" for w in ways) + " |")
    print(f"| proxy RSS, 1 tunnel -> {TUNNELS}, MiB | – | " + " | ".join(
        f"{mem[w][0] / 1024:.1f} -> {mem[w][1] / 1024:.1f}" for w in ways if w != "direct") + " |")
    print(f"| per tunnel, KiB | – | " + " | ".join(
        f"{(mem[w][1] - mem[w][0]) / (TUNNELS - 1):.1f}" for w in ways if w != "direct") + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
