"""Docs that match (issue 35): every command of README.md and docs/*.md whose output the page shows is run, and
the figures the page quotes are compared with what the command prints now, within a tolerance the page states.

How a page marks a shown output: an HTML comment on the line before the command's block,

    <!-- doc-check: run tolerance=5% columns=80 -->        run it here and compare (sim-engine commands only)
    <!-- doc-check: skip REASON -->                        shown but not run here; REASON is printed as the skip

and the output is the fenced block that follows the command's block (blank lines between are allowed), or, in a
block whose commands start with ``$ ``, the lines after them. Every command block with a shown output must carry a
marker (the first test): a new example cannot go unchecked by accident.

Comparison: line by line, the text with its numbers taken out must be the same (whitespace and the length of a
table's rule aside; a line ``...`` in the page stands for any number of lines), and each number must be within the
tolerance of the page's figure, relative, or one unit of its last printed digit, whichever is larger. Numbers
inside words (``bbr-1pct``, ``60s``) are text. The checked commands run on the simulator (deterministic for a
seed): the tolerance is the drift of the model a page may show before it is refreshed.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from conftest import ROOT

PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
MARK = re.compile(r"^<!--\s*doc-check:\s*(run|skip)\b(.*?)-->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")
COMMAND_LANGS = {"sh", "bash", "console", "shell"}
OUTPUT_LANGS = {"", "text", "console"}
#: verbs that need root, the emulator, a network or real time: never run by this test
NOT_SIM = {"shell", "measure", "host", "probe", "compare", "fidelity", "advise"}
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?![\w.])")


@dataclass
class Shown:
    page: str
    line: int  # 1-based line of the command block's opening fence
    commands: list[str]
    output: list[str]
    mark: str | None = None  # "run" | "skip"
    args: str = ""
    opts: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{os.path.relpath(self.page, ROOT)}:{self.line}"


def _blocks(lines: list[str]) -> list[tuple[int, int, str, list[str]]]:
    """(opening line index, closing line index, language, body) of every fenced block."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append((i, j, m.group(1), lines[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def _joined(lines: list[str]) -> list[str]:
    """Commands with their continuation lines (a trailing backslash) joined."""
    out, cur = [], ""
    for x in lines:
        cur += x.rstrip()
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        out.append(cur)
        cur = ""
    return out + ([cur] if cur else [])


