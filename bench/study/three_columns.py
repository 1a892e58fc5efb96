"""Published / kernel / simulator, claim by claim (issue 10 §4).

Every built-in experiment of `bloatlab reproduce` is run with `--check` on
the simulator and on the emulator (the real kernel of this machine), and the
claims are put side by side: what the source published, what the kernel here
gives, what the simulator gives. A published number the kernel does not
reproduce either is a difference of testbeds, not of the model; the kernel is
the judge of the simulator.

    sudo .venv/bin/python bench/study/three_columns.py [--quick] [NAME ...]   # runs, then writes the table
    .venv/bin/python bench/study/three_columns.py --table-only [--quick]      # re-render from the stores

Stores: results/three-columns/<engine>/<experiment>[-quick] (resumable: a
re-run continues). The table is printed and written into bench/study/RESULTS.md
between the markers below (the rest of that file is kept).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
OUT = os.path.join(REPO, "results", "three-columns")
RESULTS = os.path.join(HERE, "RESULTS.md")
BEGIN, END = "<!-- three columns: begin -->", "<!-- three columns: end -->"


def store_dir(engine: str, name: str, quick: bool) -> str:
    return os.path.join(OUT, engine, name + ("-quick" if quick else ""))


def run(name: str, engine: str, quick: bool) -> None:
    cmd = [os.path.join(REPO, ".venv", "bin", "bloatlab"), "reproduce", name, "--check", "-q", "--engine", engine,
           "--out", store_dir(engine, name, quick)] + (["--quick"] if quick else [])
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=False)


def claims(engine: str, name: str, quick: bool) -> dict:
    p = os.path.join(store_dir(engine, name, quick), "check.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        doc = json.load(f)
    return {c["id"]: c for c in doc["claims"]} | {"_meta": doc.get("meta", {})}


def cell(c: dict | None) -> str:
    if not c:
        return "not run"
    v = c["verdict"]
    text = c.get("measured") or c.get("reason") or ""
    mark = {"holds": "**holds**", "fails": "**fails**"}.get(v, "not evaluated")
    return f"{mark}: {text}".replace("|", "/").replace("\n", " ")


def previous() -> tuple[dict, dict]:
    """The table now in RESULTS.md: rows by (experiment, claim) as (published,
    kernel cell, simulator cell), and its timing notes by experiment. An
    experiment or engine without a store here keeps what was measured before
    (stores live in results/, which a new machine does not have)."""
    if not os.path.exists(RESULTS):
        return {}, {}
    text = open(RESULTS).read()
    if BEGIN not in text or END not in text:
        return {}, {}
    rows, notes = {}, {}
    for line in text.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 5 and cells[1] not in ("claim", "---", "—"):
            rows[(cells[0], cells[1])] = (cells[2], cells[3], cells[4])
        if line.startswith("Emulator timing"):
            for part in line.split("): ", 1)[-1].rstrip(".").split("; "):
                notes[part.split(":", 1)[0]] = part
    return rows, notes


def table(names: list[str], quick: bool) -> str:
    from bloatlab.study.experiments import get

    old_rows, old_notes = previous()
    lines = [f"## Published / kernel / simulator ({'quick' if quick else 'full'} versions), {datetime.date.today()}", "",
             "Regenerate: `sudo .venv/bin/python bench/study/three_columns.py" + (" --quick" if quick else "") + "`. "
             "Kernel = this machine's Linux through the emulator (`--engine emu`); simulator = `--engine sim`; "
             "the same points, seeds and claims (`bloatlab reproduce NAME --check`). A claim the kernel fails as "
             "well is a difference of testbeds (the source's kernel, hardware, rates), not of the model.", "",
             "| experiment | claim | published | kernel (emulator) | simulator |", "|---|---|---|---|---|"]
    flagged = []
    for n in names:
        k, s = claims("emu", n, quick), claims("sim", n, quick)
        late = timing(n, quick)
        if late:
            flagged.append(f"{n}: {late[0]} of {late[1]} kernel runs flagged")
        elif n in old_notes:
            flagged.append(old_notes[n])
        ids = [c for c in (s or k) if c != "_meta"] or [cid for (e, cid) in old_rows if e == n]
        if not ids:
            lines.append(f"| {n} | — | | not run | not run |")
            continue
        exp = get(n)
        for cid in ids:
            ref = (s.get(cid) or k.get(cid) or {})
            before = old_rows.get((n, cid), ("", "not run", "not run"))
            pub = ref.get("published", "").replace("|", "/") or before[0]
            kc = cell(k.get(cid)) if k else before[1]
            sc = cell(s.get(cid)) if s else before[2]
            lines.append(f"| {n} | {cid} | {pub} | {kc} | {sc} |")
        del exp
    lines += ["", "Emulator timing (a flagged run's delays were less accurate than configured; its figures are "
              "kept and marked here): " + ("; ".join(flagged) if flagged else "no run flagged") + "."]
    return "\n".join(lines) + "\n"


def timing(name: str, quick: bool):
    """(flagged runs, runs) of the kernel's store, or None."""
    from bloatlab.study.store import Store, is_store

    d = store_dir("emu", name, quick)
    if not is_store(d):
        return None
    runs = Store(d).runs
    if runs.empty or "timing_flagged" not in runs:
        return None
    return int(runs["timing_flagged"].fillna(False).astype(bool).sum()), len(runs)


def write(text: str) -> None:
    old = open(RESULTS).read() if os.path.exists(RESULTS) else ""
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in old and END in old:
        new = old.split(BEGIN)[0] + block + old.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(RESULTS, "w") as f:
        f.write(new)


def main() -> int:
    from bloatlab.study.experiments import names as all_names

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="experiments (default: all)")
    ap.add_argument("--quick", action="store_true", help="the reduced versions")
    ap.add_argument("--table-only", action="store_true", help="re-render from the stores, run nothing")
    ap.add_argument("--engines", default="sim,emu", help="which engines to run (default sim,emu)")
    a = ap.parse_args()
    names = a.names or all_names()
    if not a.table_only:
        for n in names:
            for eng in a.engines.split(","):
                run(n, eng, a.quick)
    # every experiment in the table: those not run now keep their rows (previous())
    text = table(all_names(), a.quick)
    print(text)
    write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
