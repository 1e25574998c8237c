"""docs/skill/SKILL.md, the skill file an AI coding assistant loads to profile
with sonde, names only what exists: every `sonde CMD ...` it shows is a
command of `sonde --help` and every option in it one of `sonde CMD --help`;
every bare option it lists is one of `sonde run --help`; every report.json
key it tells the assistant to read is documented in docs/."""
import os
import re

from sonde_test import check, main, sonde

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SKILL = open(os.path.join(ROOT, "docs", "skill", "SKILL.md")).read()
SPANS = re.findall(r"`([^`\n]+)`", SKILL)
HELP = {}


def help_of(cmd):
    if cmd not in HELP:
        p = sonde(cmd, "--help")
        assert p.returncode == 0, (cmd, p.returncode, p.stderr)
        HELP[cmd] = p.stdout
    return HELP[cmd]


def option_in(option, text):
    name = option.split("=", 1)[0]
    return re.search(r"(^|[\s,\[])" + re.escape(name) + r"([\s,=\[]|$)", text, re.M)


def options_of(tokens):
    """The options of a command line, up to a standalone --."""
    out = []
    for t in tokens:
        if t == "--":
            break
        if t.startswith("-") and len(t) > 1:
            out.append(t)
    return out


@check("the skill file has the front matter an assistant loads: a name and a description")
def _():
    head = SKILL.split("---")
    assert SKILL.startswith("---\n") and len(head) >= 3, SKILL[:80]
    assert re.search(r"^name: sonde$", head[1], re.M), head[1]
    assert re.search(r"^description: .{40,}", head[1], re.M), head[1]


@check("every sonde command line in the skill names a real command and its real options")
def _():
    p = sonde("--help")
    listed = set(re.findall(r"^  (\w+) ", p.stdout.split("commands:", 1)[1], re.M))
    lines = [s for s in SPANS if s.startswith("sonde ")]
    assert len(lines) >= 15, lines
    seen = set()
    for line in lines:
        tokens = line.split()
        cmd = tokens[1]
        assert cmd in listed, f"'{line}': '{cmd}' is not a sonde command ({sorted(listed)})"
        for opt in options_of(tokens[2:]):
            assert option_in(opt, help_of(cmd)), f"'{line}': {opt} is not in 'sonde {cmd} --help'"
            seen.add((cmd, opt))
    assert len(seen) >= 10, seen


@check("every bare option the skill lists is an option of sonde run")
def _():
    bare = [s.split()[0].split("|")[0] for s in SPANS if re.match(r"-{1,2}[a-z]", s)]
    assert len(bare) >= 6, bare
    for opt in bare:
        assert option_in(opt, help_of("run")), f"{opt} is not in 'sonde run --help'"


@check("every report.json key the skill tells the assistant to read is documented")
def _():
    section = SKILL.split("## Read the report", 1)[1].split("\n## ", 1)[0]
    docs = "".join(open(os.path.join(ROOT, "docs", f)).read()
                   for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    keys = [k for k in re.findall(r"`([a-z_][a-z_.]*)`", section) if not k.endswith(".md")]
    assert len(keys) >= 20, keys
    for key in keys:
        for part in key.split("."):
            assert "`%s`" % part in docs, f"'{key}': `{part}` is not documented in docs/"


main()
