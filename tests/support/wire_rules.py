"""The request rules of the OpenAI services, as the test model server enforces them (strict mode).

Each check returns None for a request the real service accepts, or (status, error) for one it
refuses, where error is the service's error object: {"message", "type", "param", "code"}. The
messages are the service's own where we know them, so a test
that breaks a rule sees what a user of the real API would see.

Responses API (POST /v1/responses):
  - top-level keys: only the documented parameters (400 "Unknown parameter: 'x'.");
    `model` required; `include` values, `reasoning.effort` / `reasoning.summary`,
    `text.verbosity` and `text.format` from their value sets;
  - tools: names match ^[a-zA-Z0-9_-]+$, at most 64 characters, unique; a strict function's
    `parameters` and a json_schema `text.format` follow the structured-output rules (every
    object has additionalProperties: false and lists every property in `required`, the root is
    an object) and the format has a valid `name`;
  - input items: message roles user|assistant|system|developer; content part types per role;
    every function_call_output / custom_tool_call_output has its call earlier in the input and
    every call its output; with store: false a reasoning item with an id and no
    encrypted_content is a 404; encrypted_content must be one this server issued; a reasoning
    item needs a following item (the output it belongs to).
Compaction (POST /v1/responses/compact): only model, input, instructions, previous_response_id,
  prompt_cache_key, prompt_cache_retention, service_tier; the input rules above; a `compaction`
  item replayed later must carry an encrypted_content this server issued.
Chat Completions (POST /v1/chat/completions):
  - top-level keys (400 "Unrecognized request argument supplied: x"); `model` and `messages`
    required; roles system|developer|user|assistant|tool; a tool message answers a tool_call_id
    of the assistant message before it; every assistant tool_call is answered; function names
    as above.
"""

import base64
import hashlib
import hmac
import re

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
NAME_MAX = 64

RESPONSES_KEYS = {
    "background", "conversation", "include", "input", "instructions", "max_output_tokens",
    "max_tool_calls", "metadata", "model", "parallel_tool_calls", "previous_response_id",
    "prompt", "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature", "text", "tool_choice",
    "tools", "top_logprobs", "top_p", "truncation", "user",
}
INCLUDE_VALUES = [
    "code_interpreter_call.outputs", "computer_call_output.output.image_url",
    "file_search_call.results", "message.input_image.image_url",
    "message.output_text.logprobs", "reasoning.encrypted_content",
    "web_search_call.action.sources", "web_search_call.results",
]
EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"]
SUMMARIES = ["auto", "concise", "detailed"]
VERBOSITIES = ["low", "medium", "high"]
ROLES = ["assistant", "system", "developer", "user"]
INPUT_PARTS = ["input_text", "input_image", "input_file"]
OUTPUT_PARTS = ["output_text", "refusal"]
ITEM_TYPES = {
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "web_search_call", "item_reference", "local_shell_call",
    "local_shell_call_output", "file_search_call", "image_generation_call",
    "code_interpreter_call", "mcp_call", "mcp_list_tools", "compaction",
}
OUTPUT_ITEM_TYPES = {"message", "function_call", "custom_tool_call", "web_search_call",
                     "local_shell_call", "file_search_call", "image_generation_call",
                     "code_interpreter_call", "mcp_call"}
TOOL_TYPES = {"function", "custom", "web_search", "web_search_preview", "file_search",
              "local_shell", "image_generation", "code_interpreter", "mcp", "computer_use_preview"}

CHAT_KEYS = {
    "model", "messages", "stream", "stream_options", "tools", "tool_choice",
    "parallel_tool_calls", "reasoning_effort", "response_format", "temperature", "top_p",
    "max_tokens", "max_completion_tokens", "n", "stop", "seed", "user", "metadata", "store",
    "logprobs", "top_logprobs", "frequency_penalty", "presence_penalty", "logit_bias",
    "modalities", "prediction", "service_tier", "verbosity", "web_search_options",
    "prompt_cache_key", "safety_identifier",
}
CHAT_ROLES = ["system", "developer", "user", "assistant", "tool", "function"]

# Encrypted reasoning content: opaque to clients, verifiable by this server, and stable across
# server restarts (a resumed session may meet a new server).
_SECRET = b"agentexec-test-model-server"


