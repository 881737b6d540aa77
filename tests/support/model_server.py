#!/usr/bin/env python3
"""Loopback test model server for agentexec (Python 3 standard library only).

Serves scripted model turns over the two HTTP wires agentexec speaks:

  POST /v1/responses          OpenAI Responses API, server-sent events
  POST /v1/chat/completions   OpenAI Chat Completions, streamed chunks
  POST /v1/responses/compact  the Responses API's compaction endpoint (one JSON answer)

Usage:
  model_server.py --script TURNS.json [--port 0] --port-file FILE [--log-dir DIR]
                  [--fault SPEC]... [--max-seconds 120] [--lenient]

Strict by default: every request is checked against the real services' rules
(tests/support/wire_rules.py: unknown parameters, tool names, structured-output schemas, roles
and content parts, call/output pairing, reasoning replay with store: false, ...) and a request
the real service would refuse gets its status and error object
{"error": {"message", "type", "param", "code"}} instead of a turn (the turn is not consumed).
On the responses wire the server then behaves as the service does: output items carry ids
(rs_/msg_/fc_/ctc_/ws_), and a reasoning item carries an `encrypted_content` (one this server
can verify when it is replayed) only when the request's `include` asked for
"reasoning.encrypted_content". --lenient accepts anything and serves items as scripted.

It binds 127.0.0.1 only, and writes the chosen port (a decimal number and a newline) to
--port-file once it is listening (atomically: the file appears complete). It exits by itself
after --max-seconds, and at once on SIGTERM or SIGINT.

Turns: the same JSON format as agentexec's scripted provider (engine/model/scripted.h):
  {"turns": [{"items": [...], "usage": {...}}, {"fail": "message"}, ...]}
An item {"untyped": {...}} is served on the responses wire as that object verbatim, an output
item without a "type" (the chat wire has no form for it and leaves it out).
Script options (top-level keys next to "turns", all optional; context management):
  "context_window": N   a request whose input is estimated above N tokens is refused as the
                        service refuses it: HTTP 400, code context_length_exceeded (the turn is
                        not consumed). Estimate: for each input item (responses, compact) or
                        message (chat), the bytes of its compact JSON / 4, rounded up, summed.
  "auto_usage": true    a turn without "usage" reports input_tokens = that estimate and
                        output_tokens = the same estimate of its output items.
  "auto_summary": true  a request that offers no tools (a summarisation request) is answered
                        with one assistant message "Summary of the work so far (request N)."
                        and consumes no turn.
POST /v1/responses/compact (strict: only the documented keys model, input, instructions,
previous_response_id, prompt_cache_key, prompt_cache_retention, service_tier; the input rules of
/v1/responses) answers {"id","object":"response.compaction","created_at","output","usage"}:
the output is the input's user messages verbatim, then one {"type":"compaction","id",
"encrypted_content"} item whose content this server can verify when it is replayed (a
compaction item it did not issue is refused). It consumes no turn.
All endpoints share one request counter; the two streaming endpoints share one turn cursor. A request is served the next
unconsumed turn; the turn counts as consumed only when the request was answered in full
without a fault, so a retried request gets the same turn again. A "fail" turn answers every
request with a failure (responses: a response.failed event; chat: an in-stream error) and is
never consumed. With no turn left the answer is HTTP 400 with the error message
"model_server: no turn left for request N (script has M turns)".

On the chat wire: reasoning items stream as reasoning_content (summary parts joined by "\\n"),
messages as content (concatenated), function_call items as tool_calls (arguments in two
pieces), custom_tool_call items as function tool_calls whose arguments are {"input": ...};
web_search_call items have no chat form and are left out.

Request log (--log-dir DIR): request N (counting from 1) is written to DIR/request-NNN.json
before it is answered:
  {"n": N, "path": "/v1/responses", "headers": {lower-case name: value},
   "body": <the parsed JSON body, or the raw text if it is not JSON>,
   "turn": <turn number served, from 1, or null>, "fault": <the fault spec applied, or null>}
An authorization header is kept only when it starts with "Bearer test" (tests use fake
keys); any other value is recorded as "Bearer <redacted>".

Faults (--fault SPEC, repeatable; the first spec that selects a request applies to it):
  SPEC     = KIND[=VALUE][:OPTION=VALUE]...
  selector   requests=LIST   request numbers, from 1: "2", "1,3", "2-4"
             count=N         the first N requests (same as requests=1-N)
             (no selector: every request)
  kinds      status=CODE           answer HTTP CODE with a JSON error body
                                   {"error": {"message": M, "type": "test_error"}};
                                   options: message=M (default "injected status CODE"),
                                   code=C (error.code, e.g. insufficient_quota),
                                   retry_after=S (adds a Retry-After: S header),
                                   retry_after_ms=MS (a retry-after-ms header),
                                   reset_requests=D / reset_tokens=D (x-ratelimit-reset-requests
                                   / -tokens headers, e.g. "1s", "250ms")
             drop_after_items=N    stream the turn, then close the connection in the middle
                                   of the body after N output items
             failed=MESSAGE        responses: response.failed with error.message MESSAGE;
                                   chat: an in-stream {"error": {"message": MESSAGE}};
                                   option code=C: the error's code (default server_error)
             stall_before_headers=S  wait S seconds before answering at all
             stall_after_headers=S   send the 200 head, then wait S seconds before any event
             garbage               send a comment, an unknown event and a data line that is
                                   not JSON before the turn
             content_type=TYPE     answer 200 with that content type and a JSON body
                                   {"error": {"message": "not a stream"}} instead of a stream
             comment_keepalive=S   send the 200 head, then an SSE comment line (":" LF) every
                                   second for S seconds, and no event
             dribble=S             send the 200 head, then one byte of the first event every
                                   second for S seconds (no event completes)
             hostile=NAME          answer with the hostile stream NAME of the fault suite
                                   (tests/faults; the HOSTILE table below lists them)
  For the stall, keep-alive and dribble kinds: if the client is still connected after the wait, the turn is served
  in full (and consumed); if it gave up, nothing more happens.
  Values are percent-decoded, so a message may hold ':' as %3A.
Examples:
  --fault "status=500:count=2"            the first 2 requests get HTTP 500
  --fault "status=429:retry_after=1:count=1"
  --fault "drop_after_items=1:requests=1"
  --fault "failed=The model failed.:requests=1"
  --fault "stall_before_headers=30:requests=1"
  --fault "garbage:requests=2"
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import wire_rules

FAULT_KINDS = {"status", "drop_after_items", "failed", "stall_before_headers",
               "stall_after_headers", "garbage", "content_type", "comment_keepalive", "dribble"}
# Faults that only slow the answer down: the turn is still served (and consumed) after them.
DELAY_KINDS = {"stall_before_headers", "stall_after_headers", "comment_keepalive", "dribble"}
# Hostile-JSON faults, served by serve_hostile_json below.
HOSTILE_JSON_FAULTS = {"deep_event", "deep_arguments", "raw_item"}
FAULT_KINDS |= HOSTILE_JSON_FAULTS


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class FaultSpec:
    def __init__(self, spec):
        self.spec = spec
        parts = spec.split(":")
        head = parts[0]
        kind, _, value = head.partition("=")
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind `{kind}` in `{spec}` "
                             f"(expected one of {', '.join(sorted(FAULT_KINDS))})")
        self.kind = kind
        self.value = urllib.parse.unquote(value)
        self.options = {}
        self.requests = None  # None: every request
        for opt in parts[1:]:
            key, eq, val = opt.partition("=")
            if not eq:
                raise ValueError(f"fault option `{opt}` in `{spec}` needs a value")
            val = urllib.parse.unquote(val)
            if key == "requests":
                self.requests = set()
                for piece in val.split(","):
                    lo, dash, hi = piece.partition("-")
                    if dash:
                        self.requests.update(range(int(lo), int(hi) + 1))
                    else:
                        self.requests.add(int(piece))
            elif key == "count":
                self.requests = set(range(1, int(val) + 1))
            elif key in ("retry_after", "message", "code", "retry_after_ms", "reset_requests",
                         "reset_tokens"):
                self.options[key] = val
            else:
                raise ValueError(f"unknown fault option `{key}` in `{spec}`")
        if kind in ("status", "drop_after_items", "deep_event", "deep_arguments") \
                and not self.value.isdigit():
            raise ValueError(f"fault `{spec}`: {kind} needs a number")
        if kind in DELAY_KINDS:
            float(self.value)

    def selects(self, n):
        return self.requests is None or n in self.requests


def item_json(item, turn, index, served=None, encrypted=False):
    """One scripted item as Responses-API output item JSON (as engine/model/scripted.cc).

    served (strict mode, responses wire): a prefix that makes item ids unique per request; the
    items then carry ids as the service's do, and reasoning items get an encrypted_content only
    when `encrypted` (the request asked for it)."""
    out = _item_json(item, turn, index)
    if served is None or "type" not in out:
        return out
    prefix = {"reasoning": "rs", "message": "msg", "function_call": "fc",
              "custom_tool_call": "ctc", "web_search_call": "ws"}[out["type"]]
    out = {"id": f"{prefix}_{served}_{index}", **out}
    if out["type"] == "reasoning":
        out.pop("encrypted_content", None)
        if encrypted:
            out["encrypted_content"] = wire_rules.encrypted_content_for(out["id"])
    return out


def _item_json(item, turn, index):
    t = item.get("type")
    if t is None and isinstance(item.get("untyped"), dict):
        return dict(item["untyped"])  # served verbatim, without a type (responses wire only)

    def call_id():
        return item.get("call_id") or f"call_{turn}_{index}"

    if t == "message":
        out = {"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": item["text"]}]}
        if isinstance(item.get("phase"), str):
            out["phase"] = item["phase"]
        return out
    if t == "reasoning":
        summary = item.get("summary", [])
        if isinstance(summary, str):
            summary = [summary]
        out = {"type": "reasoning",
               "summary": [{"type": "summary_text", "text": s} for s in summary]}
        if isinstance(item.get("encrypted_content"), str):
            out["encrypted_content"] = item["encrypted_content"]
        return out
    if t == "function_call":
        args = item.get("arguments", {})
        if not isinstance(args, str):
            args = dumps(args)
        return {"type": "function_call", "name": item["name"], "arguments": args,
                "call_id": call_id()}
    if t == "custom_tool_call":
        return {"type": "custom_tool_call", "call_id": call_id(), "name": item["name"],
                "input": item["input"]}
    if t == "web_search_call":
        return {"type": "web_search_call", "status": "completed",
                "action": {"type": "search", "query": item["query"]}}
    raise ValueError(f"turn {turn} item {index}: unknown item type `{t}`")


class Disconnected(Exception):
    pass


def estimate_tokens(items):
    """The context-window estimate: compact JSON bytes / 4 per item, rounded up (as agentexec's
    engine/compaction.cc estimates, so a test can reason about both)."""
    if not isinstance(items, list):
        return 0
    return sum((len(dumps(it).encode()) + 3) // 4 for it in items)


def context_length_exceeded(chat):
    if chat:
        msg = "This model's maximum context length was exceeded. Please reduce the length of the messages."
    else:
        msg = "Your input exceeds the context window of this model. Please adjust your input and try again."
    return {"message": msg, "type": "invalid_request_error", "param": "messages" if chat else "input",
            "code": "context_length_exceeded"}


class State:
    def __init__(self, turns, faults, log_dir, strict=True, options=None):
        self.options = options or {}
        self.strict = strict
        self.turns = turns
        self.faults = faults
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.requests = 0
        self.consumed = 0
        self.stop = threading.Event()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "agentexec-test-model-server"

    def log_message(self, fmt, *args):  # keep test output clean
        pass

    # -- plumbing ---------------------------------------------------------------------------
    def write_chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as e:
            raise Disconnected() from e

    def end_chunks(self):
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError as e:
            raise Disconnected() from e

    def send_json(self, code, obj, extra_headers=()):
        self.send_whole(code, ("Content-Type", "application/json"), dumps(obj).encode(),
                        extra_headers)

    def send_whole(self, code, header, body, extra_headers=()):
        """A complete answer: `header` (a name and value), Content-Length, the extra headers in
        that order (the order the tests have always seen on the wire), then the body."""
        self.send_response(code)
        self.send_header(*header)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def peer_closed(self):
        try:
            data = self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            return data == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def drop(self):
        """Closes the connection in the middle of a chunked body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- requests ---------------------------------------------------------------------------
    def do_GET(self):
        self.send_json(404, {"error": {"message": f"no such endpoint: GET {self.path}"}})

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        with state.lock:
            state.requests += 1
            n = state.requests
            turn_index = state.consumed
        fault = next((f for f in state.faults if f.selects(n)), None)
        turn = state.turns[turn_index] if turn_index < len(state.turns) else None
        self.log_request_file(n, raw, turn_index + 1 if turn is not None else None, fault)

        if path not in ("/v1/responses", "/v1/chat/completions", "/v1/responses/compact"):
            self.send_json(404, {"error": {"message": f"no such endpoint: POST {path}"}})
            return
        chat = path == "/v1/chat/completions"
        compact = path == "/v1/responses/compact"
        body = None
        if compact:
            self.serve_compact(n, raw, fault)
            return
        if state.strict:
            ok, body = self.parse_body(raw)
            if not ok:
                return
            refused = (wire_rules.check_chat if chat else wire_rules.check_responses)(body)
            if refused:
                status, err = refused
                self.log_rejection(n, err)
                self.send_json(status, {"error": err})
                return
        if body is None:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                body = None
        window = state.options.get("context_window")
        if window and isinstance(body, dict) and not fault:
            if estimate_tokens(body.get("messages" if chat else "input")) > window:
                err = context_length_exceeded(chat)
                self.log_rejection(n, err)
                self.send_json(400, {"error": err})
                return
        if state.options.get("auto_summary") and isinstance(body, dict) and not fault \
                and not body.get("tools"):
            turn = {"items": [{"type": "message",
                               "text": f"Summary of the work so far (request {n})."}]}
            try:
                self.start_stream()
                self.serve_turn(chat, turn, 0, n, None, body)
            except Disconnected:
                self.close_connection = True
            return
        if fault and fault.kind == "hostile":
            self.serve_hostile(fault.value, chat, turn, turn_index)
            return
        if fault and fault.kind == "status":
            self.send_status_fault(fault)
            return
        if fault and fault.kind == "content_type":
            self.send_whole(200, ("Content-Type", fault.value),
                            dumps({"error": {"message": "not a stream"}}).encode())
            return
        if fault and fault.kind == "stall_before_headers":
            state.stop.wait(float(fault.value))
            if self.peer_closed():
                self.close_connection = True
                return
        if turn is None:
            self.send_json(400, {"error": {
                "message": f"model_server: no turn left for request {n} "
                           f"(script has {len(state.turns)} turns)",
                "type": "invalid_request_error"}})
            return
        try:
            self.start_stream()
            if fault and fault.kind == "stall_after_headers":
                state.stop.wait(float(fault.value))
                if self.peer_closed():
                    self.close_connection = True
                    return
            if fault and fault.kind in ("comment_keepalive", "dribble"):
                if not self.slow_start(fault, chat):
                    self.close_connection = True
                    return
            completed = self.serve_turn(chat, turn, turn_index + 1, n, fault, body)
        except Disconnected:
            self.close_connection = True
            return
        if completed:
            with state.lock:
                if state.consumed == turn_index:
                    state.consumed += 1

    def parse_body(self, raw):
        """(True, the JSON body), or (False, None) after answering 400 as the service does."""
        try:
            return True, json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            self.send_json(400, {"error": {
                "message": f"We could not parse the JSON body of your request. ({e})",
                "type": "invalid_request_error", "param": None, "code": None}})
            return False, None

    def send_status_fault(self, fault):
        code = int(fault.value)
        msg = fault.options.get("message", f"injected status {code}")
        headers = []
        for opt, header in (("retry_after", "Retry-After"), ("retry_after_ms", "retry-after-ms"),
                            ("reset_requests", "x-ratelimit-reset-requests"),
                            ("reset_tokens", "x-ratelimit-reset-tokens")):
            if opt in fault.options:
                headers.append((header, fault.options[opt]))
        err = {"message": msg, "type": "test_error"}
        if "code" in fault.options:
            err = {"message": msg, "type": "invalid_request_error", "param": None,
                   "code": fault.options["code"]}
        self.send_json(code, {"error": err}, headers)

    def serve_compact(self, n, raw, fault):
        """POST /v1/responses/compact: one JSON answer; never consumes a turn."""
        state = self.server.state
        ok, body = self.parse_body(raw)
        if not ok:
            return
        if state.strict:
            refused = wire_rules.check_compact(body)
            if refused:
                status, err = refused
                self.log_rejection(n, err)
                self.send_json(status, {"error": err})
                return
        if fault and fault.kind == "status":
            self.send_status_fault(fault)
            return
        items = body.get("input", []) if isinstance(body, dict) else []
        window = state.options.get("context_window")
        if window and estimate_tokens(items) > window:
            err = context_length_exceeded(False)
            self.log_rejection(n, err)
            self.send_json(400, {"error": err})
            return
        kept = [it for it in items if isinstance(it, dict)
                and it.get("type", "message") == "message" and it.get("role") == "user"]
        cid = f"cmp_{n}"
        output = kept + [{"type": "compaction", "id": cid,
                          "encrypted_content": wire_rules.encrypted_content_for(cid)}]
        tokens = estimate_tokens(items)
        self.send_json(200, {"id": f"resp_{n}", "object": "response.compaction",
                             "created_at": int(time.time()), "output": output,
                             "usage": {"input_tokens": tokens,
                                       "input_tokens_details": {"cached_tokens": 0},
                                       "output_tokens": estimate_tokens(output[-1:]),
                                       "output_tokens_details": {"reasoning_tokens": 0},
                                       "total_tokens": tokens + estimate_tokens(output[-1:])}})

    def slow_start(self, fault, chat):
        """comment_keepalive / dribble: S seconds of bytes that complete no event. Returns False
        when the client gave up."""
        state = self.server.state
        first = (b"data: " if chat else b"event: response.in_progress\ndata: ") + \
            b'{"type":"response.in_progress"}'
        deadline = time.monotonic() + float(fault.value)
        sent = 0
        while time.monotonic() < deadline:
            if fault.kind == "comment_keepalive":
                piece = b":\n"
            else:
                piece = first[sent % len(first):sent % len(first) + 1]
                sent += 1
            try:
                self.write_chunk(piece)
            except Disconnected:
                return False
            if state.stop.wait(1.0) or self.peer_closed():
                return False
        if fault.kind == "dribble":
            self.write_chunk(b"\n\n")  # ends the dribbled (partial) event, if any
        return not self.peer_closed()

    def log_rejection(self, n, err):
        state = self.server.state
        if not state.log_dir:
            return
        final = os.path.join(state.log_dir, "request-%03d.json" % n)
        try:
            with open(final, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            return
        record["rejected"] = err
        tmp = final + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(dumps(record))
        os.replace(tmp, final)

    def log_request_file(self, n, raw, turn_no, fault):
        state = self.server.state
        if not state.log_dir:
            return
        headers = {}
        for k, v in self.headers.items():
            k = k.lower()
            if k == "authorization" and not v.startswith("Bearer test"):
                v = "Bearer <redacted>"
            headers[k] = v
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = raw.decode("utf-8", "replace")
        record = {"n": n, "path": self.path, "headers": headers, "body": body,
                  "turn": turn_no, "fault": fault.spec if fault else None}
        final = os.path.join(state.log_dir, "request-%03d.json" % n)
        tmp = final + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(dumps(record))
        os.replace(tmp, final)

    # -- the two wires ----------------------------------------------------------------------
    def serve_turn(self, chat, turn, turn_no, n, fault, body=None):
        """Streams one turn; returns True when it was served in full without a fault."""
        drop_after = int(fault.value) if fault and fault.kind == "drop_after_items" else None
        failed = fault.value if fault and fault.kind == "failed" else turn.get("fail")
        strict = self.server.state.strict and not chat
        encrypted = strict and "reasoning.encrypted_content" in (body or {}).get("include", [])
        items = [item_json(it, turn_no, i, n if strict else None, encrypted)
                 for i, it in enumerate(turn.get("items", []))]
        usage = turn.get("usage", {})
        if "usage" not in turn and self.server.state.options.get("auto_usage") \
                and isinstance(body, dict):
            usage = {"input_tokens": estimate_tokens(body.get("messages" if chat else "input")),
                     "output_tokens": estimate_tokens(items)}
        send = self.send_chat_event if chat else self.send_sse_event
        resp_id = f"resp_{n}"
        if chat:
            send({"id": resp_id, "object": "chat.completion.chunk",
                  "choices": [{"index": 0, "delta": {"role": "assistant"},
                               "finish_reason": None}]})
        else:
            send({"type": "response.created",
                  "response": {"id": resp_id, "status": "in_progress"}})
        if fault and fault.kind in HOSTILE_JSON_FAULTS:
            return self.serve_hostile_json(chat, fault, resp_id, send)
        if fault and fault.kind == "garbage":
            self.write_chunk(": a comment line\n\n")
            self.write_chunk("event: response.unknown_thing\ndata: {\"type\":\"x.unknown\"}\n\n")
            self.write_chunk("data: {this is not json\n\n")
        if failed is not None:
            code = fault.options.get("code", "server_error") if fault else "server_error"
            if chat:
                send({"error": {"message": failed, "type": "server_error", "code": code}})
            else:
                send({"type": "response.failed",
                      "response": {"id": resp_id, "status": "failed",
                                   "error": {"code": code, "message": failed}}})
            self.end_chunks()
            return False
        emitted = 0
        tool_index = 0
        for index, item in enumerate(items):
            if drop_after is not None and emitted >= drop_after:
                self.drop()
                return False
            if chat:
                if not self.chat_item(item, tool_index, resp_id):
                    continue
                if item["type"] in ("function_call", "custom_tool_call"):
                    tool_index += 1
            else:
                self.responses_item(item, index)
            emitted += 1
        if drop_after is not None:
            self.drop()
            return False
        if chat:
            finish = "tool_calls" if tool_index else "stop"
            send({"id": resp_id, "object": "chat.completion.chunk",
                  "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            send({"id": resp_id, "object": "chat.completion.chunk", "choices": [],
                  "usage": {
                      "prompt_tokens": usage.get("input_tokens", 0),
                      "completion_tokens": usage.get("output_tokens", 0),
                      "total_tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
                      "prompt_tokens_details": {
                          "cached_tokens": usage.get("cached_input_tokens", 0)},
                      "completion_tokens_details": {
                          "reasoning_tokens": usage.get("reasoning_output_tokens", 0)}}})
            self.write_chunk("data: [DONE]\n\n")
        else:
            send({"type": "response.completed", "response": {
                "id": resp_id, "status": "completed",
                "usage": {
                    "input_tokens": usage.get("input_tokens", 0),
                    "input_tokens_details": {"cached_tokens": usage.get("cached_input_tokens", 0)},
                    "output_tokens": usage.get("output_tokens", 0),
                    "output_tokens_details": {
                        "reasoning_tokens": usage.get("reasoning_output_tokens", 0)},
                    "total_tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0)}}})
        self.end_chunks()
        # A faulted answer never consumes its turn, even if the client read it all.
        return fault is None or fault.kind in DELAY_KINDS

    # -- hostile JSON -------------------------------------------------------------
    # deep_event=N      one event whose data is N nested arrays, then the stream ends
    # deep_arguments=N  a function_call (exec_command) whose arguments are N nested arrays: a
    #                   JSON value on the Responses wire, a string on the chat wire
    # raw_item=TEXT     (Responses) an output_item.done whose item is TEXT verbatim (percent-
    #                   decoded to bytes: numbers such as 1.8e308, invalid UTF-8)
    # Each completes the response (except deep_event) and never consumes a turn.
    def serve_hostile_json(self, chat, fault, resp_id, send):
        if fault.kind == "deep_event":
            n = int(fault.value)
            data = "[" * n + "]" * n
            self.write_chunk(f"data: {data}\n\n" if chat else f"event: x\ndata: {data}\n\n")
            self.end_chunks()
            return False
        if fault.kind == "deep_arguments":
            n = int(fault.value)
            deep = "[" * n + "]" * n
            if chat:
                chunk = ('{"id":"' + resp_id + '","object":"chat.completion.chunk","choices":[{'
                         '"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_deep",'
                         '"type":"function","function":{"name":"exec_command","arguments":'
                         + dumps(deep) + '}}]},"finish_reason":null}]}')
                self.write_chunk(f"data: {chunk}\n\n")
            else:
                item = ('{"type":"function_call","name":"exec_command","call_id":"call_deep",'
                        '"arguments":' + deep + '}')
                self.write_chunk('event: response.output_item.done\ndata: '
                                 '{"type":"response.output_item.done","output_index":0,"item":'
                                 + item + '}\n\n')
        else:  # raw_item
            raw = urllib.parse.unquote_to_bytes(fault.spec.split(":")[0].partition("=")[2])
            self.write_chunk(b'event: response.output_item.done\ndata: '
                             b'{"type":"response.output_item.done","output_index":0,"item":'
                             + raw + b'}\n\n')
        if chat:
            send({"id": resp_id, "object": "chat.completion.chunk",
                  "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            self.write_chunk("data: [DONE]\n\n")
        else:
            send({"type": "response.completed", "response": {"id": resp_id, "status": "completed",
                                                             "usage": {}}})
        self.end_chunks()
        return False

    def send_sse_event(self, obj):
        self.write_chunk(f"event: {obj.get('type', 'message')}\ndata: {dumps(obj)}\n\n")

    def send_chat_event(self, obj):
        self.write_chunk(f"data: {dumps(obj)}\n\n")

    def responses_item(self, item, index):
        self.send_sse_event({"type": "response.output_item.added", "output_index": index,
                             "item": item})
        if item.get("type") == "message":
            text = item["content"][0]["text"]
            self.send_sse_event({"type": "response.output_text.delta", "output_index": index,
                                 "content_index": 0, "item_id": f"msg_{index}", "delta": text})
        self.send_sse_event({"type": "response.output_item.done", "output_index": index,
                             "item": item})

    def chat_item(self, item, tool_index, resp_id):
        """Streams one item as chat chunks; returns False for items with no chat form."""
        def chunk(delta):
            self.send_chat_event({"id": resp_id, "object": "chat.completion.chunk",
                                  "choices": [{"index": 0, "delta": delta,
                                               "finish_reason": None}]})

        t = item.get("type")
        if t == "reasoning":
            chunk({"reasoning_content": "\n".join(s["text"] for s in item["summary"])})
        elif t == "message":
            chunk({"content": item["content"][0]["text"]})
        elif t in ("function_call", "custom_tool_call"):
            args = item["arguments"] if t == "function_call" else dumps({"input": item["input"]})
            half = len(args) // 2
            chunk({"tool_calls": [{"index": tool_index, "id": item["call_id"], "type": "function",
                                   "function": {"name": item["name"], "arguments": args[:half]}}]})
            chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": args[half:]}}]})
        else:
            return False
        return True

# --- Fault suite (tests/faults): hostile streams, kind `hostile=NAME` ---------------------
# Each generator answers one request on its own (head included) and returns True when the
# request should consume its turn (the turn was served in full, hostile extras aside).
FAULT_KINDS.add("hostile")

HOSTILE = {}


def hostile(fn):
    HOSTILE[fn.__name__] = fn
    return fn


def _stream_head(h, content_type="text/event-stream", chunked=True):
    h.send_response(200)
    h.send_header("Content-Type", content_type)
    if chunked:
        h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    h.wfile.flush()


def _reset(h):
    """Closes the connection with a TCP reset (SO_LINGER 0), not a clean FIN."""
    import struct
    h.close_connection = True
    try:
        h.wfile.flush()
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()
    except OSError:
        pass


@hostile
def junk(h, chat, turn, turn_no):
    """200 event stream whose body is deterministic binary garbage (64 KiB)."""
    import random
    rng = random.Random(12)
    _stream_head(h)
    for _ in range(16):
        h.write_chunk(bytes(rng.getrandbits(8) for _ in range(4096)))
    h.end_chunks()
    return False


def _fixed_stream(name, *chunks, consumed=False):
    """Registers the hostile stream NAME that sends the head, each of `chunks` as one chunk and a
    clean end of the body, whatever was asked; `consumed`: the turn counts as served. A chunk
    may be a function that makes it, so that a megabyte one is built only when it is sent."""
    def serve(h, chat, turn, turn_no):
        _stream_head(h)
        for chunk in chunks:
            h.write_chunk(chunk() if callable(chunk) else chunk)
        h.end_chunks()
        return consumed
    HOSTILE[name] = serve


# An event whose JSON stops in the middle, then a clean end of the body.
_fixed_stream("truncated_json",
              'data: {"type":"response.output_item.done","item":{"type":"mess\n\n')


@hostile
def unknown_events(h, chat, turn, turn_no):
    """Unknown event types, comments and fields around a turn served in full."""
    _stream_head(h)
    for i in range(200):
        h.write_chunk(f'event: x.unknown.{i}\nid: {i}\nretry: 5\nfoo: bar\n'
                      f'data: {{"type":"x.unknown.{i}","n":{i},"deep":[[[{{}}]]]}}\n\n')
        h.write_chunk(": keep-alive comment\n\n")
    h.serve_turn(chat, turn, turn_no, 0, None)
    return True


@hostile
def after_completion(h, chat, turn, turn_no):
    """A turn served in full, then more items, a failure and a second completion."""
    _stream_head(h)
    items = [item_json(it, turn_no, i) for i, it in enumerate(turn.get("items", []))]
    send = h.send_chat_event if chat else h.send_sse_event
    for i, item in enumerate(items):
        if chat:
            h.chat_item(item, i, "resp_x")
        else:
            h.responses_item(item, i)
    if chat:
        send({"id": "resp_x", "object": "chat.completion.chunk",
              "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        h.write_chunk("data: [DONE]\n\n")
    else:
        send({"type": "response.completed", "response": {"id": "resp_x", "usage": {}}})
    extra = {"type": "function_call", "name": "exec_command",
             "arguments": '{"cmd":"echo SHOULD-NOT-RUN"}', "call_id": "call_late"}
    for _ in range(3):
        if chat:
            h.chat_item(extra, 5, "resp_x")
            send({"error": {"message": "late failure"}})
            h.write_chunk("data: [DONE]\n\n")
        else:
            h.responses_item(extra, 9)
            send({"type": "response.failed", "response": {"error": {"message": "late failure"}}})
            send({"type": "response.completed", "response": {"id": "resp_late"}})
    h.end_chunks()
    return True


# One 100 MiB event (a single data line, in 1 MiB chunks), over agentexec's event bound.
_fixed_stream("huge_event", 'data: {"type":"response.output_text.delta","delta":"',
              *[lambda: b"x" * (1 << 20)] * 100, '"}\n\n')


@hostile
def million_deltas(h, chat, turn, turn_no):
    """A million one-character text deltas, then the turn in full."""
    _stream_head(h)
    if chat:
        one = ('data: {"choices":[{"index":0,"delta":{"content":"."},'
               '"finish_reason":null}]}\n\n')
    else:
        one = 'data: {"type":"response.output_text.delta","delta":"."}\n\n'
    batch = one * 2000
    for _ in range(500):
        h.write_chunk(batch)
    if not chat:
        h.serve_turn(chat, turn, turn_no, 0, None)
        return True
    # chat: the deltas already form a message; finish it without the turn's own items.
    h.write_chunk('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
    h.write_chunk("data: [DONE]\n\n")
    h.end_chunks()
    return True


@hostile
def html(h, chat, turn, turn_no):
    """HTTP 200 with an HTML page, as a captive portal or a misrouted proxy answers."""
    h.send_whole(200, ("Content-Type", "text/html; charset=utf-8"),
                 b"<!DOCTYPE html><html><head><title>Login</title></head><body>Sign in</body></html>")
    return False


# HTTP 200 labelled text/event-stream whose body is an HTML page.
_fixed_stream("html_as_stream",
              "<!DOCTYPE html>\n<html><body>\n<h1>502 Bad Gateway</h1>\n</body></html>\n")


@hostile
def reset_before_headers(h, chat, turn, turn_no):
    _reset(h)
    return False


@hostile
def reset_after_headers(h, chat, turn, turn_no):
    _stream_head(h)
    h.write_chunk('event: response.created\ndata: {"type":"response.created","response":{}}\n\n')
    _reset(h)
    return False


# One event nesting a million arrays (2 MB, under the event bound).
_fixed_stream("deep_event",
              lambda: 'data: {"type":"response.created","x":' + "[" * 1000000 + "]" * 1000000
              + "}\n\n")


# The turn with a number that overflows a double inside its output item.
_fixed_stream("huge_number",
              'data: {"type":"response.output_item.done","output_index":0,"item":'
              '{"type":"message","role":"assistant","n":1.8e308,'
              '"content":[{"type":"output_text","text":"ok"}]}}\n\n',
              'data: {"type":"response.completed","response":{"id":"r","usage":'
              '{"input_tokens":1.8e308}}}\n\n', consumed=True)


def _trickle(h, piece, seconds=0.2):
    _stream_head(h)
    while not h.server.state.stop.wait(seconds):
        h.write_chunk(piece)  # raises Disconnected once the client gave up


@hostile
def keepalive(h, chat, turn, turn_no):
    """The head, then an SSE comment every 0.2 s and never an event."""
    _trickle(h, ":\n")
    return False


@hostile
def dribble(h, chat, turn, turn_no):
    """The head, then one byte of a never-ending data line every 0.2 s."""
    _trickle(h, "x")
    return False


def _redirect(h, code):
    h.send_whole(code, ("Location", "/v1/redirected" + h.path), b"")
    return False


for _code in (301, 302, 303, 307, 308):
    HOSTILE[f"redirect_{_code}"] = (lambda c: lambda h, chat, turn, turn_no: _redirect(h, c))(_code)


def serve_hostile(self, name, chat, turn, turn_index):
    if name not in HOSTILE:
        self.send_json(500, {"error": {"message": f"model_server: no hostile stream `{name}`"}})
        return
    try:
        consumed = HOSTILE[name](self, chat, turn or {}, turn_index + 1)
    except Disconnected:
        self.close_connection = True
        return
    if consumed and turn is not None:
        state = self.server.state
        with state.lock:
            if state.consumed == turn_index:
                state.consumed += 1


Handler.serve_hostile = serve_hostile
# --- end of the fault suite's block ------------------------------------------------------


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that gave up (idle timeout, cancellation) resets the connection: expected.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--script", required=True, help="turns file (scripted provider format)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (0: any free port)")
    parser.add_argument("--port-file", required=True, help="file to write the chosen port to")
    parser.add_argument("--log-dir", help="directory for request-NNN.json request logs")
    parser.add_argument("--fault", action="append", default=[], help="fault SPEC (repeatable)")
    parser.add_argument("--max-seconds", type=float, default=120,
                        help="exit after this many seconds (default 120)")
    parser.add_argument("--lenient", action="store_true",
                        help="accept any request (no wire rules); serve items as scripted")
    args = parser.parse_args()

    try:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
        turns = script["turns"]
        if not isinstance(turns, list):
            raise ValueError('"turns" is not an array')
        for t_no, turn in enumerate(turns, 1):
            for i, item in enumerate(turn.get("items", [])):
                item_json(item, t_no, i)
        faults = [FaultSpec(s) for s in args.fault]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"model_server: {e}", file=sys.stderr)
        return 2
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, lambda *_: os._exit(0))
    # Never outlive a test, whatever happens to the parent.
    timer = threading.Timer(args.max_seconds, lambda: os._exit(0))
    timer.daemon = True
    timer.start()

    server = Server(("127.0.0.1", args.port), Handler)
    options = {k: script[k] for k in ("context_window", "auto_usage", "auto_summary") if k in script}
    server.state = State(turns, faults, args.log_dir, strict=not args.lenient, options=options)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{server.server_address[1]}\n")
    os.replace(tmp, args.port_file)
    server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
