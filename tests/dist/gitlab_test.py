"""The GitLab CI/CD component (templates/agentexec.yml) and the GitLab examples, run by
tests/dist/gitlab.py against the real binary and the scripted provider."""
import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gitlab  # noqa: E402
import support  # noqa: E402
from gitlab import _read  # noqa: E402

TEMPLATE = os.path.join(support.REPO_ROOT, "templates/agentexec.yml")
EXAMPLES = os.path.join(support.REPO_ROOT, "ci-examples/gitlab")


class GitLabTest(unittest.TestCase):
    def setUp(self):
        self.tmp = support.scratch(self)
        self.repo = support.demo_repo(os.path.join(self.tmp, "project"))
        # The image: agentexec on PATH, the scripts where the Dockerfile copies them.
        self.bindir = os.path.join(self.tmp, "bin")
        os.makedirs(self.bindir)
        os.symlink(support.agentexec_bin(), os.path.join(self.bindir, "agentexec"))

    def env(self, turns):
        home = support.scripted_home(os.path.join(self.tmp, "home"), turns)
        env = support.base_env(self.tmp, home)
        env["PATH"] = self.bindir + ":" + env["PATH"]
        env.pop("AGENTEXEC_BIN", None)  # the image's agentexec is the one on PATH
        env.update({"CI_PIPELINE_ID": "77", "CI_DEFAULT_BRANCH": "main",
                    "CI_SERVER_HOST": "gitlab.example.com", "CI_PROJECT_PATH": "g/p",
                    "OPENAI_API_KEY": "sk-from-project-variable"})
        return env

    # The image's layout, from the repository (the docker test checks the Dockerfile copies
    # the same files there).
    IMAGE_VARS = {"AGENTEXEC_SCRIPTS": os.path.join(support.REPO_ROOT, "scripts")}

    def component_job(self, **inputs):
        jobs = gitlab.load_component(TEMPLATE, inputs)
        self.assertEqual(len(jobs), 1)
        return next(iter(jobs.items()))

    def test_component_inputs_are_checked(self):
        with self.assertRaisesRegex(ValueError, "unknown inputs: \\['promt'\\]"):
            gitlab.load_component(TEMPLATE, {"promt": "x"})
        with self.assertRaisesRegex(ValueError, "input sandbox: 'full' is not one of"):
            gitlab.load_component(TEMPLATE, {"sandbox": "full"})
        # Typed inputs: a YAML number where the component wants a string, a count that is not
        # one, a duration without a unit are refused before any job runs.
        with self.assertRaisesRegex(ValueError, "input max-turns: 40 is not a string"):
            gitlab.load_component(TEMPLATE, {"max-turns": 40})
        with self.assertRaisesRegex(ValueError, "input max-turns: 'forty' does not match"):
            gitlab.load_component(TEMPLATE, {"max-turns": "forty"})
        with self.assertRaisesRegex(ValueError, "input timeout: '20' does not match"):
            gitlab.load_component(TEMPLATE, {"timeout": "20"})
        for spec in gitlab.yaml.safe_load_all(gitlab._read(TEMPLATE)):
            for name, decl in spec["spec"]["inputs"].items():
                self.assertIn(decl.get("type"), ("string", "number", "boolean"), name)
            break
        gitlab.load_component(TEMPLATE, {"max-turns": "40", "timeout": "1h30m"})

    def test_component_runs_the_demo_and_keeps_artifacts(self):
        name, job = self.component_job(prompt="make the failing test pass $HOME stays text",
                                       **{"job-name": "fix"})
        self.assertEqual(name, "fix")
        self.assertEqual(job["image"]["name"], "ghcr.io/OWNER/agentexec:0.1.0")
        r = gitlab.run_job(job, self.repo, self.env(support.DEMO_TURNS), self.IMAGE_VARS)
        self.assertEqual(r.code, 0, r.log)
        self.assertEqual(r.artifacts, {"agentexec-out/": True})
        out = os.path.join(self.repo, "agentexec-out")
        events = [json.loads(l) for l in _read(os.path.join(out, "events.jsonl")).splitlines()]
        final = [e["item"]["text"] for e in events if e["type"] == "item.completed"
                 and e["item"]["type"] == "agent_message"][-1]
        self.assertEqual(_read(os.path.join(out, "final-message.md")), final)
        self.assertEqual(_read(os.path.join(out, "exit-code")), "0\n")
        summary = _read(os.path.join(out, "summary.md"))
        self.assertTrue(summary.startswith("### agentexec: completed\n"))
        self.assertIn(summary.strip(), r.log)  # after_script prints it into the job log
        # The job log has agentexec's human progress, not the JSONL.
        self.assertIn(f"session id: {events[0]['thread_id']}\n", r.log)
        self.assertIn("exec\n/bin/bash -lc 'ls && cat calc.py'\n succeeded in ", r.log)
        self.assertNotIn('{"type":', r.log)
        patch = _read(os.path.join(out, "changes.patch"))
        # The fix alone: not the artifact directory, not the __pycache__ the tests left.
        self.assertEqual([l for l in patch.splitlines() if l.startswith("diff --git")],
                         ["diff --git a/calc.py b/calc.py"], patch[:2000])
        self.assertTrue(os.path.isdir(os.path.join(self.repo, "__pycache__")),
                        "the demo's tests left no __pycache__: the case proves nothing")
        # The prompt reached agentexec unexpanded (expand: false).
        rollouts = subprocess.run(["grep", "-rl", "stays text", os.path.join(self.tmp, "home")],
                                  capture_output=True, text=True).stdout
        self.assertTrue(rollouts, "prompt not in the session log")
        self.assertEqual(subprocess.run(["grep", "-rl", "$HOME stays text",
                                         os.path.join(self.tmp, "home")],
                                        capture_output=True).returncode, 0)

    def test_component_review_needs_no_prompt_and_publishes_code_quality_and_sarif(self):
        answer = {"findings": [{"title": "Loop skips the last element", "body": "Off by one.",
                                "confidence_score": 0.9, "priority": 0,
                                "code_location": {"absolute_file_path": "calc.py",
                                                  "line_range": {"start": 3, "end": 4}}}],
                  "overall_correctness": "patch is incorrect",
                  "overall_explanation": "One bug.", "overall_confidence_score": 0.8}
        turns = support.write_turns(os.path.join(self.tmp, "review.json"),
                                    [{"items": [{"type": "message",
                                                 "text": json.dumps(answer)}]}])
        name, job = self.component_job(review=True, **{"job-name": "review"})
        self.assertEqual(job["artifacts"]["reports"],
                         {"codequality": "agentexec-out/gl-code-quality-report.json"})
        r = gitlab.run_job(job, self.repo, self.env(turns), self.IMAGE_VARS)
        self.assertEqual(r.code, 0, r.log)
        out = os.path.join(self.repo, "agentexec-out")
        quality = json.loads(_read(os.path.join(out, "gl-code-quality-report.json")))
        self.assertEqual([(q["check_name"], q["location"]["path"], q["location"]["lines"])
                          for q in quality],
                         [("agentexec/review/p0", "calc.py", {"begin": 3, "end": 4})])
        sarif = json.loads(_read(os.path.join(out, "gl-sarif-report.sarif")))
        self.assertEqual(sarif["version"], "2.1.0")
        self.assertEqual(len(sarif["runs"][0]["results"]), 1)
        self.assertTrue(_read(os.path.join(out, "final-message.md")).startswith(
            "## Code review\n\n**Verdict: patch is incorrect**"))
        events = [json.loads(l) for l in _read(os.path.join(out, "events.jsonl")).splitlines()]
        self.assertEqual([e["item"]["type"] for e in events if e["type"] == "item.completed"
                          and e["item"]["type"] == "review"], ["review"])
        # Read-only, whatever the sandbox input says: no warning that it was overridden.
        self.assertNotIn("is ignored", r.log)

    def test_component_failure_fails_the_job_and_keeps_artifacts(self):
        turns = support.write_turns(os.path.join(self.tmp, "f.json"), [{"fail": "boom"}])
        _, job = self.component_job(prompt="x")
        r = gitlab.run_job(job, self.repo, self.env(turns), self.IMAGE_VARS)
        self.assertEqual(r.code, 1, r.log)
        self.assertEqual(r.artifacts, {"agentexec-out/": True})
        self.assertIn("### agentexec: failed", r.log)

    def test_confined_command_cannot_make_the_job_write_through_links(self):
        # agentexec-out/ lies in the workspace: a command creates it and plants links there and
        # in the private directory (under ~/.cache) the job now writes into instead.
        victims, hook = support.attack_setup(self, self.repo)
        turns = support.attack_turns(os.path.join(self.tmp, "attack.json"),
                                     ['"$CI_PROJECT_DIR/agentexec-out"',
                                      '"$HOME"/.cache/agentexec-*'], victims)
        _, job = self.component_job(prompt="x")
        r = gitlab.run_job(job, self.repo, self.env(turns), self.IMAGE_VARS)
        out = os.path.join(os.path.realpath(self.repo), "agentexec-out")
        support.assert_nothing_written_through(self, victims, hook)
        # Nothing the command left is uploaded.
        self.assertEqual(r.artifacts, {"agentexec-out/": False})
        self.assertIn(f"agentexec step: {out} was created during the run; removed it, not "
                      "writing the artifacts there (they are in ", r.log)
        self.assertEqual(r.code, 5, r.log)
        private = r.log.split("(they are in ")[1].split(")")[0]
        self.assertNotIn(f"planted {private}", _read(os.path.join(private, "events.jsonl")))
        self.assertIn(f"planted {out}", _read(os.path.join(private, "events.jsonl")))
        support.assert_no_links_no_environment(self, private, "sk-from-project-variable")

    def test_unconfined_command_finds_the_key_not_in_run_sh(self):
        # GitLab hands the CI/CD variable over in the job shell's environment; run.sh starts
        # with it in its own block (before its hand-off, a command found it there as "bash
        # environ (run.sh)"). Here the job shell itself is gone: `bash -c` runs its last
        # command, run.sh, in its own place. A real job shell stays, and holds the key
        # (docs/CI.md).
        turns = support.key_scan_turns(os.path.join(self.tmp, "scan.json"), "sk-from-project",
                                       "-variable")
        _, job = self.component_job(prompt="scan", sandbox="danger-full-access")
        r = gitlab.run_job(job, self.repo, self.env(turns), self.IMAGE_VARS)
        self.assertEqual(r.code, 0, r.log)
        events = _read(os.path.join(self.repo, "agentexec-out", "events.jsonl"))
        cmd = [json.loads(l)["item"] for l in events.splitlines()
               if json.loads(l)["type"] == "item.completed"
               and json.loads(l)["item"]["type"] == "command_execution"][0]
        self.assertEqual(cmd["aggregated_output"],
                         "parent environ readable: yes\nkey found in: none\n")
        self.assertNotIn("sk-from-project-variable", events)

    def test_changes_patch_runs_no_program_the_repository_or_environment_names(self):
        # As if a command had written .git/config (possible when the sandbox has no mount
        # namespace) and the job's environment carried GIT_* variables naming programs.
        marker = os.path.join(self.tmp, "git-ran")
        hostile_env = support.hostile_git_config(self.repo, marker)
        # The fixture is live: plain git runs them, with and without the environment.
        for name in ("calc.py", "README.md"):
            with open(os.path.join(self.repo, name), "a") as f:
                f.write("\n")
        for env in (os.environ, dict(os.environ, **hostile_env)):
            for args in (["status"], ["diff"]):
                subprocess.run(["git", "-C", self.repo, *args], capture_output=True, env=env)
        subprocess.run(["git", "-C", self.repo, "checkout", "."], capture_output=True)
        ran = set(_read(marker).split())
        # (git 2.39 also runs smudge, process, external and the post-index-change hook here.)
        self.assertLessEqual({"fsmonitor", "clean", "command", "env-params", "env-count",
                              "env-external"}, ran)
        os.remove(marker)
        _, job = self.component_job(prompt="make the failing test pass")
        env = self.env(support.DEMO_TURNS)
        env.update(hostile_env)
        r = gitlab.run_job(job, self.repo, env, self.IMAGE_VARS)
        self.assertEqual(r.code, 0, r.log)
        self.assertFalse(os.path.exists(marker), os.path.exists(marker) and _read(marker))
        patch = _read(os.path.join(self.repo, "agentexec-out", "changes.patch"))
        self.assertTrue(patch.startswith("diff --git a/calc.py b/calc.py\n"), patch)
        self.assertIn("len(values)", patch)

    def test_existing_out_dir_is_refused_before_the_run(self):
        os.symlink(os.path.join(self.tmp, "elsewhere"), os.path.join(self.repo, "agentexec-out"))
        _, job = self.component_job(prompt="x")
        r = gitlab.run_job(job, self.repo, self.env(support.DEMO_TURNS), self.IMAGE_VARS)
        self.assertEqual(r.code, 2, r.log)
        self.assertIn(f"agentexec step: AGENTEXEC_OUT_DIR {self.repo}/agentexec-out already "
                      "exists; it is created fresh for the artifacts (remove it first)", r.log)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "elsewhere")))

    def test_open_mr_example_pushes_with_merge_request_options(self):
        wf = yaml_load(os.path.join(EXAMPLES, "open-mr.yml"))
        inc = wf["include"][0]
        self.assertTrue(inc["component"].endswith("/agentexec/agentexec@0.1.0"))
        jobs = gitlab.load_component(TEMPLATE, inc["inputs"])
        agent = dict(jobs["agent"], **{k: v for k, v in wf["agent"].items()})
        env = self.env(support.DEMO_TURNS)
        r = gitlab.run_job(agent, self.repo, env, self.IMAGE_VARS)
        self.assertEqual(r.code, 0, r.log)
        # The publish job runs in a fresh clone with the agent's artifacts.
        remote = os.path.join(self.tmp, "remote.git")
        subprocess.run(["git", "clone", "-q", "--bare", self.repo, remote], check=True)
        support.git(remote, "config", "receive.advertisePushOptions", "true")
        hook = os.path.join(remote, "hooks", "pre-receive")
        with open(hook, "w") as f:
            f.write('#!/bin/sh\ni=0\nwhile [ "$i" -lt "${GIT_PUSH_OPTION_COUNT:-0}" ]; do\n'
                    '  eval "echo \\"\\$GIT_PUSH_OPTION_$i\\"" >> "$(dirname "$0")/../push-options"\n'
                    '  i=$((i+1))\ndone\n')
        os.chmod(hook, 0o755)
        publish = os.path.join(self.tmp, "publish")
        subprocess.run(["git", "clone", "-q", remote, publish], check=True)
        os.rename(os.path.join(self.repo, "agentexec-out"), os.path.join(publish, "agentexec-out"))
        # The example pushes to https://...; the test's git rewrites that URL to the remote.
        gitconfig = os.path.join(self.tmp, "gitconfig")
        with open(gitconfig, "w") as f:
            f.write(f'[url "{remote}"]\n\tinsteadOf = https://agentexec:tok@gitlab.example.com/g/p.git\n')
        env["GIT_CONFIG_GLOBAL"] = gitconfig
        r = gitlab.run_job(wf["open-mr"], publish, env, {"AGENT_PUSH_TOKEN": "tok"})
        self.assertEqual(r.code, 0, r.log)
        self.assertEqual(_read(os.path.join(remote, "push-options")).splitlines(), [
            "merge_request.create", "merge_request.target=main",
            "merge_request.title=agent: make the failing test pass",
            "merge_request.remove_source_branch"])
        fixed = support.git(remote, "show", "agent/fix-77:calc.py")
        self.assertIn("len(values)", fixed)
        msg = support.git(remote, "log", "-1", "--format=%B", "agent/fix-77")
        self.assertTrue(msg.startswith("agent: make the failing test pass\n"), msg)

    def test_open_mr_example_without_changes_opens_nothing(self):
        wf = yaml_load(os.path.join(EXAMPLES, "open-mr.yml"))
        os.makedirs(os.path.join(self.repo, "agentexec-out"))
        open(os.path.join(self.repo, "agentexec-out", "changes.patch"), "w").close()
        r = gitlab.run_job(wf["open-mr"], self.repo, self.env(support.DEMO_TURNS), {})
        self.assertEqual(r.code, 0, r.log)
        self.assertIn("The agent changed nothing; no merge request.", r.log)

    def docker_job(self, fake_sandbox_exit3=False):
        wf = yaml_load(os.path.join(EXAMPLES, "docker-executor.yml"))
        job = wf["agent"]
        script = "\n".join(job["script"]).replace(
            "/usr/local/share/agentexec/scripts", os.path.join(support.REPO_ROOT, "scripts"))
        self.assertIn("agentexec sandbox -s", script)
        job = dict(job, script=[script])
        turns = support.write_turns(os.path.join(self.tmp, "c.json"), [
            {"items": [{"type": "message", "text": "changelog updated"}]}])
        env = self.env(turns)
        if fake_sandbox_exit3:
            env["AGENTEXEC_SANDBOX_FAKE_NO_LANDLOCK"] = "1"
        return gitlab.run_job(job, self.repo, env, {})

    def test_docker_executor_example_runs_sandboxed(self):
        r = self.docker_job()
        self.assertEqual(r.code, 0, r.log)
        self.assertNotIn("WARNING: no kernel sandbox here", r.log)
        self.assertIn("changelog updated", r.log)
        self.assertEqual(r.artifacts, {"agentexec-out/": True})

    def test_docker_executor_example_falls_back_on_exit_3(self):
        r = self.docker_job(fake_sandbox_exit3=True)
        self.assertEqual(r.code, 0, r.log)
        self.assertIn("WARNING: no kernel sandbox here; running with -s danger-full-access", r.log)
        self.assertIn("changelog updated", r.log)


def yaml_load(path):
    import yaml
    return yaml.safe_load(_read(path))


if __name__ == "__main__":
    unittest.main(verbosity=2)
