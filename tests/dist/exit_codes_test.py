"""One list of exit codes: the table cli/exit_code.h defines (kExitCodes, read from the
source here) is what `agentexec --help`, README's "Exit codes" table, the Action's exit-code
output, the GitLab component's header and scripts/ci/run.sh's summary legend list: the same
codes, none more, with the same meanings."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
import yaml  # noqa: E402

ROOT = support.REPO_ROOT


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def header_table():
    """[(code, summary, meaning)] from cli/exit_code.h: the enum's values, then kExitCodes."""
    src = read("cli/exit_code.h")
    values = dict(re.findall(r"^\s*(k\w+) = (\d+),", src, re.M))
    table = src[src.index("kExitCodes = {{"):]
    table = table[:table.index("}};")]
    rows = re.findall(r'\{ExitCode::(k\w+),\s*"([^"]*)",\s*"([^"]*)"\}', table)
    return [(int(values[name]), summary, meaning) for name, summary, meaning in rows]


TABLE = header_table()


def legend():
    return ", ".join(f"{code} {summary}" for code, summary, _ in TABLE)


def legend_codes(text):
    """The codes a one-line legend names: each "N word" after "(" or ", "."""
    return [int(n) for n in re.findall(r"(?:\(|, )(\d+) [a-z]", text)]


class ExitCodesTest(unittest.TestCase):
    def test_the_header_table(self):
        self.assertEqual([c for c, _, _ in TABLE], [0, 1, 2, 3, 4, 5, 6, 130, 143])
        for _, summary, meaning in TABLE:
            self.assertTrue(summary and meaning)

    def test_help(self):
        out = subprocess.run([support.agentexec_bin(), "--help"], capture_output=True, text=True,
                             timeout=30).stdout
        section = out[out.index("Exit codes:\n") + len("Exit codes:\n"):]
        section = section[:section.index("\n\n")]
        expected = [f"  {code:<8} {meaning}" for code, _, meaning in TABLE]
        self.assertEqual(section.split("\n"), expected)

    def test_readme_table(self):
        text = read("README.md")
        section = text[text.index("### Exit codes\n"):]
        section = section[:section.index("\nExit codes come from one place")]
        rows = re.findall(r"^\| (\d+) \| (.*) \|$", section, re.M)
        self.assertEqual([int(c) for c, _ in rows], [c for c, _, _ in TABLE])
        for (code, text), (_, _, meaning) in zip(rows, TABLE):
            self.assertTrue(text.replace("`", "").startswith(meaning), f"{code}: {text}")

    def check_legend(self, where, text):
        self.assertIn(legend(), text, where)
        # No second, different legend beside it.
        for line in text.splitlines():
            codes = legend_codes(line)
            if len(codes) > 2:
                self.assertEqual(codes, [c for c, _, _ in TABLE], f"{where}: {line}")

    def test_action_output(self):
        action = yaml.safe_load(read("action.yml"))
        self.check_legend("action.yml", action["outputs"]["exit-code"]["description"])

    def test_component(self):
        self.check_legend("templates/agentexec.yml", read("templates/agentexec.yml"))

    def test_run_sh_legend(self):
        self.check_legend("scripts/ci/run.sh", read("scripts/ci/run.sh"))

    def test_a_changed_list_is_caught(self):
        old = ("(0 done, 1 model/API failure, 2 usage, 3 sandbox unavailable, 4 limit, 5 output, "
               "6 final answer fails output-schema)")
        with self.assertRaises(AssertionError):
            self.check_legend("old action.yml", old)


if __name__ == "__main__":
    unittest.main(verbosity=2)
