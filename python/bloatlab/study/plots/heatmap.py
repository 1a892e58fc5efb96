"""``heatmap``: a metric over two swept parameters (IMC 2019's GpGain)."""

from __future__ import annotations

import re

from ...errors import UserError
from .common import _check_col, _figure, _filter, _label, human, numeric_column

def gpgain_frame(runs, x: str, y: str, cc_key: str = "flow.0.cc"):
    """Mean GpGain (%) per (x, y) cell: (goodput_BBR − goodput_CUBIC) / goodput_CUBIC × 100."""
    _check_col(runs, cc_key, "gpgain")
    m = runs.groupby([y, x, cc_key], sort=False)["total_goodput_mbps"].mean().unstack(cc_key)
    if "bbr" not in m or "cubic" not in m:
        raise UserError("gpgain: needs runs with flow.0.cc = bbr and = cubic")
    return ((m["bbr"] - m["cubic"]) / m["cubic"] * 100).unstack(x)


def heatmap(store, x: str, y: str, metric: str = "gpgain", where: dict | None = None, ax=None, title=None,
            fmt: str | None = None, cmap: str | None = None, center: float | None = None, span: float | None = None):
    """A metric (mean over the runs) over two swept keys, each cell's value
    written in it in black or white, whichever contrasts with the cell. A gain
    (``gpgain``, or any ``center``) gets a diverging map centred on it; with
    ``span`` its colours run from ``center - span`` to ``center + span``
    whatever the data (a tolerance: an error well inside it stays pale, one
    beyond it saturates), else to the data's largest distance from the centre."""
    import numpy as np

    runs = _filter(store.runs, where)
    for c in (x, y):
        _check_col(runs, c, "plot heatmap")
    if metric == "gpgain":
        table = gpgain_frame(runs, x, y)
        cmap, center = cmap or "RdBu", 0.0 if center is None else center
        fmt = fmt or "{:+.0f}"
    else:
        _check_col(runs, metric, "plot heatmap --metric")
        table = runs.groupby([y, x], sort=False)[metric].mean().unstack(x)
    units = {}
    for axis in (0, 1):
        labels = table.index if axis == 0 else table.columns
        nums, units[axis] = numeric_column(list(labels))
        if nums is not None:
            order = [lab for _, lab in sorted(zip(nums, labels))]
            table = table.loc[order] if axis == 0 else table[order]
    fig = None
    if ax is None:
        fig, ax = _figure(figsize=(max(6.0, 2.4 + 1.0 * table.shape[1]), max(3.6, 1.6 + 0.55 * table.shape[0])))
    vals = table.to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    kw = {}
    if center is not None and (finite.size or span):
        lim = span if span else (max(abs(finite.min() - center), abs(finite.max() - center)) or 1.0)
        kw = {"vmin": center - lim, "vmax": center + lim}
    im = ax.imshow(vals, cmap=cmap or "viridis", aspect="auto", origin="lower", **kw)
    ax.set_xticks(range(table.shape[1]), [str(c) for c in table.columns], rotation=45 if table.shape[1] > 6 else 0,
                  ha="right" if table.shape[1] > 6 else "center", fontsize=8)
    ax.set_yticks(range(table.shape[0]), [str(i) for i in table.index], fontsize=8)
    ax.set_xlabel(f"{x} ({units[1]})" if units[1] else x)
    ax.set_ylabel(f"{y} ({units[0]})" if units[0] else y)
    size = 9 if max(table.shape) <= 10 else 7
    for (i, j), v in np.ndenumerate(vals):
        if np.isfinite(v):
            r, g, b, _ = im.cmap(im.norm(v))
            ink = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            text = fmt.format(v) if fmt else human(v)
            text = "0" if re.fullmatch(r"[+-]0", text) else text  # a rounded zero has no sign
            ax.text(j, i, text, ha="center", va="center", fontsize=size, color=ink)
    ax.figure.colorbar(im, ax=ax, label=_label(metric), shrink=0.9)
    ax.set_title(title or f"{store.study.get('name', '')}: {_label(metric)}", fontsize=10)
    return fig if fig is not None else ax.figure
