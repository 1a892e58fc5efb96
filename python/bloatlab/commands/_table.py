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


def table(columns: Sequence[str | tuple[str, str]], rows: Iterable[Sequence], min_widths: Sequence[int] | None = None):
    """A rich Table: ``columns`` are names, or (name, "right") for numbers;
    ``rows`` are sequences of cells (:func:`cell`); ``min_widths``: no
    column narrower (:func:`fit_columns`: a name or a number whole)."""
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for i, c in enumerate(columns):
        name, justify = (c, "left") if isinstance(c, str) else c
        w = min_widths[i] if min_widths else None
        # a column of names or numbers exactly its width (its header wraps inside it); prose takes what is left
        t.add_column(name, justify=justify, overflow="fold", min_width=abs(w) if w else None,
                     max_width=w if w and w > 0 else None)
    for r in rows:
        t.add_row(*(cell(v) for v in r))
    return t


#: what separates two columns: rich's padding of one each side and SIMPLE_HEAD's blank rule
GAP = 3


def _natural(columns, rows) -> list[int]:
    """Each column's least width that breaks no name: a cell without spaces
    (a name, a path, a number) whole; prose (a cell with spaces) and the
    header may wrap between words, so their longest word. Prose columns come
    back negative (they may be given more)."""
    out = []
    for i, c in enumerate(columns):
        name = c if isinstance(c, str) else c[0]
        w, prose = 0, False
        for r in rows:
            text = cell(r[i])
            if " " in text.strip():
                prose = True
                w = max(w, max(len(x) for x in text.split()))
            else:
                w = max(w, len(text))
        w = max(w, max((len(x) for x in name.split()), default=0), 1)
        out.append(-w if prose else w)
    return out


def fit_columns(columns, rows, width_: int | None):
    """The columns (and cells) that fit ``width_`` whole, and the names of
    those left out: a table too wide drops its rightmost columns rather
    than break a name or a path inside a cell (the first column always
    stays; where even it does not fit, its cells wrap)."""
    nat = _natural(columns, rows)
    if width_ is None:
        return columns, rows, [], nat
    keep = len(columns)
    while keep > 1 and sum(abs(w) for w in nat[:keep]) + GAP * (keep - 1) > width_:
        keep -= 1
    left = [c if isinstance(c, str) else c[0] for c in columns[keep:]]
    return columns[:keep], [r[:keep] for r in rows], left, nat[:keep]


def print_table(columns, rows, title: str | None = None, caption: str | None = None, file=None) -> None:
    """Draw :func:`table` on stdout (or ``file``), with a line of text above
    (``title``) and below (``caption``); no line ends in spaces. Columns that
    do not fit whole are left out with a note saying which and how to see
    them (:func:`fit_columns`)."""
    file = file if file is not None else sys.stdout
    con = console(file)
    rows = [list(r) for r in rows]
    columns, rows, left, mins = fit_columns(list(columns), rows, con.width)
    if left:
        note = f"({len(left)} column{'s' if len(left) > 1 else ''} left out at {con.width} columns: " \
               f"{', '.join(left)}; a wider terminal, COLUMNS=N or --json shows them)"
        caption = f"{caption}\n{note}" if caption else note
    with con.capture() as cap:
        con.print(table(columns, rows, mins))
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
