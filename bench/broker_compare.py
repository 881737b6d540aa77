#!/usr/bin/env python3
"""What the credential broker costs: the same HTTPS requests from a command through agentexec's
proxy, to a host whose TLS it terminates (a [network.credentials] host: the request is read,
rewritten and sent over TLS of the proxy's own; the response filtered) and to the same host as
an opaque CONNECT tunnel (allowed, no credential: bytes relayed). Figures: a request on a new
connection each (200 in a row, Python's urllib, Bearer token), and a bulk download's
throughput (256 MiB, curl). Namespaces and servers as tests/net/credentials_test.py; nothing
leaves them. Nothing here asserts.

Usage: broker_compare.py AGENTEXEC [--runs=N]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "net"))
from netns import ALLOWED, Net, make_ca, reexec_inside, sh  # noqa: E402

TOKEN = "ghs_benchBENCHbench0123456789abcdefABCDEF"
REQUESTS = 200
BULK = 256 << 20
SEQUENTIAL = f"""python3 -c "
import os, time, urllib.request
req = urllib.request.Request('https://allowed.test/api', headers={{'Authorization': 'Bearer ' + os.environ['FORGE_TOKEN']}})
start = time.monotonic()
for _ in range({REQUESTS}):
    urllib.request.urlopen(req).read()
print((time.monotonic() - start) * 1000 / {REQUESTS})
" """
BULK_CMD = ("curl -sS -o /dev/null -w '%{speed_download}' "
            "-H \"Authorization: Bearer $FORGE_TOKEN\" https://allowed.test/files/big")


def run(agentexec, d, brokered):
    ws = tempfile.mkdtemp(dir=d)
    sh(f"git init -q {ws}")
    script = os.path.join(ws, ".turns.json")
    items = [{"items": [{"type": "function_call", "name": "exec_command",
                         "arguments": {"cmd": c, "yield_time_ms": 600000}}]}
             for c in (SEQUENTIAL, BULK_CMD)]
    items.append({"items": [{"type": "message", "text": "done"}]})
    with open(script, "w") as f:
        json.dump({"turns": items}, f)
    extra = (["-c", 'network.credentials.forge.hosts=["allowed.test"]',
              "-c", 'network.credentials.forge.env="FORGE_TOKEN"'] if brokered else
             ["-c", 'network.allow=["allowed.test"]',
              "-c", "shell_environment_policy.ignore_default_excludes=true",
              "-c", f'shell_environment_policy.set={{SSL_CERT_FILE="{d}/ca.pem"}}'])
    out = subprocess.run(
        [agentexec, "exec", "--json", "-s", "workspace-write", "-c", "model_provider=scripted",
         "-c", f'model_providers.scripted.script="{script}"', *extra, "go"], cwd=ws,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws, "SSL_CERT_FILE": f"{d}/ca.pem",
             "AGENTEXEC_NET_FAKE_HOSTS": f"allowed.test={ALLOWED}", "FORGE_TOKEN": TOKEN},
        capture_output=True, text=True, timeout=1800)
    outputs = [json.loads(l)["item"]["aggregated_output"] for l in out.stdout.splitlines()
               if '"command_execution"' in l and '"item.completed"' in l]
    return float(outputs[0]), float(outputs[1]) / (1 << 20)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    agentexec = os.path.abspath(sys.argv[1])
    runs = 3
    for i, arg in enumerate(sys.argv):
        if arg.startswith("--runs="):
            runs = int(arg.split("=", 1)[1])
        elif arg == "--runs":
            runs = int(sys.argv[i + 1])
    def skip(why):
        print(f"broker bench skipped: {why}")
        return 0

    code = reexec_inside(("unshare", "nsenter", "ip", "curl", "openssl", "git"), skip)
    if code is not None:
        return code
    d = tempfile.mkdtemp(prefix="ae-broker-bench-")
    try:
        make_ca(d)
        net = Net(d, servers=False)
        root = os.path.join(d, "git")
        os.makedirs(root)
        with open(os.path.join(root, "big"), "wb") as f:
            f.truncate(BULK)
        servers = subprocess.Popen(
            ["nsenter", "-t", str(net.pid), "-n", sys.executable,
             os.path.join(HERE, "..", "tests", "net", "credential_servers.py"), f"{d}/srv.pem",
             f"{d}/srv.key", root, os.path.join(d, "log"), TOKEN], stdout=subprocess.PIPE,
            text=True)
        assert servers.stdout.readline().strip() == "ready"
        figures = {"opaque tunnel": ([], []), "terminated (brokered)": ([], [])}
        for _ in range(runs):
            for name, brokered in (("opaque tunnel", False), ("terminated (brokered)", True)):
                ms, mib = run(agentexec, d, brokered)
                figures[name][0].append(ms)
                figures[name][1].append(mib)
        names = list(figures)
        print(f"| figure (median of {runs}) | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        print(f"| HTTPS request on a new connection, ms ({REQUESTS} in a row) | " + " | ".join(
            f"{statistics.median(figures[n][0]):.2f}" for n in names) + " |")
        print(f"| bulk download over HTTPS, MiB/s ({BULK >> 20} MiB) | " + " | ".join(
            f"{statistics.median(figures[n][1]):.0f}" for n in names) + " |")
        servers.kill()
        net.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
