"""The command line explains itself and fits its page: every argument of every
subcommand has help text (`bloatlab CMD --help` shows no blank description),
and tables written into a pipe fit 80 columns, or COLUMNS."""

import argparse
import os
import subprocess

from conftest import BLOATLAB, run_cli


def _blank_helps(p: argparse.ArgumentParser, path: list[str]) -> list[str]:
    """Every argument (and subcommand) under ``p`` whose help is empty, as "CMD... ARG"."""
    out = []
    for a in p._actions:
        if isinstance(a, (argparse._HelpAction, argparse._VersionAction)) or a.help == argparse.SUPPRESS:
            continue
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
            for name, sp in a.choices.items():
                if not (helps.get(name) or "").strip():
                    out.append(" ".join(path + [name]) + " (the command itself)")
                out += _blank_helps(sp, path + [name])
        elif not (a.help or "").strip():
            out.append(" ".join(path) + " " + ("/".join(a.option_strings) or a.dest))
    return out


def test_every_argument_of_every_subcommand_has_help_text():
    from bloatlab.cli import parser

    blank = _blank_helps(parser(), ["bloatlab"])
    assert not blank, "arguments without help text:\n" + "\n".join(blank)


def test_the_walk_finds_a_blank_help_at_any_depth():
    # the check itself can fail: a blank option two levels down is found
    p = argparse.ArgumentParser(prog="x")
    sub = p.add_subparsers().add_parser("a", help="a").add_subparsers().add_parser("b", help="b")
    sub.add_argument("--json", action="store_true")
    sub.add_argument("--ok", help="fine")
    assert _blank_helps(p, ["x"]) == ["x a b --json"]


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_tables_into_a_pipe_fit_80_columns_or_COLUMNS():
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for cmd in (["qdiscs"], ["qdiscs", "cake"], ["scenarios"], ["ccs"], ["reproduce", "--list"]):
        r = subprocess.run([BLOATLAB, *cmd], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert _widest(r.stdout) <= 80, f"bloatlab {' '.join(cmd)} | ...: {_widest(r.stdout)} columns\n{r.stdout}"
        # nothing lost to the width: long cells wrap within their column
        assert "─" * 20 in r.stdout
    r = subprocess.run([BLOATLAB, "qdiscs"], capture_output=True, text=True, env={**env, "COLUMNS": "120"}, timeout=120)
    assert 80 < _widest(r.stdout) <= 120, _widest(r.stdout)
    # every word of a long description survives the wrapping
    full = run_cli("qdiscs", "--json").stdout
    import json

    for q in json.loads(full):
        for word in q["doc"].split():
            assert word in r.stdout, (q["name"], word)
