#!/usr/bin/env python3
"""Writes agentexec(1), in roff, from the help the binary prints: `agentexec --help` (the
synopsis, the options by section, the exit codes), `agentexec batch --help` and `agentexec
sandbox --help`. The page is docs/agentexec.1, installed by `make install`, the .deb and the
tarball; tests/dist/manpage_test.py regenerates it from the built binary and compares, so it
cannot drift from --help. Usage:
    scripts/gen-manpage.py BUILD/agentexec > docs/agentexec.1

The help's layout is what it reads: a heading is a line at column 0 ending in ":", an entry
is an indented TERM, two or more spaces, then its description (continued on lines indented
deeper), any other indented line is shown as it is. help2man (Debian's) knows only GNU's
"Usage: ... / or: ..." synopsis and stamps the build's date and commit into the page, so
the same binary would not give the same page twice."""
import re
import subprocess
import sys

ENTRY = re.compile(r"^( {2,6})(\S.*?)( {2,})(\S.*)$")
HEADING = re.compile(r"^(\S.*):$")


def roff(text):
    """Text escaped for roff: backslashes, hyphens (minus signs in options), a leading dot
    or quote (a request otherwise)."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def bold_options(text):
    """Options (-x, --long) in bold, as man pages show them."""
    return re.sub(r"(?<![\w\\])((?:\\-){1,2}[A-Za-z][\w\\-]*)", r"\\fB\1\\fR", text)


def body(lines):
    """Sections of help text (after the usage block) as roff."""
    out, entry, verbatim, paragraph = [], None, False, True

    def end_verbatim():
        nonlocal verbatim
        if verbatim:
            out.extend([".fi", ".RE"])
            verbatim = False

    for line in lines:
        if not line.strip():
            end_verbatim()
            entry, paragraph = None, True
            continue
        m = HEADING.match(line)
        if m:
            end_verbatim()
            entry = None
            out.append('.SS "%s"' % roff(m.group(1)).replace('"', '""'))
            paragraph = False
            continue
        m = ENTRY.match(line)
        if m:
            end_verbatim()
            entry = len(m.group(1)) + len(m.group(2)) + len(m.group(3))
            out.extend([".TP", bold_options(roff(m.group(2))), roff(m.group(4))])
            paragraph = False
            continue
        indent = len(line) - len(line.lstrip(" "))
        if entry is not None and indent >= entry - 1:
            out.append(roff(line.strip()))  # the entry's description, continued
            continue
        entry = None
        if paragraph:  # text after a blank line starts a paragraph of its own
            out.append(".PP")
            paragraph = False
        if indent:
            if not verbatim:
                out.extend([".RS 2", ".nf"])
                verbatim = True
            out.append(roff(line[2:] if line.startswith("  ") else line.strip()))
        else:
            end_verbatim()
            out.append(roff(line))
    end_verbatim()
    return out


def split_help(text):
    """(title line, usage lines, the rest) of one help text."""
    lines = text.rstrip("\n").split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("Usage: "))
    usage = [lines[start][len("Usage: "):]]
    i = start + 1
    while i < len(lines) and lines[i].startswith("       "):
        usage.append(lines[i].strip())
        i += 1
    return lines[0], lines[1:start], usage, lines[i:]


def synopsis(usage):
    return [".nf"] + [bold_options(roff(u)) for u in usage] + [".fi"]


def subcommand(binary, name):
    title, intro, usage, rest = split_help(run(binary, name, "--help"))
    what = title.split(" - ", 1)[1] if " - " in title else title
    return ([".SH %s" % name.upper(), roff(what[:1].upper() + what[1:]), ".PP"] + synopsis(usage)
            + [roff(l) for l in intro if l.strip()] + body(rest))


def run(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-manpage.py AGENTEXEC_BINARY > docs/agentexec.1")
    binary = sys.argv[1]
    title, intro, usage, rest = split_help(run(binary, "--help"))
    m = re.match(r"^agentexec (\S+) - (.*?)\.?$", title)
    if not m:
        sys.exit(f"gen-manpage: unexpected first line of --help: {title!r}")
    version, what = m.groups()
    # The last paragraph ("Configuration: ...; see docs/CONFIG.md.") is the FILES section.
    files = []
    while rest and not rest[-1].strip():
        rest.pop()
    if rest and rest[-1].startswith("Configuration: "):
        files = [rest.pop()[len("Configuration: "):]]
    # "Exit codes:" is the EXIT STATUS section.
    exits = []
    if "Exit codes:" in rest:
        i = rest.index("Exit codes:")
        j = next((k for k in range(i + 1, len(rest)) if not rest[k].strip()), len(rest))
        exits, rest = rest[i + 1:j], rest[:i] + rest[j:]
    page = [
        '.\\" Generated by scripts/gen-manpage.py from agentexec --help; do not edit.',
        '.TH AGENTEXEC 1 "" "agentexec %s" "User Commands"' % version,
        ".SH NAME",
        "agentexec \\- " + roff(what),
        ".SH SYNOPSIS",
        *synopsis(usage),
        ".SH DESCRIPTION",
        *[roff(l) for l in intro if l.strip()],
        ".SH OPTIONS",
        *body(rest),
        ".SH \"EXIT STATUS\"",
        *body(exits),
        *subcommand(binary, "sandbox"),
        *subcommand(binary, "batch"),
    ]
    if files:
        page += [".SH FILES", roff(files[0])]
    page += [".SH \"SEE ALSO\"",
             "README.md, CI.md, CONFIG.md and SANDBOX.md in /usr/share/doc/agentexec."]
    sys.stdout.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
