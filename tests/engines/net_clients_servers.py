"""What tests/engines/net_clients_test.py serves in namespace B ("the internet"), made at test
time with no network: a bare git repository, a tiny pure-Python wheel with its PEP 503 index,
two tiny npm packages, and, run as a program, the HTTPS server for the first two:

  net_clients_servers.py CERT KEY DOCROOT GIT_ROOT LOG ADDRESS...

serves on port 443 of each ADDRESS, over TLS with CERT/KEY: `git http-backend` (smart HTTP,
GIT_PROJECT_ROOT=GIT_ROOT, GIT_HTTP_EXPORT_ALL) for every path in a NAME.git folder
(/repo.git/...), the files of DOCROOT for the rest (the index at /simple/, the wheel under
/packages/). Every request is logged to LOG as "ADDRESS METHOD PATH STATUS", so a test can tell
which server a client reached. Prints "ready" once listening."""
import base64
import hashlib
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import urllib.parse
import zipfile

README = "hello from the test's git server\n"
WHEEL_NAME, WHEEL_VERSION = "ae_tiny_wheel", "1.0.0"
NPM_LEAF, NPM_TOP, NPM_VERSION = "ae-leaf", "ae-tiny", "1.0.0"


def _git(*args, cwd=None):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True,
                   capture_output=True)


def make_git_repo(root):
    """root/repo.git: a bare repository whose one commit ("init") holds README."""
    work = os.path.join(root, "work")
    _git("init", "-q", work)
    with open(os.path.join(work, "README"), "w") as f:
        f.write(README)
    _git("add", "README", cwd=work)
    _git("commit", "-qm", "init", cwd=work)
    _git("clone", "-q", "--bare", work, os.path.join(root, "repo.git"))


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel_index(docroot):
    """A py3-none-any wheel of one module, `ae_tiny_wheel` (hello() names it), built by hand as
    the zip the wheel format says (METADATA, WHEEL, RECORD), and its PEP 503 index:
    docroot/simple/index.html, docroot/simple/ae-tiny-wheel/index.html -> ../../packages/."""
    dist = f"{WHEEL_NAME}-{WHEEL_VERSION}.dist-info"
    files = {
        f"{WHEEL_NAME}/__init__.py":
            f'def hello():\n    return "hello from {WHEEL_NAME} {WHEEL_VERSION}"\n',
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {WHEEL_NAME}\n"
                            f"Version: {WHEEL_VERSION}\nSummary: a test wheel\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: net_clients_servers\n"
                         "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{_record_hash(text.encode())},{len(text.encode())}\n"
                     for name, text in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = record
    filename = f"{WHEEL_NAME}-{WHEEL_VERSION}-py3-none-any.whl"
    os.makedirs(os.path.join(docroot, "packages"), exist_ok=True)
    path = os.path.join(docroot, "packages", filename)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    project = WHEEL_NAME.replace("_", "-")  # PEP 503's normalised name
    os.makedirs(os.path.join(docroot, "simple", project), exist_ok=True)
    with open(os.path.join(docroot, "simple", "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html>\n<html><body><a href="{project}/">{project}</a></body></html>\n')
    with open(os.path.join(docroot, "simple", project, "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html>\n<html><body><a href="../../packages/{filename}#sha256={digest}">'
                f"{filename}</a></body></html>\n")
    return project


def make_npm_packages(root):
    """root/ae-leaf and root/ae-tiny: two package folders to publish; ae-tiny depends on
    ae-leaf ^1.0.0, and its hello() names both."""
    leaf, top = os.path.join(root, NPM_LEAF), os.path.join(root, NPM_TOP)
    for d, pkg, code in (
        (leaf, {"name": NPM_LEAF, "version": NPM_VERSION, "main": "index.js", "license": "MIT",
                "description": "a test package"},
         f'exports.name = () => "{NPM_LEAF} {NPM_VERSION}";\n'),
        (top, {"name": NPM_TOP, "version": NPM_VERSION, "main": "index.js", "license": "MIT",
               "description": "a test package", "dependencies": {NPM_LEAF: "^1.0.0"}},
         f'exports.hello = () => "hello from {NPM_TOP} {NPM_VERSION} (" + '
         f'require("{NPM_LEAF}").name() + ")";\n')):
        os.makedirs(d)
        with open(os.path.join(d, "package.json"), "w") as f:
            json.dump(pkg, f)
        with open(os.path.join(d, "index.js"), "w") as f:
            f.write(code)
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(f"# {pkg['name']}\n")
    return leaf, top


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, request, client_address, server):
        super().__init__(request, client_address, server, directory=server.docroot)

    def is_git(self):
        return self.path.split("?")[0].split("/")[1].endswith(".git")

    def setup(self):
        # The TLS handshake in the request's own thread, not in accept.
        self.request.do_handshake()
        super().setup()

    def log_request(self, code="-", size="-"):
        with self.server.lock, open(self.server.log, "a") as f:
            f.write(f"{self.server.server_address[0]} {self.command} {self.path} {code}\n")

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.is_git():
            return self.git()
        return super().do_GET()

    def do_POST(self):
        if self.is_git():
            return self.git()
        self.send_error(405)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def git(self):
        """`git http-backend` as a CGI program (git-http-backend(1))."""
        path, _, query = self.path.partition("?")
        body = self.body()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "GIT_PROJECT_ROOT": self.server.git_root, "GIT_HTTP_EXPORT_ALL": "1",
               "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.0",
               "REQUEST_METHOD": self.command,
               "PATH_INFO": urllib.parse.unquote(path), "QUERY_STRING": query,
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": self.client_address[0]}
        for header in ("Git-Protocol", "Content-Encoding"):
            if self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, sep, payload = out.partition(b"\r\n\r\n")
        if not sep:
            head, _, payload = out.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client cut off mid-handshake


def main():
    cert, key, docroot, git_root, log, *addresses = sys.argv[1:]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    lock = threading.Lock()
    for address in addresses:
        s = Server((address, 443), Handler)
        s.docroot, s.git_root, s.log, s.lock = docroot, git_root, log, lock
        s.socket = ctx.wrap_socket(s.socket, server_side=True, do_handshake_on_connect=False)
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
