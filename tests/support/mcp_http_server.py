#!/usr/bin/env python3
"""A strict streamable-HTTP MCP server (protocol 2025-06-18) for agentexec's tests.

POST /mcp takes one JSON-RPC message. It refuses what the transport's rules refuse: an
Accept header without both application/json and text/event-stream (406), a body that is not
application/json (415), a wrong bearer token (401), a missing or wrong Mcp-Session-Id after
initialize (400 / 404), a missing or wrong MCP-Protocol-Version after initialize (400), and
a header named by --require-header that is absent or different (403). Notifications get 202.
Tools: add {a, b} -> a text block and structuredContent {sum}; echo {text}.

Options: --port-file F (written once listening), --token T, --require-header 'Name: value',
--sse (answer requests as an event stream, with a ping request from the server first),
--log F (one JSON line per POST: the headers that matter and the body).
Only the Python 3 standard library. Exits when its parent does.
"""
import argparse
import http.server
import json
import os
import socketserver
import threading
import time
import uuid

PROTOCOL = "2025-06-18"
TOOLS = [
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                                                      "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
]

args = None
sessions = set()
lock = threading.Lock()


def result_for(msg):
    method = msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-http-test", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        a = params.get("arguments") or {}
        if params.get("name") == "add":
            total = a.get("a", 0) + a.get("b", 0)
            return {"content": [{"type": "text", "text": str(total)}],
                    "structuredContent": {"sum": total}}
        if params.get("name") == "echo":
            return {"content": [{"type": "text", "text": a.get("text", "")}]}
        return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}
    if method == "ping":
        return {}
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def refuse(self, code, why):
        body = json.dumps({"jsonrpc": "2.0", "id": None,
                           "error": {"code": -32600, "message": why}}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps({
                    "authorization": self.headers.get("Authorization"),
                    "session": self.headers.get("Mcp-Session-Id"),
                    "version": self.headers.get("MCP-Protocol-Version"),
                    "accept": self.headers.get("Accept"),
                    "body": raw.decode("utf-8", "replace")}) + "\n")
        if self.path != "/mcp":
            return self.refuse(404, "no such endpoint")
        accept = self.headers.get("Accept") or ""
        if "application/json" not in accept or "text/event-stream" not in accept:
            return self.refuse(406, "Accept must list application/json and text/event-stream")
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            return self.refuse(415, "Content-Type must be application/json")
        if args.token and self.headers.get("Authorization") != "Bearer " + args.token:
            return self.refuse(401, "bad bearer token")
        if args.require_header:
            name, _, value = args.require_header.partition(": ")
            if self.headers.get(name) != value:
                return self.refuse(403, "missing header " + name)
        try:
            msg = json.loads(raw)
        except ValueError:
            return self.refuse(400, "body is not JSON")
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return self.refuse(400, "not a JSON-RPC 2.0 message")
        headers = {}
        if msg.get("method") == "initialize":
            sid = str(uuid.uuid4())
            with lock:
                sessions.add(sid)
            headers["Mcp-Session-Id"] = sid
        else:
            sid = self.headers.get("Mcp-Session-Id")
            if not sid:
                return self.refuse(400, "Mcp-Session-Id required")
            with lock:
                if sid not in sessions:
                    return self.refuse(404, "unknown session")
            if self.headers.get("MCP-Protocol-Version") != PROTOCOL:
                return self.refuse(400, "MCP-Protocol-Version must be " + PROTOCOL)
        if "id" not in msg or "method" not in msg:  # a notification, or the answer to our ping
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        answer = {"jsonrpc": "2.0", "id": msg["id"]}
        res = result_for(msg)
        if res is None:
            answer["error"] = {"code": -32601, "message": "Method not found"}
        else:
            answer["result"] = res
        if args.sse:
            events = []
            if msg.get("method") == "tools/call":
                events.append({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            events.append(answer)
            body = "".join("event: message\ndata: " + json.dumps(e) + "\n\n" for e in events)
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
        else:
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--token")
    p.add_argument("--require-header")
    p.add_argument("--sse", action="store_true")
    p.add_argument("--log")
    args = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
