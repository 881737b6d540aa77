#!/usr/bin/env python3
"""A small MCP server over stdio (newline-delimited JSON-RPC 2.0) for agentexec's tests.

Tools: echo {text} -> text block; add {a, b} -> structuredContent {sum} plus a text block;
fail {} -> isError; slow {seconds} -> sleeps, then "done"; crash {} -> exits with code 3
without answering; env {name} -> the value of an environment variable ("" if unset);
cwd {} -> the working directory; noisy {} -> writes 1 MiB to stderr, then "ok".

Failure modes (argv): --crash-on-init (prints a traceback-like line on stderr, exits 3 on
initialize), --garbage (answers initialize with a line that is not JSON), --no-answer (reads
requests, never answers), --page-size N (tools/list paginates with nextCursor), --ping-first (before answering
initialize, pings the client and exits with code 4 unless the answer is right),
--log FILE (appends every message received, one JSON line each, then {"eof":true} when
stdin closes).
Only the Python 3 standard library.
"""
import json
import os
import sys
import time

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "add", "description": "Add two numbers.",
     "annotations": {"readOnlyHint": False, "title": "Add"},
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"},
                                                      "b": {"type": "number"}},
                     "required": ["a", "b"]},
     "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}}},
    {"name": "fail", "description": "Always fails."},
    {"name": "slow", "description": "Sleeps for a while.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "crash", "description": "Exits without answering.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "env", "description": "Reads an environment variable.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "cwd", "description": "Reports the working directory.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "noisy", "description": "Writes 1 MiB to stderr, then answers.",
     "inputSchema": {"type": "object", "properties": {}}},
]


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def text(t):
    return {"type": "text", "text": t}


def call_tool(name, args):
    if name == "echo":
        return {"content": [text(str(args.get("text", "")))]}
    if name == "add":
        s = args.get("a", 0) + args.get("b", 0)
        return {"content": [text(str(s))], "structuredContent": {"sum": s}}
    if name == "fail":
        return {"content": [text("it went wrong")], "isError": True}
    if name == "slow":
        time.sleep(float(args.get("seconds", 5)))
        return {"content": [text("done")]}
    if name == "crash":
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "env":
        return {"content": [text(os.environ.get(str(args.get("name", "")), ""))]}
    if name == "cwd":
        return {"content": [text(os.getcwd())]}
    if name == "noisy":
        sys.stderr.write(("noise " * 1000 + "\n") * 175)
        sys.stderr.write("last words\n")
        sys.stderr.flush()
        return {"content": [text("ok")]}
    return None


def main():
    argv = sys.argv[1:]
    crash_on_init = "--crash-on-init" in argv
    garbage = "--garbage" in argv
    no_answer = "--no-answer" in argv
    ping_first = "--ping-first" in argv
    page_size = int(argv[argv.index("--page-size") + 1]) if "--page-size" in argv else 0
    log = open(argv[argv.index("--log") + 1], "a") if "--log" in argv else None

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        if log:
            log.write(json.dumps(msg, separators=(",", ":")) + "\n")
            log.flush()
        method = msg.get("method")
        mid = msg.get("id")
        if mid is None or no_answer:
            continue  # a notification, or we are playing dead
        if method == "initialize":
            if crash_on_init:
                sys.stderr.write("Traceback (most recent call last):\n")
                sys.stderr.write("RuntimeError: cannot open the docs index\n")
                sys.stderr.flush()
                sys.exit(3)
            if ping_first:
                send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
                send({"jsonrpc": "2.0", "id": 7, "method": "roots/list"})
                answers = [json.loads(sys.stdin.readline()) for _ in range(2)]
                expected = [{"jsonrpc": "2.0", "id": "p1", "result": {}},
                            {"jsonrpc": "2.0", "id": 7, "error": {
                                "code": -32601, "message": "Method not found: roots/list"}}]
                if answers != expected:
                    sys.stderr.write("bad answers: %r\n" % answers)
                    sys.exit(4)
            if garbage:
                sys.stdout.write("Starting docs server v1.2...\n")
                sys.stdout.flush()
                continue
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "test-mcp", "version": "1.0"}}})
        elif method == "tools/list":
            if page_size:
                start = int((msg.get("params") or {}).get("cursor") or 0)
                result = {"tools": TOOLS[start:start + page_size]}
                if start + page_size < len(TOOLS):
                    result["nextCursor"] = str(start + page_size)
            else:
                result = {"tools": TOOLS}
            send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "tools/call":
            params = msg.get("params") or {}
            result = call_tool(params.get("name"), params.get("arguments") or {})
            if result is None:
                send({"jsonrpc": "2.0", "id": mid,
                      "error": {"code": -32602, "message": "Unknown tool: %s" % params.get("name")}})
            else:
                send({"jsonrpc": "2.0", "id": mid, "result": result})
        else:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32601, "message": "Method not found"}})
    if log:
        log.write('{"eof":true}\n')  # stdin closed: the client is shutting us down
        log.close()


if __name__ == "__main__":
    main()
