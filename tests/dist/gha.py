"""A small GitHub Actions runner for tests: runs the `run:` steps of a workflow job or of a
composite action (action.yml) for real, the way the hosted runner does, so that the shell in
our YAML is tested rather than only linted.

What it implements, because our files use it: ${{ }} expressions (contexts inputs, env,
steps, github, runner, secrets, matrix, vars; literals; == != && || ! and parentheses;
always() success() failure() cancelled() contains() startsWith() endsWith() format()
toJSON() fromJSON()), `if:`, step/job/workflow `env:`, `working-directory:`,
`defaults.run`, `continue-on-error`, GITHUB_OUTPUT / GITHUB_ENV / GITHUB_PATH /
GITHUB_STEP_SUMMARY files, the default shells (`bash -e {0}` when no shell is named,
`bash --noprofile --norc -eo pipefail {0}` for `shell: bash`), composite actions through
`uses: ./` or any `*/agentexec@*` (mapped to this repository), and outputs. Other `uses:`
are recorded (with their evaluated `with:`) and succeed, except that upload-artifact checks
that its path exists, like the real one with if-no-files-found: error/warn.
With `job_log`, each step's stdout and stderr go into that one file as they are written (as a
runner streams them to the job log), so a test can read the log while a step still runs.
"""
import json
import os
import re
import subprocess
import tempfile

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(path, **kw):
    with open(path, **kw) as f:
        return f.read()


class ExprError(Exception):
    pass


# ---------------------------------------------------------------- expressions
_TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|"
                    r"(?P<op>==|!=|&&|\|\||<=|>=|[!<>()\[\],.*])|(?P<id>[A-Za-z_][A-Za-z0-9_-]*))")


def _tokens(text):
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"cannot parse expression at {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


class _Parser:
    def __init__(self, text, ctx, status):
        self.toks = _tokens(text)
        self.i = 0
        self.ctx = ctx
        self.status = status  # "success" | "failure" | "cancelled"
        self.used_status = False

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise ExprError(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self):
        v = self.or_()
        if self.i != len(self.toks):
            raise ExprError(f"trailing tokens: {self.toks[self.i:]}")
        return v

    def or_(self):
        v = self.and_()
        while self.peek()[1] == "||":
            self.take()
            r = self.and_()
            v = v if _truthy(v) else r
        return v

    def and_(self):
        v = self.cmp()
        while self.peek()[1] == "&&":
            self.take()
            r = self.cmp()
            v = r if _truthy(v) else v
        return v

    def cmp(self):
        v = self.unary()
        while self.peek()[1] in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            r = self.unary()
            a, b = _coerce(v, r)
            try:
                v = {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                     ">": lambda: a > b, "<=": lambda: a <= b, ">=": lambda: a >= b}[op]()
            except TypeError:
                v = False
        return v

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return not _truthy(self.unary())
        return self.postfix(self.primary())

    def primary(self):
        kind, val = self.take()
        if kind == "num":
            return float(val) if "." in val else int(val)
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if val == "(":
            v = self.or_()
            self.take(")")
            return v
        if kind == "id":
            if val in ("true", "false"):
                return val == "true"
            if val == "null":
                return None
            if self.peek()[1] == "(":
                self.take("(")
                args = []
                while self.peek()[1] != ")":
                    args.append(self.or_())
                    if self.peek()[1] == ",":
                        self.take()
                self.take(")")
                return self.call(val, args)
            return self.ctx.get(val)
        raise ExprError(f"unexpected {val!r}")

    def postfix(self, v):
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                name = self.take()[1]
                v = v.get(name) if isinstance(v, dict) else None
            else:
                key = self.or_()
                self.take("]")
                v = v.get(key) if isinstance(v, dict) else None
        return v

    def call(self, name, args):
        name = name.lower()
        if name in ("always", "success", "failure", "cancelled"):
            self.used_status = True
            return {"always": True, "success": self.status == "success",
                    "failure": self.status == "failure",
                    "cancelled": self.status == "cancelled"}[name]
        if name == "contains":
            hay, needle = args
            if isinstance(hay, list):
                return any(_loose(x) == _loose(needle) for x in hay)
            return str(_str(needle)).lower() in str(_str(hay)).lower()
        if name == "startswith":
            return _str(args[0]).lower().startswith(_str(args[1]).lower())
        if name == "endswith":
            return _str(args[0]).lower().endswith(_str(args[1]).lower())
        if name == "format":
            fmt = _str(args[0])
            return re.sub(r"\{(\d+)\}", lambda m: _str(args[1 + int(m.group(1))]), fmt)
        if name == "tojson":
            return json.dumps(args[0], indent=2)
        if name == "fromjson":
            return json.loads(args[0])
        if name == "hashfiles":
            return "hash-" + "-".join(_str(a) for a in args)
        raise ExprError(f"unknown function {name}()")