def encrypted_content_for(item_id):
    mac = hmac.new(_SECRET, item_id.encode(), hashlib.sha256).hexdigest()[:32]
    return "gAAAAB" + base64.urlsafe_b64encode(f"{item_id}.{mac}".encode()).decode()


def encrypted_content_valid(blob):
    if not isinstance(blob, str) or not blob.startswith("gAAAAB"):
        return False
    try:
        item_id, _, mac = base64.urlsafe_b64decode(blob[6:].encode()).decode().rpartition(".")
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(item_id) and encrypted_content_for(item_id) == blob


def error(message, param=None, code=None, status=400, type_="invalid_request_error"):
    return status, {"message": message, "type": type_, "param": param, "code": code}


def _supported(values):
    quoted = [f"'{v}'" for v in values]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} and {quoted[1]}"
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def invalid_value(value, values, param):
    return error(f"Invalid value: '{value}'. Supported values are: {_supported(values)}.",
                 param, "invalid_value")


def unknown_parameter(param):
    return error(f"Unknown parameter: '{param}'.", param, "unknown_parameter")


def missing(param):
    return error(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def invalid_type(param, expected, got):
    return error(f"Invalid type for '{param}': expected {expected}, but got {got} instead.",
                 param, "invalid_type")


def _json_type(v):
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "null"


def _kind(obj, param, key, allowed):
    """obj[key] and None when obj is an object whose `key` is one of `allowed` (a set is listed
    sorted in the message), else None and the service's refusal of obj or of its `key`."""
    if not isinstance(obj, dict):
        return None, invalid_type(param, "an object", _json_type(obj))
    kind = obj.get(key)
    if kind not in allowed:
        return None, invalid_value(kind, sorted(allowed) if isinstance(allowed, set) else allowed,
                                   f"{param}.{key}")
    return kind, None


def check_name(name, param):
    if not isinstance(name, str):
        return invalid_type(param, "a string", _json_type(name))
    if not NAME_RE.match(name):
        return error(f"Invalid '{param}': string does not match pattern. Expected a string that "
                     f"matches the pattern '^[a-zA-Z0-9_-]+$'.", param, "invalid_value")
    if len(name) > NAME_MAX:
        return error(f"Invalid '{param}': string too long. Expected a string with maximum "
                     f"length {NAME_MAX}, but got a string with length {len(name)} instead.",
                     param, "string_above_max_length")
    return None


def strict_schema_problem(schema, context=()):
    """The first structured-output rule `schema` breaks, as the service words it, or None."""
    ctx = "(" + ", ".join(f"'{c}'" for c in context) + ")"
    if not isinstance(schema, dict):
        return f"In context={ctx}, schema must be a JSON Schema object."
    types = schema.get("type")
    type_list = types if isinstance(types, list) else [types]
    if "object" in type_list or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return (f"In context={ctx}, 'additionalProperties' is required to be supplied and "
                    f"to be false.")
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            return f"In context={ctx}, 'properties' must be an object."
        required = schema.get("required")
        missing_keys = [k for k in props if not isinstance(required, list) or k not in required]
        if missing_keys:
            return (f"In context={ctx}, 'required' is required to be supplied and to be an array "
                    f"including every key in properties. Missing '{missing_keys[0]}'.")
        for key, sub in props.items():
            p = strict_schema_problem(sub, context + ("properties", key))
            if p:
                return p
    if "items" in schema:
        p = strict_schema_problem(schema["items"], context + ("items",))
        if p:
            return p
    for combinator in ("anyOf", "allOf"):
        for i, sub in enumerate(schema.get(combinator, []) or []):
            p = strict_schema_problem(sub, context + (combinator, str(i)))
            if p:
                return p
    for defs in ("$defs", "definitions"):
        for key, sub in (schema.get(defs) or {}).items():
            p = strict_schema_problem(sub, context + (defs, key))
            if p:
                return p
    return None


def _check_root_object(schema):
    if isinstance(schema, dict) and schema.get("type") == "object":
        return None
    got = schema.get("type") if isinstance(schema, dict) else None
    return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."


def check_tools(tools, chat=False):
    if not isinstance(tools, list):
        return invalid_type("tools", "an array", _json_type(tools))
    seen = set()
    for i, tool in enumerate(tools):
        base = f"tools[{i}]"
        t, problem = _kind(tool, base, "type", ["function"] if chat else TOOL_TYPES)
        if problem:
            return problem
        if chat:
            fn = tool.get("function")
            if not isinstance(fn, dict):
                return missing(f"{base}.function")
            for key in fn:
                if key not in ("name", "description", "parameters", "strict"):
                    return unknown_parameter(f"{base}.function.{key}")
            name, name_param, strict, params = (fn.get("name"), f"{base}.function.name",
                                                fn.get("strict"), fn.get("parameters"))
        else:
            if t not in ("function", "custom"):
                continue
            allowed = (("type", "name", "description", "parameters", "strict") if t == "function"
                       else ("type", "name", "description", "format"))
            for key in tool:
                if key not in allowed:
                    return unknown_parameter(f"{base}.{key}")
            name, name_param, strict, params = (tool.get("name"), f"{base}.name",
                                                tool.get("strict"), tool.get("parameters"))
        if name is None:
            return missing(name_param)
        problem = check_name(name, name_param)
        if problem:
            return problem
        if name in seen:
            return error(f"Duplicate tool name: '{name}'. Tool names must be unique.",
                         "tools", "duplicate_tool_name")
        seen.add(name)
        if strict is True:
            if params is None:
                return missing(f"{name_param.rsplit('.', 1)[0]}.parameters")
            p = _check_root_object(params) or strict_schema_problem(params)
            if p:
                return error(f"Invalid schema for function '{name}': {p}",
                             f"{name_param.rsplit('.', 1)[0]}.parameters", "invalid_function_parameters")
    return None


def check_text(text):
    if not isinstance(text, dict):
        return invalid_type("text", "an object", _json_type(text))
    for key in text:
        if key not in ("format", "verbosity"):
            return unknown_parameter(f"text.{key}")
    if "verbosity" in text and text["verbosity"] not in VERBOSITIES:
        return invalid_value(text["verbosity"], VERBOSITIES, "text.verbosity")
    fmt = text.get("format")
    if fmt is None:
        return None
    kind, problem = _kind(fmt, "text.format", "type", ["text", "json_object", "json_schema"])
    if problem:
        return problem
    if kind != "json_schema":
        return None
    for key in fmt:
        if key not in ("type", "name", "schema", "strict", "description"):
            return unknown_parameter(f"text.format.{key}")
    if "name" not in fmt:
        return missing("text.format.name")
    problem = check_name(fmt["name"], "text.format.name")
    if problem:
        return problem
    if "schema" not in fmt:
        return missing("text.format.schema")
    if fmt.get("strict") is True:
        p = _check_root_object(fmt["schema"]) or strict_schema_problem(fmt["schema"])
        if p:
            return error(f"Invalid schema for response_format '{fmt['name']}': {p}",
                         "text.format.schema", "invalid_json_schema")
    return None


def check_content(role, content, base):
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return invalid_type(f"{base}.content", "a string or an array", _json_type(content))
    allowed = OUTPUT_PARTS if role == "assistant" else INPUT_PARTS
    for j, part in enumerate(content):
        param = f"{base}.content[{j}]"
        t, problem = _kind(part, param, "type", allowed)
        if problem:
            return problem
        if t in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            return missing(f"{param}.text")
        if t == "input_image" and not (part.get("image_url") or part.get("file_id")):
            return missing(f"{param}.image_url")
    return None


def check_input(items, store, issued_ok=encrypted_content_valid):
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return invalid_type("input", "a string or an array", _json_type(items))
    calls = {}    # call_id -> kind, in order seen
    outputs = set()
    for i, item in enumerate(items):
        base = f"input[{i}]"
        if not isinstance(item, dict):
            return invalid_type(base, "an object", _json_type(item))
        t = item.get("type", "message" if "role" in item else None)
        if t not in ITEM_TYPES:
            return invalid_value(t, sorted(ITEM_TYPES), f"{base}.type")
        if t == "message":
            role = item.get("role")
            if role not in ROLES:
                return invalid_value(role, ROLES, f"{base}.role")
            if "content" not in item:
                return missing(f"{base}.content")
            problem = check_content(role, item["content"], base)
            if problem:
                return problem
        elif t in ("function_call", "custom_tool_call"):
            for key in ("call_id", "name") + (("arguments",) if t == "function_call"
                                              else ("input",)):
                if not isinstance(item.get(key), str):
                    return missing(f"{base}.{key}")
            calls[item["call_id"]] = t
        elif t in ("function_call_output", "custom_tool_call_output"):
            cid = item.get("call_id")
            if not isinstance(cid, str):
                return missing(f"{base}.call_id")
            if "output" not in item:
                return missing(f"{base}.output")
            if cid not in calls:
                return error(f"No tool call found for function call output with call_id {cid}.",
                             "input")
            outputs.add(cid)
        elif t == "compaction":
            enc = item.get("encrypted_content")
            if not isinstance(enc, str):
                return missing(f"{base}.encrypted_content")
            if not issued_ok(enc):
                return error(f"The encrypted content for item {item.get('id')} could not be "
                             f"verified.", None, "invalid_encrypted_content")
        elif t == "reasoning":
            rid = item.get("id")
            enc = item.get("encrypted_content")
            if not isinstance(item.get("summary"), list):
                return missing(f"{base}.summary")
            if enc is None and rid is not None and store is False:
                return error(f"Item with id '{rid}' not found. Items are not persisted when "
                             f"`store` is set to false. Try again with `store` set to true, or "
                             f"remove this item from your input.", "input", None, status=404)
            if enc is None and rid is None:
                return missing(f"{base}.encrypted_content")
            if enc is not None and not issued_ok(enc):
                return error(f"The encrypted content for item {rid} could not be verified.",
                             None, "invalid_encrypted_content")
            nxt = items[i + 1] if i + 1 < len(items) else None
            nxt_type = None
            if isinstance(nxt, dict):
                nxt_type = nxt.get("type", "message" if "role" in nxt else None)
                if nxt_type == "message" and nxt.get("role") != "assistant":
                    nxt_type = "input_message"
            if nxt_type not in OUTPUT_ITEM_TYPES and nxt_type != "reasoning":
                return error(f"Item '{rid}' of type 'reasoning' was provided without its "
                             f"required following item.", "input")
    for cid, kind in calls.items():
        if cid not in outputs:
            what = "function call" if kind == "function_call" else "custom tool call"
            return error(f"No tool output found for {what} {cid}.", "input")
    return None


def _body_problem(body, keys, unknown=unknown_parameter):
    """The refusal of a body that is not a JSON object, holds a key outside `keys` (`unknown`
    words it as the endpoint does) or names no model; None when it passes these three."""
    if not isinstance(body, dict):
        return error("The request body must be a JSON object.", None, "invalid_json")
    for key in body:
        if key not in keys:
            return unknown(key)
    if "model" not in body:
        return missing("model")
    return None


def check_responses(body):
    problem = _body_problem(body, RESPONSES_KEYS)
    if problem:
        return problem
    if not isinstance(body["model"], str):
        return invalid_type("model", "a string", _json_type(body["model"]))
    if not body["model"]:
        return error("Invalid 'model': empty string. Expected a string with minimum length 1, "
                     "but got an empty string instead.", "model", "empty_string")
    include = body.get("include", [])
    if not isinstance(include, list):
        return invalid_type("include", "an array", _json_type(include))
    for j, value in enumerate(include):
        if value not in INCLUDE_VALUES:
            return invalid_value(value, INCLUDE_VALUES, f"include[{j}]")
    reasoning = body.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, dict):
            return invalid_type("reasoning", "an object", _json_type(reasoning))
        for key in reasoning:
            if key not in ("effort", "summary", "generate_summary"):
                return unknown_parameter(f"reasoning.{key}")
        if "effort" in reasoning and reasoning["effort"] not in EFFORTS:
            return invalid_value(reasoning["effort"], EFFORTS, "reasoning.effort")
        if "summary" in reasoning and reasoning["summary"] not in SUMMARIES:
            return invalid_value(reasoning["summary"], SUMMARIES, "reasoning.summary")
    for key in ("store", "stream", "parallel_tool_calls"):
        if key in body and not isinstance(body[key], bool):
            return invalid_type(key, "a boolean", _json_type(body[key]))
    if "tool_choice" in body and body["tool_choice"] not in ("auto", "none", "required") \
            and not isinstance(body["tool_choice"], dict):
        return invalid_value(body["tool_choice"], ["auto", "none", "required"], "tool_choice")
    if "prompt_cache_key" in body and not isinstance(body["prompt_cache_key"], str):
        return invalid_type("prompt_cache_key", "a string", _json_type(body["prompt_cache_key"]))
    problem = check_tools(body.get("tools", []))
    if problem:
        return problem
    if "text" in body:
        problem = check_text(body["text"])
        if problem:
            return problem
    # The service stores responses unless told not to.
    return check_input(body.get("input", []), body.get("store", True))


