"""Namespaces for the network tests and benchmarks: A, where the caller runs (agentexec and its
proxy), and B, "the internet", joined by a veth pair. B serves plain HTTP on :80 (GET /big?n=N:
N bytes through sendfile), HTTPS on :443 (a certificate of the caller's own CA, make_ca, naming
allowed.test and evil.test) and an SSH-like banner on :22, at ALLOWED and EVIL. The caller must
already be inside a user and network namespace of its own (unshare -Urn)."""
import json
import os
import shutil
import subprocess
import sys
import time

ALLOWED, EVIL = "198.51.100.2", "198.51.100.3"

SERVERS = r'''
import http.server, os, socket, socketserver, ssl, sys, threading
BIG = sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        # The TLS handshake in the request's own thread, not in accept: a client that opens a
        # connection and waits must not hold up the others.
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()
    def do_GET(self):
        if self.path.startswith("/big?n="):
            n = int(self.path[7:])
            self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
            with open(BIG, "rb") as f:
                sent = 0
                while sent < n:
                    k = os.sendfile(self.connection.fileno(), f.fileno(), sent % (64 << 20), min(n - sent, (64 << 20) - sent % (64 << 20)))
                    if k <= 0: break
                    sent += k
            return
        body = ("hello from %s via Host %s\n" % (self.server.server_address[0], self.headers.get("Host"))).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        got = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = ("got %d bytes: %s\n" % (len(got), got.decode(errors="replace"))).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024
    def handle_error(self, request, client_address):
        pass  # a client the proxy cut off mid-handshake is what the attacks do
def serve(addr, port, tls):
    s = S((addr, port), H)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1], sys.argv[2])
        s.socket = ctx.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=s.serve_forever, daemon=True).start()
def banner(addr):
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind((addr, 22)); l.listen(16)
    def run():
        while True:
            c, _ = l.accept(); c.sendall(b"SSH-2.0-test-banner\r\n"); c.close()
    threading.Thread(target=run, daemon=True).start()
for a in ("198.51.100.2", "198.51.100.3"):
    serve(a, 80, False); serve(a, 443, True); banner(a)
print("ready", flush=True)
threading.Event().wait()
'''


def turns(commands, yield_ms=30000):
    """A scripted model's turns (model_provider = "scripted"): each command an exec_command
    call, then "Done."."""
    items = [{"items": [{"type": "function_call", "name": "exec_command",
                         "arguments": {"cmd": c, "yield_time_ms": yield_ms}}]} for c in commands]
    items.append({"items": [{"type": "message", "text": "Done."}]})
    return json.dumps({"turns": items})


def skip_test(why):
    """A test's skip: the reason, and ctest's skip code (SKIP_RETURN_CODE 77)."""
    print(f"SKIP: {why}")
    return 77


def reexec_inside(tools, skip=skip_test, unshare="-Urn"):
    """Runs this script again inside a user and network namespace of its own (`unshare` flags)
    and returns its exit code; None when already inside. A missing tool or a namespace this
    host refuses: `skip` is called with the reason and its value returned."""
    if os.environ.get("AE_NET_INSIDE") == "1":
        return None
    for tool in tools:
        if shutil.which(tool) is None:
            return skip(f"{tool} is not installed (scripts/install-deps.sh test)")
    probe = subprocess.run(["unshare", unshare, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return skip(f"cannot make a user and network namespace here: {probe.stderr.strip()}")
    env = dict(os.environ, AE_NET_INSIDE="1")
    return subprocess.run(["unshare", unshare, "--fork", sys.executable, *sys.argv],
                          env=env).returncode


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, **kw)


def make_ca(d, names=("allowed.test", "evil.test")):
    sh(f"openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca -keyout {d}/ca.key "
       f"-out {d}/ca.pem 2>/dev/null")
    with open(f"{d}/ext.cnf", "w") as f:
        f.write("subjectAltName=" + ",".join(f"DNS:{n}" for n in names) + "\n")
    sh(f"openssl req -newkey rsa:2048 -nodes -subj /CN=allowed.test -keyout {d}/srv.key "
       f"-out {d}/srv.csr 2>/dev/null")
    sh(f"openssl x509 -req -in {d}/srv.csr -CA {d}/ca.pem -CAkey {d}/ca.key -CAcreateserial "
       f"-days 2 -extfile {d}/ext.cnf -out {d}/srv.pem 2>/dev/null")


class Net:
    """Namespace B and its servers, made from inside namespace A; with `loopback_service`, an
    HTTP server on A's own [::1]:8080 too (a service of "this host" commands must not reach);
    with `servers=False`, B without them, for the caller's own (`nsenter -t <self.pid> -n`)."""

    def __init__(self, d, loopback_service=False, servers=True):
        sh("ip link set lo up")
        self.holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
        pid = self.pid = self.holder.pid
        for _ in range(100):
            if os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                break
            time.sleep(0.01)
        sh(f"ip link add va type veth peer name vb netns {pid}")
        sh("ip addr add 198.51.100.1/24 dev va && ip link set va up")
        sh(f"nsenter -t {pid} -n sh -c 'ip link set lo up && ip addr add {ALLOWED}/24 dev vb && "
           f"ip addr add {EVIL}/24 dev vb && ip link set vb up'")
        with open(f"{d}/servers.py", "w") as f:
            f.write(SERVERS)
        with open(f"{d}/big", "wb") as f:
            f.truncate(64 << 20)
        self.local = self.servers = None
        if loopback_service:
            self.local = subprocess.Popen(
                [sys.executable, "-c", "import http.server, socket, sys\n"
                 "class S(http.server.HTTPServer): address_family = socket.AF_INET6\n"
                 "class H(http.server.BaseHTTPRequestHandler):\n"
                 "  def do_GET(self):\n"
                 "    b = ('hello from ::1 via Host %s\\n' % self.headers.get('Host')).encode()\n"
                 "    self.send_response(200); self.send_header('Content-Length', str(len(b)))\n"
                 "    self.end_headers(); self.wfile.write(b)\n"
                 "  def log_message(self, *a): pass\n"
                 "s = S(('::1', 8080), H); print('ready', flush=True); s.serve_forever()\n"],
                stdout=subprocess.PIPE, text=True)
            assert self.local.stdout.readline().strip() == "ready"
        if not servers:
            return
        self.servers = subprocess.Popen(
            ["nsenter", "-t", str(pid), "-n", sys.executable, f"{d}/servers.py", f"{d}/srv.pem",
             f"{d}/srv.key", f"{d}/big"], stdout=subprocess.PIPE, text=True)
        assert self.servers.stdout.readline().strip() == "ready"

    def close(self):
        for p in (self.local, self.servers, self.holder):
            if p is not None:
                p.kill()
                p.wait()