def shown_outputs(page: str) -> list[Shown]:
    with open(page, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = _blocks(lines)
    found = []
    for k, (i, j, lang, body) in enumerate(blocks):
        dollar = bool(body) and body[0].startswith("$ ")
        if dollar and any(not x.startswith("$ ") and x.strip() for x in body):
            # the commands: the `$ ` lines and their continuation lines (a trailing backslash)
            n = 0
            while n < len(body) and (body[n].startswith("$ ") or (n and body[n - 1].rstrip().endswith("\\"))):
                n += 1
            cmds = _joined([x[2:] if x.startswith("$ ") else x for x in body[:n]])
            found.append(Shown(page, i + 1, cmds, body[n:]))
        elif lang in COMMAND_LANGS or dollar:
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            if nxt and nxt[2] in OUTPUT_LANGS and all(not x.strip() for x in lines[j + 1:nxt[0]]):
                cmds = _joined([x[2:] if x.startswith("$ ") else x for x in body])
                found.append(Shown(page, i + 1, cmds, nxt[3]))
        else:
            continue
        if found and found[-1].line == i + 1:
            p = i - 1
            while p >= 0 and not lines[p].strip():
                p -= 1
            m = MARK.match(lines[p]) if p >= 0 else None
            if m:
                s = found[-1]
                s.mark, s.args = m.group(1), m.group(2).strip()
                if s.mark == "run":
                    s.opts = dict(kv.split("=", 1) for kv in s.args.split())
    return found


ALL = [s for p in PAGES for s in shown_outputs(p)]


def _argv(command: str) -> list[str] | None:
    """The command as this test runs it: `bloatlab ...` through this Python (the checkout's package)."""
    words = shlex.split(command, comments=True)
    if not words:
        return None
    if words[0].endswith("/bloatlab"):
        words[0] = "bloatlab"
    assert words[0] == "bloatlab", f"{command!r}: only bloatlab commands are run"
    assert words[1] not in NOT_SIM and "emu" not in words, (
        f"{command!r} is not a sim-engine command: mark it <!-- doc-check: skip REASON -->")
    return [sys.executable, "-m", "bloatlab", *words[1:]]


def _skeleton(line: str) -> str:
    t = NUMBER.sub("#", line)
    t = re.sub(r"─+", "─", t)
    return " ".join(t.split())


def _unit(figure: str) -> float:
    """One unit of the figure's last printed digit."""
    return 10.0 ** -len(figure.split(".")[1]) if "." in figure else 1.0


def compare(page: list[str], now: list[str], tol: float) -> list[str]:
    """What differs between the page's output and the command's (empty: they match)."""
    page = [x for x in page if x.strip()]
    now = [x for x in now if x.strip()]
    problems, k = [], 0
    skip = False
    for want in page:
        if want.strip() == "...":
            skip = True
            continue
        while k < len(now) and skip and _skeleton(now[k]) != _skeleton(want):
            k += 1
        skip = False
        if k >= len(now):
            problems.append(f"the page shows {want!r}; the command printed nothing more")
            break
        got = now[k]
        k += 1
        if _skeleton(got) != _skeleton(want):
            problems.append(f"the page shows\n    {want}\n  the command printed\n    {got}")
            continue
        for a, b in zip(NUMBER.findall(want), NUMBER.findall(got)):
            e, x = float(a), float(b)
            if abs(x - e) > max(tol * abs(e), _unit(a) * 1.0001):
                problems.append(f"{a} on the page, {b} now (tolerance {tol:.0%}): {want.strip()!r}")
    if k < len(now) and not problems:
        problems.append(f"the command printed more than the page shows: {now[k]!r} ...")
    return problems


def test_every_shown_output_is_checked_or_skipped_with_a_reason():
    unmarked = [s.id for s in ALL if s.mark is None]
    assert not unmarked, ("command blocks whose output is shown, without <!-- doc-check: run|skip REASON --> "
                          f"before them: {unmarked}")
    assert all(s.args for s in ALL if s.mark == "skip"), "a skip needs its reason"
    assert any(s.mark == "run" for s in ALL)


@pytest.mark.parametrize("shown", ALL, ids=lambda s: s.id)
def test_a_shown_output_is_what_the_command_prints(shown, tmp_path):
    if shown.mark != "run":
        pytest.skip(f"{shown.id}: {shown.args or 'unmarked'}")
    tol = float(shown.opts.get("tolerance", "5%").rstrip("%")) / 100
    env = dict(os.environ, COLUMNS=shown.opts.get("columns", "80"))
    env.pop("FORCE_COLOR", None)
    printed = []
    for c in shown.commands:
        argv = _argv(c)
        if argv is None:
            continue
        r = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
        assert r.returncode == 0, f"{shown.id}: {c}: {r.stderr}"
        printed += r.stdout.split("\n")
    problems = compare(shown.output, printed, tol)
    assert not problems, f"{shown.id}: the page no longer matches (refresh it):\n  " + "\n  ".join(problems)


def test_the_comparison_holds_figures_to_the_tolerance_and_text_exactly():
    page = ["flow  cc   goodput", "bulk  bbr  93.18", "...", "total 10.0 Mbit/s"]
    assert compare(page, ["flow cc goodput", "bulk  bbr  93.5", "x", "y", "total 10.1 Mbit/s"], 0.01) == []
    assert compare(page, ["flow cc goodput", "bulk  bbr  99.0", "total 10.0 Mbit/s"], 0.01)  # 6 % off
    assert compare(page, ["flow cc goodput", "bulk  cubic  93.18", "total 10.0 Mbit/s"], 0.01)  # other text
    assert compare(["loss 0.0%"], ["loss 0.1%"], 0.05) == []  # one unit of the last digit
    assert compare(["a 1"], ["a 1", "b 2"], 0.05)  # more printed than shown