COMPACT_KEYS = {"model", "input", "instructions", "previous_response_id", "prompt_cache_key",
                "prompt_cache_retention", "service_tier"}


def check_compact(body):
    """POST /v1/responses/compact: only its documented parameters (no tools, reasoning, text,
    include or store), `model` required, and the input rules of /v1/responses; compaction stores
    nothing, so reasoning must carry its encrypted content."""
    problem = _body_problem(body, COMPACT_KEYS)
    if problem:
        return problem
    if not isinstance(body["model"], str) or not body["model"]:
        return invalid_type("model", "a string", _json_type(body["model"]))
    if "prompt_cache_key" in body and not isinstance(body["prompt_cache_key"], str):
        return invalid_type("prompt_cache_key", "a string", _json_type(body["prompt_cache_key"]))
    return check_input(body.get("input", []), False)


def check_chat(body):
    problem = _body_problem(
        body, CHAT_KEYS,
        lambda key: error(f"Unrecognized request argument supplied: {key}", None, None))
    if problem:
        return problem
    messages = body.get("messages")
    if messages is None:
        return missing("messages")
    if not isinstance(messages, list) or not messages:
        return error("Invalid 'messages': empty array. Expected an array with minimum length 1, "
                     "but got an empty array instead.", "messages", "empty_array")
    if "reasoning_effort" in body and body["reasoning_effort"] not in EFFORTS:
        return invalid_value(body["reasoning_effort"], EFFORTS, "reasoning_effort")
    if "tools" in body:
        problem = check_tools(body["tools"], chat=True)
        if problem:
            return problem
    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        js = rf.get("json_schema")
        if not isinstance(js, dict) or "name" not in js:
            return missing("response_format.json_schema.name")
        problem = check_name(js["name"], "response_format.json_schema.name")
        if problem:
            return problem
        if js.get("strict") is True:
            p = _check_root_object(js.get("schema")) or strict_schema_problem(js.get("schema"))
            if p:
                return error(f"Invalid schema for response_format '{js['name']}': {p}",
                             "response_format", "invalid_json_schema")
    pending = None  # tool_call ids of the last assistant message still to be answered
    for i, m in enumerate(messages):
        base = f"messages[{i}]"
        role, problem = _kind(m, base, "role", CHAT_ROLES)
        if problem:
            return problem
        if role == "tool":
            cid = m.get("tool_call_id")
            if pending is None or cid not in pending:
                return error("Invalid parameter: messages with role 'tool' must be a response to "
                             "a preceeding message with 'tool_calls'.", f"{base}.role")
            pending.discard(cid)
            continue
        if pending:
            return error("An assistant message with 'tool_calls' must be followed by tool "
                         "messages responding to each 'tool_call_id'. The following "
                         f"tool_call_ids did not have response messages: {', '.join(sorted(pending))}",
                         "messages", None)
        pending = None
        content = m.get("content")
        if role == "assistant":
            calls = m.get("tool_calls")
            if content is None and not calls:
                return missing(f"{base}.content")
            if calls:
                pending = set()
                for j, c in enumerate(calls):
                    fn = c.get("function") if isinstance(c, dict) else None
                    if not isinstance(fn, dict) or not isinstance(c.get("id"), str):
                        return missing(f"{base}.tool_calls[{j}].id")
                    problem = check_name(fn.get("name"), f"{base}.tool_calls[{j}].function.name")
                    if problem:
                        return problem
                    pending.add(c["id"])
        elif content is None:
            return missing(f"{base}.content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                t = part.get("type") if isinstance(part, dict) else None
                allowed = (["text", "refusal"] if role == "assistant"
                           else ["text", "image_url", "input_audio", "file"] if role == "user"
                           else ["text"])
                if t not in allowed:
                    return invalid_value(t, allowed, f"{base}.content[{j}].type")
    if pending:
        return error("An assistant message with 'tool_calls' must be followed by tool messages "
                     "responding to each 'tool_call_id'. The following tool_call_ids did not "
                     f"have response messages: {', '.join(sorted(pending))}", "messages", None)
    return None
