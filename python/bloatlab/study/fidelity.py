"""The fidelity matrix (issue 10 §3, docs/fidelity.md): every point of a
sweep runs on the simulator and on the emulator (the real kernel, the
reference), and each point gets the simulator's error against the kernel.

Layout of ``DIR`` (``bloatlab fidelity EXPERIMENT.toml --out DIR``)::

    DIR/sim/, DIR/emu/     the two results stores (resumable sweeps)
    DIR/fidelity.parquet   one row per point: its swept keys, each metric on
                           both engines and its error, the emulator's timing
    DIR/fidelity.csv       the same, for spreadsheets
    DIR/report.html        the table and heatmaps of the errors

Errors: ``rel`` metrics are ``(sim - emu) / |emu|``; shares are a
difference of fractions; retransmissions a ratio (larger / smaller). A point
whose emulator run was late (``timing_flagged``) is kept and marked: its
kernel figures are less accurate than configured, so it is not counted in
the targets.
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..errors import UserError

#: (metric column of the runs table, how its error is taken, target)
#: Targets of issue 10 §3: goodput (median over points) ≤ 5 %, shares within
#: 0.05, queueing delay p50/p95 within 20 % or 1 ms, retransmissions within
#: 1.5× where there are at least 50.
GOODPUT_TARGET = 0.05
SHARE_TARGET = 0.05
QDELAY_TARGET = 0.20
QDELAY_FLOOR_MS = 1.0
RETX_RATIO_TARGET = 1.5
RETX_MIN = 50

FIXED = ["total_goodput_mbps", "down_qdelay_p50_ms", "down_qdelay_p95_ms", "up_qdelay_p50_ms", "up_qdelay_p95_ms",
         "retransmits", "probe_rtt_p50_ms", "probe_rtt_p95_ms", "fct_s", "plt_s"]


def _f(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def rel(sim, emu) -> float | None:
    s, e = _f(sim), _f(emu)
    if s is None or e is None:
        return None
    if e == 0:
        return 0.0 if s == 0 else None
    return (s - e) / abs(e)


def retx_ratio(sim, emu) -> float | None:
    """max/min of the two counts (1 = equal); None below RETX_MIN on both."""
    s, e = _f(sim), _f(emu)
    if s is None or e is None or max(s, e) < RETX_MIN:
        return None
    return max(s, e) / max(min(s, e), 1.0)


def metrics_of(runs) -> list[str]:
    """The compared metrics present in a runs table: the fixed ones, and the
    goodput and share of every congestion control."""
    cols = [c for c in FIXED if c in runs]
    cols += sorted(c for c in runs.columns if c.startswith("goodput_") and c.endswith("_mbps"))
    cols += sorted(c for c in runs.columns if c.startswith("share_"))
    return cols


def point_errors(sim_row: dict, emu_row: dict, metrics: list[str]) -> dict[str, Any]:
    """One point: each metric on both engines, its error, and the targets it misses."""
    out: dict[str, Any] = {}
    misses = []
    for m in metrics:
        s, e = _f(sim_row.get(m)), _f(emu_row.get(m))
        out[f"{m}_sim"], out[f"{m}_emu"] = s, e
        if m.startswith("share_"):
            err = None if s is None or e is None else s - e
            if err is not None and abs(err) > SHARE_TARGET:
                misses.append(m)
        elif m == "retransmits":
            err = retx_ratio(s, e)
            if err is not None and err > RETX_RATIO_TARGET:
                misses.append(m)
        else:
            err = rel(s, e)
            if "qdelay" in m and err is not None and abs(err) > QDELAY_TARGET and abs(s - e) > QDELAY_FLOOR_MS:
                misses.append(m)
        out[f"{m}_err"] = err
    out["misses"] = ", ".join(misses)
    return out


def errors(sim_store, emu_store):
    """The fidelity table: one row per point present in both stores."""
    import pandas as pd

    sr, er = sim_store.runs, emu_store.runs
    if sr.empty or er.empty:
        raise UserError("fidelity: a point has to have run on both engines first")
    keys = [k for k in sim_store.swept_keys() if k in sr]
    metrics = [m for m in metrics_of(sr) if m in er]
    # a point is the same point on both engines by its part, seed and swept values (its run id names the engine)
    def point(r: dict) -> tuple:
        return (r.get("part"), r.get("seed")) + tuple(str(r.get(k)) for k in keys)

    emu_runs = er.to_dict("records")
    emu_by_id = {r["run_id"]: r for r in emu_runs}  # stores from before the run ids named the engine
    emu_by_point = {point(r): r for r in emu_runs}
    rows = []
    for s in sr.to_dict("records"):
        e = emu_by_id.get(s["run_id"]) or emu_by_point.get(point(s))
        if e is None:
            continue
        row = {"run_id": s["run_id"], "part": s.get("part"), "seed": s.get("seed")}
        row.update({k: s.get(k) for k in keys})
        row.update(point_errors(s, e, metrics))
        row["emu_late_p99_us"] = _f(e.get("late_p99_us"))
        row["timing_flagged"] = bool(e.get("timing_flagged") or False)
        why = e.get("timing_reasons")  # absent (NaN) in a store written before the stall verdict
        row["timing_reasons"] = why if isinstance(why, str) and why else ("p99" if row["timing_flagged"] else "")
        rows.append(row)
    if not rows:
        raise UserError("fidelity: no point has run on both engines yet")
    return pd.DataFrame(rows)


def goodput_summary(table) -> dict[str, Any]:
    """The targets over the whole matrix (points with good emulator timing)."""
    import statistics

    ok = table[~table["timing_flagged"]]
    errs = [abs(v) for v in ok.get("total_goodput_mbps_err", []) if v is not None and not math.isnan(v)]
    return {
        "points": len(table),
        "timing_flagged": int(table["timing_flagged"].sum()),
        "median_goodput_error": statistics.median(errs) if errs else None,
        "goodput_target": GOODPUT_TARGET,
        "points_missing_a_target": int((ok["misses"] != "").sum()),
    }


def run(sw, out: str, timeout: float | None = None, progress: bool = True, limit: int | None = None,
        reuse_any_build: bool = False):
    """Run the sweep on both engines (each resumable; a stored run of another
    build runs again unless ``reuse_any_build``: sweep.run), then write the
    table and the report. Returns (table, summary, report path)."""
    from ..engines import emu as emu_engine
    from . import sweep
    from .store import Store

    emu_engine.check()  # fail before the simulator's half if the kernel's cannot run
    reps = []
    for eng in ("sim", "emu"):
        reps.append(sweep.run(sw, os.path.join(out, eng), engine=eng, progress=progress, limit=limit, timeout=timeout,
                              reuse_any_build=reuse_any_build))
    sim, emu = Store(os.path.join(out, "sim")), Store(os.path.join(out, "emu"))
    table = errors(sim, emu)
    table.to_parquet(os.path.join(out, "fidelity.parquet"), index=False)
    table.to_csv(os.path.join(out, "fidelity.csv"), index=False)
    summ = goodput_summary(table)
    path = report(table, summ, sim, os.path.join(out, "report.html"))
    return table, summ, path, reps


class _Frame:
    """What the store plots need of a store: ``runs`` and ``study``."""

    def __init__(self, runs, name):
        self.runs, self.study = runs, {"name": name}


def report(table, summ: dict, sim_store, path: str) -> str:
    from . import plots
    from .report import _Sections, _machine, _write, render

    keys = [k for k in sim_store.swept_keys() if k in table and table[k].nunique(dropna=True) > 1]
    name = sim_store.study.get("name", "")
    meta = [("study", name), ("points", summ["points"]), ("machine", _machine()),
            ("median |goodput error|", "-" if summ["median_goodput_error"] is None else f"{100 * summ['median_goodput_error']:.1f} % "
             f"(target ≤ {100 * GOODPUT_TARGET:.0f} %)"),
            ("points missing a target", summ["points_missing_a_target"]),
            ("points with flagged emulator timing (not counted)", summ["timing_flagged"])]
    sec = _Sections()
    sec.text("What this is", "Every point ran on the simulator and on the emulator (the kernel, the reference). "
             "rel = (sim − emu) / |emu|; shares: sim − emu; retransmissions: larger / smaller where either has "
             f"{RETX_MIN} or more. Targets: goodput ≤ {100 * GOODPUT_TARGET:.0f} % (median), shares within "
             f"{SHARE_TARGET}, queueing delay within {100 * QDELAY_TARGET:.0f} % or {QDELAY_FLOOR_MS:g} ms, "
             f"retransmissions within {RETX_RATIO_TARGET}×. A point whose emulator timing was flagged is marked "
             "and left out of the targets.")
    err_cols = [c for c in table.columns if c.endswith("_err")]
    sec.table("Errors per point", table[["run_id", "seed"] + keys + err_cols + ["misses", "emu_late_p99_us", "timing_flagged", "timing_reasons"]])
    both = [c for c in table.columns if c.endswith("_sim") or c.endswith("_emu")]
    sec.table("Both engines per point", table[["run_id"] + keys + both])
    frame = _Frame(table.assign(**{c: table[c].astype(float) for c in err_cols}), name)
    num = [k for k in keys if plots.numeric_column(table[k])[0] is not None]
    shown = [c for c in ("total_goodput_mbps_err", "down_qdelay_p95_ms_err", "retransmits_err") if c in table and table[c].notna().any()]
    head = "Heatmaps of the errors"
    titles = {"total_goodput_mbps_err": "goodput: (sim − kernel) / kernel",
              "down_qdelay_p95_ms_err": "queueing delay p95 (down): (sim − kernel) / kernel",
              "retransmits_err": "retransmissions: larger / smaller (≥ 50)"}
    for c in shown:
        fmt = "{:.2f}" if c == "retransmits_err" else "{:+.0%}"
        center = 1.0 if c == "retransmits_err" else 0.0
        # colours scaled to the target, not to the data: a 0.25 % error is pale, one past the target saturated
        # (scaled to the data's ±0.4 %, a 0.25 % goodput error was drawn dark red)
        span = {"total_goodput_mbps_err": GOODPUT_TARGET, "down_qdelay_p95_ms_err": QDELAY_TARGET,
                "retransmits_err": RETX_RATIO_TARGET - 1.0}[c]
        if len(keys) >= 2:
            x, y = (num + [k for k in keys if k not in num])[:2]
            nx, ny = table[x].nunique(), table[y].nunique()

            def draw(c=c, x=x, y=y, nx=nx, ny=ny, fmt=fmt, center=center, span=span):
                fig, ax = plots._plt().subplots(figsize=(max(5.5, 1.6 + 0.9 * nx), max(3.2, 1.4 + 0.5 * ny)))
                plots.heatmap(frame, x, y, c, ax=ax, title=titles[c] + " (colours: ± the target)", fmt=fmt,
                              cmap="RdBu_r", center=center, span=span)
                fig.tight_layout()
                return fig

            sec.try_figure(f"{titles[c]}, over {x} × {y}", draw, head)
        elif keys:
            sec.try_figure(f"{titles[c]}, vs {keys[0]}", lambda c=c: plots.param(frame, keys[0], c, title=titles[c]), head)
        head = None
    return _write(path, render(f"bloatlab fidelity: {name}", meta, sec))
