"""A small GitLab CI runner for tests: interpolates a component's `spec: inputs`
($[[ inputs.NAME ]]) as GitLab does, then runs a job's before_script/script/after_script
for real in bash (`set -eo pipefail`, as the runner's bash shell does) with the job's
variables (expanded unless `expand: false`), and checks its artifact paths."""
import os
import re
import subprocess

import yaml


def _read(path):
    with open(path) as f:
        return f.read()


def load_component(path, inputs):
    """The component's jobs after input interpolation. Unknown inputs, missing required
    inputs, values of the wrong `type`, outside `options` or not matching `regex` are errors,
    as in GitLab."""
    header, body = list(yaml.safe_load_all(_read(path)))
    spec = header["spec"]["inputs"]
    unknown = set(inputs) - set(spec)
    if unknown:
        raise ValueError(f"unknown inputs: {sorted(unknown)}")
    values = {}
    for name, decl in spec.items():
        decl = decl or {}
        if name in inputs:
            values[name] = inputs[name]
        elif "default" in decl:
            values[name] = decl["default"]
        else:
            raise ValueError(f"missing required input {name}")
        if "options" in decl and values[name] not in decl["options"]:
            raise ValueError(f"input {name}: {values[name]!r} is not one of {decl['options']}")
        kind = decl.get("type", "string")
        types = {"string": str, "number": (int, float), "boolean": bool, "array": list}
        if not isinstance(values[name], types[kind]) or (
                kind == "number" and isinstance(values[name], bool)):
            raise ValueError(f"input {name}: {values[name]!r} is not a {kind}")
        if "regex" in decl and not re.search(decl["regex"], str(values[name])):
            raise ValueError(f"input {name}: {values[name]!r} does not match {decl['regex']}")

    def interp(v):
        if isinstance(v, dict):
            return {interp(k): interp(x) for k, x in v.items()}
        if isinstance(v, list):
            return [interp(x) for x in v]
        if isinstance(v, str):
            def sub(m):
                name = m.group(1)
                if name not in values:
                    raise ValueError(f"unknown input in $[[ inputs.{name} ]]")
                value = values[name]
                # GitLab interpolates a boolean as true / false.
                return str(value).lower() if isinstance(value, bool) else str(value)
            return re.sub(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]", sub, v)
        return v

    return interp(body)


def expand(value, env):
    """GitLab's variable expansion in `variables:` ($VAR, ${VAR}; unknown → empty)."""
    return re.sub(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))",
                  lambda m: env.get(m.group(1) or m.group(2), ""), value)


class JobResult:
    def __init__(self, code, log, artifacts):
        self.code, self.log, self.artifacts = code, log, artifacts


def run_job(job, project_dir, env, project_vars=None, timeout=300):
    """Runs one job. `env` is the machine's environment with the predefined CI_* variables;
    `project_vars` are CI/CD settings variables, which win over the YAML's."""
    full = dict(env)
    full.update({"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": project_dir})
    for name, v in (job.get("variables") or {}).items():
        if isinstance(v, dict):
            value = str(v.get("value", ""))
            full[name] = value if v.get("expand") is False else expand(value, full)
        else:
            full[name] = expand(str(v), full)
    full.update(project_vars or {})

    def bash(lines):
        script = "set -eo pipefail\n" + "\n".join(lines) + "\n"
        p = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=project_dir,
                           env=full, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr

    code, log = bash(list(job.get("before_script", [])) + list(job.get("script", [])))
    if job.get("after_script"):
        _, after = bash(job["after_script"])
        log += after
    arts = job.get("artifacts") or {}
    collected = {}
    if arts and (arts.get("when") == "always" or (code == 0) == (arts.get("when", "on_success") == "on_success")):
        for p in arts.get("paths", []):
            collected[p] = os.path.exists(os.path.join(project_dir, p))
    return JobResult(code, log, collected)
