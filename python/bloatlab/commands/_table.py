"""The CLI's tables, drawn by rich: one look for every listing and result table.

A table fits the width of where it goes: a terminal's own width; into a pipe
or a file ``COLUMNS`` when set (a positive integer), else 80 columns, as
``ls`` and ``man`` do. Long cells wrap within their column, never past the
width (before, a pipe got each table at its natural width: ``bloatlab
qdiscs | less`` drew a 600-column rule). Colour only on a terminal. For
whole lines give a wide ``COLUMNS`` (``COLUMNS=1000 bloatlab qdiscs | grep
...``); machine output is ``--json`` (or ``--csv``), never this.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, Sequence

#: columns of a table that goes to a pipe or a file without ``COLUMNS``
PIPE_WIDTH = 80


def width(file=None, pipe_width: int = PIPE_WIDTH) -> int | None:
    """The width a table on ``file`` fits: None on a terminal (rich reads
    it, and ``COLUMNS`` over it), else ``COLUMNS`` or ``pipe_width``."""
    file = file if file is not None else sys.stdout
    if hasattr(file, "isatty") and file.isatty():
        return None
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) > 0 else pipe_width


def console(file=None, pipe_width: int = PIPE_WIDTH, markup: bool = False):
    """A rich Console on ``file`` (stdout by default, looked up at call time so
    that pytest's capture sees it); ``pipe_width`` for a pipe without
    ``COLUMNS``; ``markup``: rich's ``[bold]`` tags in printed text."""
    from rich.console import Console

    file = file if file is not None else sys.stdout
    w = width(file, pipe_width)
    return Console(file=file, width=w, highlight=False, soft_wrap=False, emoji=False, markup=markup, no_color=w is not None)


def cell(v) -> str:
    """One cell's text: None (and NaN) as ``-``, a float to 6 decimals at most."""
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, float):
        return repr(round(v, 6))
    return str(v)


def table(columns: Sequence[str | tuple[str, str]], rows: Iterable[Sequence]):
    """A rich Table: ``columns`` are names, or (name, "right") for numbers;
    ``rows`` are sequences of cells (:func:`cell`)."""
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for c in columns:
        name, justify = (c, "left") if isinstance(c, str) else c
        t.add_column(name, justify=justify, overflow="fold")
    for r in rows:
        t.add_row(*(cell(v) for v in r))
    return t


def print_table(columns, rows, title: str | None = None, caption: str | None = None, file=None) -> None:
    """Draw :func:`table` on stdout (or ``file``), with a line of text above
    (``title``) and below (``caption``); no line ends in spaces."""
    file = file if file is not None else sys.stdout
    con = console(file)
    with con.capture() as cap:
        con.print(table(columns, rows))
    text = "\n".join(line.rstrip() for line in cap.get().splitlines())
    if title:
        print(_fit(title, con.width), file=file)
    print(text, file=file)
    if caption:
        print(_fit(caption, con.width), file=file)


def _fit(text: str, columns: int) -> str:
    """``text`` wrapped at word boundaries to ``columns``, line by line."""
    import textwrap

    return "\n".join(textwrap.fill(line, columns, break_long_words=False, break_on_hyphens=False) or line
                     for line in text.splitlines())
