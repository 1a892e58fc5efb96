"""The CLI's tables, drawn by rich: one look for every listing and result table.

On a terminal the table fits its width (long cells wrap); into a pipe or a
file it is drawn at its natural width (nothing cut, nothing wrapped) and
without colour, so that ``grep`` and ``less`` see whole lines. Machine output
is ``--json`` (or ``--csv``), never this.
"""

from __future__ import annotations

import sys
from typing import Iterable, Sequence


def console(file=None):
    """A rich Console on ``file`` (stdout by default, looked up at call time so
    that pytest's capture sees it)."""
    from rich.console import Console

    file = file if file is not None else sys.stdout
    tty = hasattr(file, "isatty") and file.isatty()
    # width=None: the terminal's; into a pipe a width no table reaches, so that
    # rich never wraps a cell (its default there is 80 columns)
    return Console(file=file, width=None if tty else 100_000, highlight=False, soft_wrap=False,
                   emoji=False, markup=False, no_color=not tty)


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
        print(title, file=file)
    print(text, file=file)
    if caption:
        print(caption, file=file)
