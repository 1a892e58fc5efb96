"""Plots (matplotlib), from a run (:class:`bloatlab.Result`) or a store.

Kinds (``bloatlab plot RESULT --kind KIND``):

- ``all``: flent's "all" plot of a run — each flow's goodput and the total
  per direction (a panel per direction), and the probe's RTT, on one time axis.
- ``timeseries``: per flow and link, against time — goodput, cwnd, RTT (and
  probe RTT), pacing rate, queueing delay; one panel each, like flent's. More
  than ``max_flows`` flows: their mean and min–max band, and the total.
- ``cdf``: CDFs of RTT (flows' smoothed RTT samples and probe RTTs) and of
  the bottleneck's queueing delay; of a store, one line per point (its seeds
  pooled), not one per run.
- ``scatter``: Pantheon-style throughput against p95 delay, per point its
  runs, their mean and 1-σ ellipse, and its name (delay axis reversed and
  logarithmic: better is up and to the right).
- ``param``: a metric against a swept parameter (mean and min–max over
  seeds), one colour per value of a second parameter (``--hue``): lines for a
  numeric parameter, grouped bars for a categorical one; ``bars``: bars always.
- ``heatmap``: a metric over two swept parameters; ``--metric gpgain`` is
  the IMC 2019 GpGain = (goodput_BBR − goodput_CUBIC)/goodput_CUBIC × 100.
- ``fairness``: per-flow goodput bars with Jain's index (a run), or each
  congestion control's share per point (a store).

Legends stand outside the axes; numbers printed on a plot or in the report
go through :func:`human` (never ``2.38e+03``).
Every function returns a Figure and never calls ``plt.show()``.

One kind a module (``timeseries.py`` has ``all`` too, ``param.py`` ``bars``),
their shared helpers in ``common.py``; :func:`plot` dispatches by kind. A new
kind: a module with its function, its name in :data:`KINDS`, its branch in
:func:`_plot`.
"""

from __future__ import annotations

from ...errors import UserError
from .cdf import cdf, cdf_store  # noqa: F401
from .common import _figure, METRIC_LABELS, _ecdf, _filter, _label, _plt, _title, human, legend_outside, numeric_column, point_label, to_number, varying_keys  # noqa: F401
from .fairness import fairness_run, fairness_store  # noqa: F401
from .heatmap import gpgain_frame, heatmap  # noqa: F401
from .param import param  # noqa: F401
from .scatter import scatter  # noqa: F401
from .timeseries import all_plot, goodput_series, timeseries  # noqa: F401

KINDS = ("all", "timeseries", "cdf", "scatter", "param", "bars", "heatmap", "fairness")


def plot(target, kind: str, **kw):
    """Dispatch: ``target`` is a Result or a Store (see bloatlab.load).

    ``where`` ({key: value}) keeps only the matching runs of a Store for every
    kind of plot, says so in each title, and fails when no run matches."""
    from ..store import Store

    if kind not in KINDS:
        raise UserError(f'--kind: unknown plot "{kind}" (expected one of: {", ".join(KINDS)})')
    where = kw.pop("where", None)
    if not where:
        return _plot(target, kind, **kw)
    if not isinstance(target, Store):
        raise UserError("plot --where: selects runs of a results directory; this is a single run")
    target = target.subset(_filter(target.runs, where)["run_id"])
    fig = _plot(target, kind, **kw)
    desc = ", ".join(f"{k}={v}" for k, v in where.items())
    sup = fig._suptitle
    titled = [ax for ax in fig.axes if ax.get_title()]
    if sup is not None and sup.get_text():
        fig.suptitle(f"{sup.get_text()}\n(only {desc})", fontsize=sup.get_fontsize())
    elif titled:
        for ax in titled:
            ax.set_title(f"{ax.get_title()}\n(only {desc})", fontsize=ax.title.get_fontsize())
    else:
        fig.suptitle(f"only {desc}", fontsize=10)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return fig


def _plot(target, kind: str, **kw):
    from ..store import Store

    is_store = isinstance(target, Store)
    if kind == "all":
        return all_plot(_one_run(target, kw.get("run")) if is_store else target)
    if kind == "timeseries":
        if is_store:
            target = _one_run(target, kw.get("run"))
        return timeseries(target)
    if kind == "cdf":
        if is_store and kw.get("run"):
            return cdf(_one_run(target, kw["run"]))
        return cdf_store(target, hue=kw.get("hue")) if is_store else cdf(target)
    if kind == "fairness":
        if is_store and not kw.get("run"):
            return fairness_store(target)
        return fairness_run(_one_run(target, kw.get("run")) if is_store else target)
    if not is_store:
        raise UserError(f"plot --kind {kind}: needs a results directory of a sweep, not a single run")
    if kind == "scatter":
        return scatter(target, hue=kw.get("hue"))
    keys = varying_keys(target)
    if kind in ("param", "bars"):
        x = kw.get("x") or (keys[0] if keys else None)
        if not x:
            raise UserError(f"plot {kind}: give --x KEY (a swept key)")
        hue = kw.get("hue")
        others = [k for k in keys if k not in (x, hue)]
        if hue is None and len(others) == 1:
            hue, others = others[0], []  # the one other swept key: a colour each, not pooled away
        return param(target, x, kw.get("metric") or "total_goodput_mbps", hue, bars=True if kind == "bars" else None)
    if kind == "heatmap":
        x, y = kw.get("x"), kw.get("y")
        if not (x and y):
            num = [k for k in keys if numeric_column(target.runs[k])[0] is not None]
            if len(num) < 2:
                raise UserError("plot heatmap: give --x KEY --y KEY (two swept numeric keys)")
            x, y = x or num[0], y or num[1]
        metric = kw.get("metric") or ("gpgain" if "flow.0.cc" in keys else "total_goodput_mbps")
        return heatmap(target, x, y, metric)
    raise UserError(f"plot: {kind}")


def _one_run(target, run_id):
    runs = target.runs
    if run_id is None:
        if len(runs) != 1:
            raise UserError(f"this plot shows one run: give --run RUN_ID (one of {len(runs)}, see bloatlab query)")
        run_id = runs["run_id"].iloc[0]
    if run_id not in set(runs["run_id"]):
        raise UserError(f'--run: no run "{run_id}" in {target.path}')
    return target.result(run_id)
