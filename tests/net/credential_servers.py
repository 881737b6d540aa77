"""What tests/net/credentials_test.py serves in namespace B, over TLS with the test CA's
certificate (netns.make_ca) on port 443 of allowed.test and evil.test, and in the clear on
port 80:

  /api      needs `Authorization: Bearer TOKEN` (401 otherwise) and then reflects the request,
            the way an error page or an echo service would: every header in the body, the
            token in a Set-Cookie header; /api/gzip the same body gzip-compressed, whatever
            the request's Accept-Encoding; /api/chunk in 7-byte chunks;
  /NAME.git `git http-backend` (tests/engines/net_clients_servers.py), needing Basic auth with
            the password TOKEN;
  /files/F  the file GIT_ROOT/F (a bulk download for bench/broker_compare.py);
  anything else on evil.test: logged (the exfiltration listener).

Every request is logged to LOG as "ADDRESS METHOD PATH AUTH", AUTH saying whether the real
token came (real), something else (other) or nothing (none).

  credential_servers.py CERT KEY GIT_ROOT LOG TOKEN
"""
import base64
import gzip
import os
import ssl
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engines"))
import net_clients_servers as srv  # noqa: E402


class Handler(srv.Handler):
    def setup(self):
        if hasattr(self.request, "do_handshake"):
            self.request.do_handshake()
        super(srv.Handler, self).setup()

    def log_request(self, code="-", size="-"):
        with self.server.lock, open(self.server.log, "a") as f:
            # Whether the real token came, never the token: the log is a file commands can read.
            auth = self.headers.get("Authorization", "")
            if not auth:
                seen = "none"
            elif self.server.token in auth or self.authorized_basic():
                seen = "real"
            else:
                seen = "other"
            f.write(f"{self.server.server_address[0]} {self.command} {self.path} {seen}\n")

    def authorized_basic(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Basic "):
            return False
        user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        return password == self.server.token

    def reply(self, status, body, extra=()):
        data = body.encode()
        self.send_response(status)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def route(self):
        if self.is_git():
            if not self.authorized_basic():
                return self.reply(401, "auth needed\n", [("WWW-Authenticate", 'Basic realm="git"')])
            return self.git()
        if self.path.startswith("/api"):
            if self.headers.get("Authorization") != f"Bearer {self.server.token}":
                return self.reply(401, "bad token\n")
            echo = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            if self.path.startswith("/api/chunk"):
                # Chunks of 7 bytes: a reflected token is split by the framing on the wire.
                data = ("ok\n" + echo).encode()
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for i in range(0, len(data), 7):
                    part = data[i:i + 7]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                return self.wfile.write(b"0\r\n\r\n")
            if self.path.startswith("/api/gzip"):
                # Compressed whatever the request asked for: the token inside, out of a plain
                # filter's sight.
                data = gzip.compress(("ok\n" + echo).encode())
                self.send_response(200)
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                return self.wfile.write(data)
            return self.reply(200, "ok\n" + echo, [("Set-Cookie", f"t={self.server.token}")])
        if self.path.startswith("/files/"):  # GIT_ROOT's files, for bench/broker_compare.py
            self.path = self.path[len("/files"):]
            return super(srv.Handler, self).do_GET()
        return self.reply(200, "logged\n")

    def do_GET(self):
        self.route()

    def do_POST(self):
        if self.is_git():
            return self.route()
        self.body()
        self.route()


def main():
    cert, key, git_root, log, token = sys.argv[1:]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    lock = threading.Lock()
    for address in ("198.51.100.2", "198.51.100.3"):
        for port in (443, 80):
            s = srv.Server((address, port), Handler)
            s.docroot, s.git_root, s.log, s.lock, s.token = git_root, git_root, log, lock, token
            if port == 443:
                s.socket = ctx.wrap_socket(s.socket, server_side=True,
                                           do_handshake_on_connect=False)
            threading.Thread(target=s.serve_forever, daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