def _truthy(v):
    return v not in (None, False, 0, "", 0.0)


def _number(v):
    if v is None:
        return 0
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        try:
            return float(v) if v.strip() else 0
        except ValueError:
            return float("nan")
    return float("nan")


def _coerce(a, b):
    """GitHub's loose comparison: same types compare as they are (strings ignoring case),
    different types as numbers (null and '' are 0)."""
    if type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                              and not isinstance(a, bool) and not isinstance(b, bool)):
        return _loose(a), _loose(b)
    return _number(a), _number(b)


def _loose(v):
    if isinstance(v, str):
        return v.lower()
    return v


def _str(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return str(v)


def evaluate(expr, ctx, status="success"):
    p = _Parser(expr, ctx, status)
    return p.parse(), p.used_status


def interpolate(value, ctx):
    """Replaces every ${{ expr }} in a string (recursively in dicts/lists)."""
    if isinstance(value, dict):
        return {k: interpolate(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, ctx) for v in value]
    if not isinstance(value, str):
        return value
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _str(evaluate(m.group(1), ctx)[0]), value)


def condition(cond, ctx, status):
    """An `if:`: success() is implied unless a status function appears."""
    if cond is None:
        return status == "success"
    if isinstance(cond, bool):
        return cond and status == "success"
    text = str(cond).strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    if m:
        text = m.group(1)
    value, used_status = evaluate(text, ctx, status)
    return _truthy(value) if used_status else (_truthy(value) and status == "success")


