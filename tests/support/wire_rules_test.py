#!/usr/bin/env python3
"""The strict test model server refuses what the real services refuse: one test per rule, over
real HTTP against model_server.py (status code and the exact error object)."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wire_rules  # noqa: E402

TURNS = {"turns": [{"items": [{"type": "reasoning", "summary": ["Thinking"]},
                              {"type": "message", "text": "ok"}]}] * 20}

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
FN = {"type": "function", "name": "exec_command", "description": "Run.", "strict": False,
      "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}


def body(**over):
    b = {"model": "gpt-5.5", "stream": True, "input": [USER], "tools": [FN],
         "tool_choice": "auto", "parallel_tool_calls": True, "store": False,
         "include": ["reasoning.encrypted_content"]}
    b.update(over)
    return b


class Server:
    def __init__(self, script=None):
        self.script = script or TURNS

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory()
        script = os.path.join(self.dir.name, "turns.json")
        with open(script, "w") as f:
            json.dump(self.script, f)
        port_file = os.path.join(self.dir.name, "port")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "model_server.py"),
                                      "--script", script, "--port-file", port_file,
                                      "--max-seconds", "120"])
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read())
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait()
        self.dir.cleanup()

    def post(self, path, payload):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1{path}", data=data,
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


class ContextWindowTest(unittest.TestCase):
    """The script's context_window: an input estimated above it is refused as the service does."""

    def test_over_the_window_is_context_length_exceeded(self):
        with Server(dict(TURNS, context_window=40, auto_usage=True)) as server:
            small = body(input=[USER])
            self.assertLessEqual(wire_rules_estimate([USER]), 40)
            status, text = server.post("/responses", small)
            self.assertEqual(status, 200, text)
            usage = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: {")][-1]
            self.assertEqual(usage["response"]["usage"]["input_tokens"], wire_rules_estimate([USER]))
            for path in ("/responses", "/responses/compact"):
                payload = body(input=[USER] * 10) if path == "/responses" else \
                    {"model": "m", "input": [USER] * 10}
                status, text = server.post(path, payload)
                self.assertEqual(status, 400, text)
                self.assertEqual(json.loads(text)["error"], {
                    "message": "Your input exceeds the context window of this model. Please "
                               "adjust your input and try again.",
                    "type": "invalid_request_error", "param": "input",
                    "code": "context_length_exceeded"})


def wire_rules_estimate(items):
    return sum((len(json.dumps(i, separators=(",", ":"), ensure_ascii=False).encode()) + 3) // 4
               for i in items)


class StrictServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)

    def refused(self, payload, status, message, param=None, code=None, path="/responses"):
        got_status, text = self.server.post(path, payload)
        self.assertEqual(got_status, status, text)
        err = json.loads(text)["error"]
        self.assertEqual(err["message"], message)
        self.assertEqual(err["type"], "invalid_request_error")
        self.assertEqual(err["param"], param)
        self.assertEqual(err["code"], code)

    def served(self, payload, path="/responses"):
        status, text = self.server.post(path, payload)
        self.assertEqual(status, 200, text)
        return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]

    # -- top level ------------------------------------------------------------------------
    def test_a_valid_request_is_served(self):
        events = self.served(body())
        self.assertEqual(events[-1]["type"], "response.completed")

    def test_unknown_parameter(self):
        self.refused(body(client_metadata={}), 400, "Unknown parameter: 'client_metadata'.",
                     "client_metadata", "unknown_parameter")

    def test_missing_model(self):
        b = body()
        del b["model"]
        self.refused(b, 400, "Missing required parameter: 'model'.", "model",
                     "missing_required_parameter")

    def test_bad_include_value(self):
        self.refused(body(include=["reasoning.summary"]), 400,
                     "Invalid value: 'reasoning.summary'. Supported values are: "
                     + wire_rules._supported(wire_rules.INCLUDE_VALUES) + ".",
                     "include[0]", "invalid_value")

    def test_bad_reasoning_effort_and_summary(self):
        self.refused(body(reasoning={"effort": "maximal"}), 400,
                     "Invalid value: 'maximal'. Supported values are: 'none', 'minimal', 'low', "
                     "'medium', 'high', and 'xhigh'.", "reasoning.effort", "invalid_value")
        self.refused(body(reasoning={"summary": "none"}), 400,
                     "Invalid value: 'none'. Supported values are: 'auto', 'concise', and "
                     "'detailed'.", "reasoning.summary", "invalid_value")

    # -- compaction ------------------------------------------------------------
    def test_compact_takes_only_its_documented_parameters(self):
        compact = {"model": "gpt-5.5", "input": [USER], "prompt_cache_key": "t"}
        status, text = self.server.post("/responses/compact", compact)
        self.assertEqual(status, 200, text)
        answer = json.loads(text)
        self.assertEqual(answer["object"], "response.compaction")
        self.assertEqual(answer["output"][0], USER)
        self.assertEqual(answer["output"][-1]["type"], "compaction")
        for key in ("tools", "reasoning", "store", "include", "stream", "text"):
            self.refused(dict(compact, **{key: body()[key] if key in body() else {}}), 400,
                         f"Unknown parameter: '{key}'.", key, "unknown_parameter",
                         path="/responses/compact")
        self.refused({"input": [USER]}, 400, "Missing required parameter: 'model'.", "model",
                     "missing_required_parameter", path="/responses/compact")
        call = {"type": "function_call", "call_id": "c1", "name": "exec_command",
                "arguments": "{}"}
        self.refused(dict(compact, input=[USER, call]), 400,
                     "No tool output found for function call c1.", "input",
                     path="/responses/compact")

    def test_a_compaction_item_is_replayed_only_as_issued(self):
        status, text = self.server.post("/responses/compact", {"model": "m", "input": [USER]})
        self.assertEqual(status, 200, text)
        item = json.loads(text)["output"][-1]
        events = self.served(body(input=[USER, item, USER]))
        self.assertEqual(events[-1]["type"], "response.completed")
        forged = dict(item, encrypted_content="gAAAABforged")
        self.refused(body(input=[USER, forged]), 400,
                     f"The encrypted content for item {item['id']} could not be verified.",
                     None, "invalid_encrypted_content")

    # -- tools ----------------------------------------------------------------------------
    def test_tool_name_pattern_length_and_duplicates(self):
        self.refused(body(tools=[dict(FN, name="mcp__srv__read.file")]), 400,
                     "Invalid 'tools[0].name': string does not match pattern. Expected a string "
                     "that matches the pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].name",
                     "invalid_value")
        self.refused(body(tools=[dict(FN, name="x" * 65)]), 400,
                     "Invalid 'tools[0].name': string too long. Expected a string with maximum "
                     "length 64, but got a string with length 65 instead.", "tools[0].name",
                     "string_above_max_length")
        self.refused(body(tools=[FN, FN]), 400,
                     "Duplicate tool name: 'exec_command'. Tool names must be unique.", "tools",
                     "duplicate_tool_name")

    def test_strict_function_schema(self):
        self.refused(body(tools=[dict(FN, strict=True)]), 400,
                     "Invalid schema for function 'exec_command': In context=(), "
                     "'additionalProperties' is required to be supplied and to be false.",
                     "tools[0].parameters", "invalid_function_parameters")
        params = {"type": "object", "properties": {"cmd": {"type": "string"}},
                  "additionalProperties": False}
        self.refused(body(tools=[dict(FN, strict=True, parameters=params)]), 400,
                     "Invalid schema for function 'exec_command': In context=(), 'required' is "
                     "required to be supplied and to be an array including every key in "
                     "properties. Missing 'cmd'.", "tools[0].parameters",
                     "invalid_function_parameters")
        self.served(body(tools=[dict(FN, strict=True, parameters=dict(params, required=["cmd"]))]))

    def test_output_schema_format(self):
        schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}},
                  "required": ["a"], "additionalProperties": False}
        fmt = {"type": "json_schema", "strict": True, "name": "codex_output_schema",
               "schema": schema}
        self.refused(body(text={"format": fmt}), 400,
                     "Invalid schema for response_format 'codex_output_schema': In "
                     "context=('properties', 'a'), 'additionalProperties' is required to be "
                     "supplied and to be false.", "text.format.schema", "invalid_json_schema")
        self.refused(body(text={"format": dict(fmt, name="bad name")}), 400,
                     "Invalid 'text.format.name': string does not match pattern. Expected a "
                     "string that matches the pattern '^[a-zA-Z0-9_-]+$'.", "text.format.name",
                     "invalid_value")
        self.refused(body(text={"verbosity": "loud"}), 400,
                     "Invalid value: 'loud'. Supported values are: 'low', 'medium', and 'high'.",
                     "text.verbosity", "invalid_value")

    # -- input items ----------------------------------------------------------------------
    def test_roles_and_content_parts(self):
        self.refused(body(input=[dict(USER, role="tool")]), 400,
                     "Invalid value: 'tool'. Supported values are: 'assistant', 'system', "
                     "'developer', and 'user'.", "input[0].role", "invalid_value")
        assistant = {"type": "message", "role": "assistant",
                     "content": [{"type": "input_text", "text": "x"}]}
        self.refused(body(input=[USER, assistant]), 400,
                     "Invalid value: 'input_text'. Supported values are: 'output_text' and "
                     "'refusal'.", "input[1].content[0].type", "invalid_value")
        user = dict(USER, content=[{"type": "output_text", "text": "x"}])
        self.refused(body(input=[user]), 400,
                     "Invalid value: 'output_text'. Supported values are: 'input_text', "
                     "'input_image', and 'input_file'.", "input[0].content[0].type",
                     "invalid_value")

    def test_calls_and_outputs_pair_both_ways(self):
        call = {"type": "function_call", "name": "exec_command", "arguments": "{}",
                "call_id": "call_1"}
        out = {"type": "function_call_output", "call_id": "call_1", "output": "ok"}
        self.refused(body(input=[USER, out]), 400,
                     "No tool call found for function call output with call_id call_1.", "input")
        self.refused(body(input=[USER, call]), 400,
                     "No tool output found for function call call_1.", "input")
        custom = {"type": "custom_tool_call", "name": "apply_patch", "input": "x",
                  "call_id": "call_2"}
        self.refused(body(input=[USER, custom]), 400,
                     "No tool output found for custom tool call call_2.", "input")
        self.served(body(input=[USER, call, out]))

    def test_reasoning_replay_with_store_false(self):
        rs = {"type": "reasoning", "id": "rs_1", "summary": []}
        msg = {"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "ok"}]}
        self.refused(body(input=[USER, rs, msg]), 404,
                     "Item with id 'rs_1' not found. Items are not persisted when `store` is set "
                     "to false. Try again with `store` set to true, or remove this item from "
                     "your input.", "input")
        rs_enc = dict(rs, encrypted_content=wire_rules.encrypted_content_for("rs_1"))
        self.served(body(input=[USER, rs_enc, msg]))
        self.refused(body(input=[USER, dict(rs, encrypted_content="forged"), msg]), 400,
                     "The encrypted content for item rs_1 could not be verified.", None,
                     "invalid_encrypted_content")
        self.refused(body(input=[USER, rs_enc]), 400,
                     "Item 'rs_1' of type 'reasoning' was provided without its required "
                     "following item.", "input")
        self.refused(body(input=[USER, rs_enc, USER]), 400,
                     "Item 'rs_1' of type 'reasoning' was provided without its required "
                     "following item.", "input")

    def test_encrypted_content_only_when_asked(self):
        def reasoning(events):
            return [e["item"] for e in events if e.get("type") == "response.output_item.done"
                    and e["item"]["type"] == "reasoning"][0]
        asked = reasoning(self.served(body()))
        self.assertTrue(wire_rules.encrypted_content_valid(asked["encrypted_content"]))
        self.assertTrue(asked["id"].startswith("rs_"))
        not_asked = reasoning(self.served(body(include=[])))
        self.assertNotIn("encrypted_content", not_asked)

    # -- chat completions -----------------------------------------------------------------
    def chat(self, **over):
        b = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        b.update(over)
        return b

    def test_chat_rules(self):
        self.served(self.chat(), "/chat/completions")
        self.refused(self.chat(foo=1), 400, "Unrecognized request argument supplied: foo",
                     path="/chat/completions")
        self.refused(self.chat(messages=[{"role": "robot", "content": "x"}]), 400,
                     "Invalid value: 'robot'. Supported values are: 'system', 'developer', "
                     "'user', 'assistant', 'tool', and 'function'.", "messages[0].role",
                     "invalid_value", path="/chat/completions")
        tool = {"role": "tool", "tool_call_id": "c1", "content": "x"}
        self.refused(self.chat(messages=[{"role": "user", "content": "hi"}, tool]), 400,
                     "Invalid parameter: messages with role 'tool' must be a response to a "
                     "preceeding message with 'tool_calls'.", "messages[1].role",
                     path="/chat/completions")
        asst = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
        self.refused(self.chat(messages=[{"role": "user", "content": "hi"}, asst]), 400,
                     "An assistant message with 'tool_calls' must be followed by tool messages "
                     "responding to each 'tool_call_id'. The following tool_call_ids did not "
                     "have response messages: c1", "messages", path="/chat/completions")
        self.served(self.chat(messages=[{"role": "user", "content": "hi"}, asst, tool]),
                    "/chat/completions")
        bad_tool = {"type": "function", "function": {"name": "a.b", "parameters": {}}}
        self.refused(self.chat(tools=[bad_tool]), 400,
                     "Invalid 'tools[0].function.name': string does not match pattern. Expected "
                     "a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                     "tools[0].function.name", "invalid_value", path="/chat/completions")


if __name__ == "__main__":
    unittest.main()