# ---------------------------------------------------------------- files runners write
def parse_kv_file(path):
    out = {}
    if not os.path.exists(path):
        return out
    lines = _read(path, encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        m = re.match(r"^([^=<]+)<<(.+)$", line)
        if m:
            name, delim, body = m.group(1), m.group(2), []
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            if i >= len(lines):
                raise ValueError(f"{path}: unterminated {name}<<{delim}")
            i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
        else:
            raise ValueError(f"{path}: invalid line {line!r}")
    return out


class Result:
    def __init__(self):
        self.steps = []       # (name, conclusion, exit code, stdout+stderr)
        self.uses = []        # (uses, with) of every recorded action
        self.outputs = {}
        self.success = True
        self.summary = ""


class Runner:
    """One job's environment: temp files, PATH, the github/runner contexts."""

    def __init__(self, workspace, env=None, secrets=None, github=None, vars_=None,
                 uses_stubs=None, timeout=300, tmp=None, job_log=None):
        self.workspace = workspace
        self.job_log = job_log
        self.tmp = tempfile.mkdtemp(prefix="gha-", dir=tmp)
        self.base_env = dict(env or os.environ)
        self.secrets = secrets or {}
        self.vars = vars_ or {}
        self.github = {"workspace": workspace, "run_id": "1", "run_attempt": "1",
                       "repository": "octo/repo", "event_name": "workflow_dispatch",
                       "sha": "0" * 40, "ref": "refs/heads/main", "ref_name": "main",
                       "actor": "octocat", "server_url": "https://github.com",
                       "api_url": "https://api.github.com", "event": {}, "token": "ghs_test"}
        self.github.update(github or {})
        self.runner = {"temp": os.path.join(self.tmp, "runner-temp"), "os": "Linux",
                       "arch": "X64", "tool_cache": os.path.join(self.tmp, "tool-cache")}
        os.makedirs(self.runner["temp"])
        os.makedirs(self.runner["tool_cache"])
        self.summary_file = os.path.join(self.tmp, "step-summary.md")
        open(self.summary_file, "w").close()
        self.job_env = {}
        self.path_prepend = []
        self.uses_stubs = uses_stubs or {}
        self.timeout = timeout
        self.counter = 0

    # -- one step
    def _shell_argv(self, shell, script_path):
        if shell is None:
            return ["bash", "-e", script_path]
        if shell == "bash":
            return ["bash", "--noprofile", "--norc", "-eo", "pipefail", script_path]
        if shell == "sh":
            return ["sh", "-e", script_path]
        raise ValueError(f"shell {shell!r} not supported here")

    def run_script(self, script, shell, env, cwd):
        self.counter += 1
        files = {k: os.path.join(self.tmp, f"{k.lower()}-{self.counter}")
                 for k in ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")}
        for f in files.values():
            open(f, "w").close()
        script_path = os.path.join(self.tmp, f"step-{self.counter}.sh")
        with open(script_path, "w") as f:
            f.write(script)
        full = dict(self.base_env)
        full.update(env)
        full.update(files)
        full.update({"GITHUB_STEP_SUMMARY": self.summary_file, "GITHUB_WORKSPACE": self.workspace,
                     "RUNNER_TEMP": self.runner["temp"], "RUNNER_TOOL_CACHE": self.runner["tool_cache"],
                     "GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_OS": "Linux",
                     "GITHUB_REPOSITORY": self.github["repository"],
                     "GITHUB_RUN_ID": self.github["run_id"], "GITHUB_SHA": self.github["sha"],
                     "GITHUB_REF_NAME": self.github["ref_name"],
                     "GITHUB_SERVER_URL": self.github["server_url"]})
        if self.path_prepend:
            full["PATH"] = ":".join(reversed(self.path_prepend)) + ":" + full.get("PATH", "")
        argv = self._shell_argv(shell, script_path)
        if self.job_log:
            # One file for both streams, appended as the step writes (no pipe to buffer in).
            with open(self.job_log, "ab") as log:
                start = log.seek(0, os.SEEK_END)
                code = subprocess.run(argv, cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=subprocess.STDOUT,
                                      timeout=self.timeout).returncode
            with open(self.job_log, "rb") as log:
                log.seek(start)
                text = log.read().decode("utf-8", "replace")
        else:
            proc = subprocess.run(argv, cwd=cwd, env=full, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=self.timeout)
            code, text = proc.returncode, proc.stdout + proc.stderr
        outputs = parse_kv_file(files["GITHUB_OUTPUT"])
        self.job_env.update(parse_kv_file(files["GITHUB_ENV"]))
        for line in _read(files["GITHUB_PATH"]).splitlines():
            if line:
                self.path_prepend.append(line)
        return code, text, outputs

    def context(self, extra):
        ctx = {"github": self.github, "runner": self.runner, "secrets": self.secrets,
               "vars": self.vars, "env": {}, "steps": {}, "matrix": {}, "inputs": {}, "job": {}}
        ctx.update(extra)
        return ctx

    def run_steps(self, steps, ctx, result, env, cwd_default, shell_default, action_path=None):
        status = "success"
        for i, step in enumerate(steps):
            name = step.get("name") or step.get("id") or step.get("uses") or f"step {i}"
            sid = step.get("id", f"__{i}")
            step_ctx = dict(ctx)
            step_ctx["env"] = dict(env)
            if not condition(step.get("if"), step_ctx, status):
                result.steps.append((name, "skipped", None, ""))
                ctx["steps"][sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
                continue
            step_env = dict(env)
            step_env.update({k: _str(v) for k, v in interpolate(step.get("env", {}), step_ctx).items()})
            step_ctx["env"] = step_env
            if "run" in step:
                script = interpolate(step["run"], step_ctx)
                cwd = interpolate(step.get("working-directory", cwd_default), step_ctx)
                cwd = os.path.join(self.workspace, cwd) if not os.path.isabs(cwd) else cwd
                shell = step.get("shell", shell_default)
                code, log, outputs = self.run_script(script, shell, {**self.job_env, **step_env}, cwd)
            else:
                code, log, outputs = self.run_uses(step, step_ctx, result, action_path)
            ok = code == 0 or step.get("continue-on-error") is True
            result.steps.append((name, "success" if code == 0 else "failure", code, log))
            ctx["steps"][sid] = {"outputs": outputs, "outcome": "success" if code == 0 else "failure",
                                 "conclusion": "success" if ok else "failure"}
            if not ok:
                status = "failure"
        return status

    def run_uses(self, step, ctx, result, action_path):
        uses = step["uses"]
        with_ = {k: _str(v) for k, v in interpolate(step.get("with", {}), ctx).items()}
        result.uses.append((uses, with_))
        if uses == "./" or uses == "." or re.match(r"^[^/]+/agentexec@", uses):
            sub = self.run_action(REPO_ROOT, with_)
            result.uses.extend(sub.uses)
            return (0 if sub.success else 1), "\n".join(s[3] for s in sub.steps), sub.outputs
        if uses in self.uses_stubs:
            return self.uses_stubs[uses](with_, self)
        if uses.startswith("actions/upload-artifact@"):
            paths = [p for p in with_.get("path", "").splitlines() if p.strip()]
            missing = [p for p in paths if not os.path.exists(os.path.join(self.workspace, p))]
            if missing and with_.get("if-no-files-found", "warn") == "error":
                return 1, f"upload-artifact: no files at {missing}", {}
            return 0, f"upload-artifact: {with_.get('name')} <- {paths}", {}
        return 0, f"(recorded {uses})", {}

    def run_action(self, action_dir, with_):
        spec = yaml.safe_load(_read(os.path.join(action_dir, "action.yml")))
        result = Result()
        inputs = {}
        for k, v in (spec.get("inputs") or {}).items():
            inputs[k] = with_.get(k, _str(v.get("default", "")))
        unknown = set(with_) - set(inputs)
        if unknown:
            raise ValueError(f"unknown inputs {unknown} for {action_dir}/action.yml")
        github = dict(self.github, action_path=action_dir,
                      action_repository=self.github.get("action_repository", ""))
        ctx = self.context({"inputs": inputs, "github": github})
        status = self.run_steps(spec["runs"]["steps"], ctx, result, {}, ".", None, action_dir)
        result.success = status == "success"
        for k, v in (spec.get("outputs") or {}).items():
            result.outputs[k] = _str(interpolate(v["value"], ctx))
        return result

    def run_job(self, workflow_path, job_id, matrix=None, inputs=None, job_index=0):
        wf = yaml.safe_load(_read(workflow_path))
        job = wf["jobs"][job_id]
        result = Result()
        ctx = self.context({"matrix": matrix or {}, "inputs": inputs or {},
                            "strategy": {"job-index": job_index, "fail-fast": False}})
        if "if" in job and not condition(job["if"], ctx, "success"):
            result.steps.append(("(job)", "skipped", None, ""))
            return result
        env = {k: _str(v) for k, v in interpolate(wf.get("env", {}), ctx).items()}
        env.update({k: _str(v) for k, v in interpolate(job.get("env", {}), ctx).items()})
        run_defaults = (job.get("defaults") or wf.get("defaults") or {}).get("run", {})
        status = self.run_steps(job["steps"], ctx, result, env,
                                run_defaults.get("working-directory", "."),
                                run_defaults.get("shell"))
        result.success = status == "success"
        for k, v in (job.get("outputs") or {}).items():
            result.outputs[k] = _str(interpolate(v, ctx))
        result.summary = _read(self.summary_file)
        return result
