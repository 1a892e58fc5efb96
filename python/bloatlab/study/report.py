"""``bloatlab report DIR``: one self-contained HTML file.

The page opens with one headline (an experiment's verdict over its claims, a
sweep's best points, a run's goodput and delays), then holds the scenario and
its metadata (engine, seed, version, machine), summary tables (numbers through
:func:`plots.human`, columns with one value folded into a note) and the plots,
each view of the data once, the images embedded as ``data:`` PNGs, so the
file can be mailed or archived alone. For a built-in experiment it also holds
the source, the published numbers and the ``--check`` verdicts.
"""

from __future__ import annotations

import base64
import io
import json
import os
import platform
import time

from .._version import __version__
from ..errors import UserError

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 12px; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
th { font-size: 11px; vertical-align: bottom; max-width: 9em; } .scroll td { white-space: nowrap; }
.headline { font-size: 1.1em; background: #f4f8ff; border-left: 4px solid #3b6fd4; padding: .6em 1em; margin: 1em 0; }
details > summary { cursor: pointer; font-weight: bold; margin: .6em 0; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; font-size: 12px; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.holds { color: #1a7f37; font-weight: bold; } .fails { color: #c62828; font-weight: bold; }
.not-evaluated { color: #8a6d00; font-weight: bold; } .meta td { text-align: left; }
.scroll { max-height: 480px; overflow: auto; }
</style></head><body>
<h1>{{ title }}</h1>
{% for h in headline %}<p class="headline">{{ h }}</p>{% endfor %}
<table class="meta">{% for k, v in meta %}<tr><th class="l">{{ k }}</th><td class="l">{{ v }}</td></tr>{% endfor %}</table>
{% for s in sections %}
<section>
{% if s.heading %}<h2>{{ s.heading }}</h2>{% endif %}
{% if s.kind == "text" %}<p>{{ s.body }}</p>
{% elif s.kind == "pre" %}<pre>{{ s.body }}</pre>
{% elif s.kind == "details" %}<details><summary>{{ s.summary }}</summary><pre>{{ s.body }}</pre></details>
{% elif s.kind == "table" %}<div class="scroll">{{ s.body | safe }}</div>{% if s.note %}<p><small>{{ s.note }}</small></p>{% endif %}
{% elif s.kind == "figure" %}<figure><img alt="{{ s.caption }}" src="data:image/png;base64,{{ s.body }}"><figcaption>{{ s.caption }}</figcaption></figure>
{% elif s.kind == "claims" %}<table>
<tr><th class="l">claim</th><th class="l">verdict</th><th class="l">published</th><th class="l">rule</th><th class="l">measured / why not</th></tr>
{% for c in s.body %}<tr><td class="l">{{ c.id }}</td><td class="l {{ c.verdict | replace(' ', '-') }}">{{ c.verdict }}</td>
<td class="l">{{ c.published }}</td><td class="l">{{ c.rule }}</td><td class="l">{{ c.measured or c.reason }}</td></tr>{% endfor %}
</table>{% endif %}
</section>
{% endfor %}
<p><small>bloatlab {{ version }} — generated {{ generated }}</small></p>
</body></html>
"""


def fig_png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _wrap_headers(html: str) -> str:
    """Let long column names (link.down.qdisc, probe_rtt_p95_ms) break after a dot or an underscore."""
    import re

    return re.sub(r"<th>([^<]*)</th>", lambda m: "<th>" + re.sub(r"([._])", r"\1<wbr>", m.group(1)) + "</th>", html)


def _table(df, max_rows: int = 300, fold_constant: bool = False) -> tuple[str, str]:
    """An HTML table with numbers for people (plots.human: no 2.38e+03). With
    ``fold_constant``, columns with one value in every row leave the table and
    are named once in the note, so that the table fits the page."""
    from .plots import human

    notes = []
    if fold_constant and len(df) > 1:
        same = [c for c in df.columns if df[c].astype(str).nunique(dropna=False) == 1]
        if same:
            notes.append("same in every row: " + ", ".join(f"{c} = {human(df[c].iloc[0]) or '—'}" for c in same))
            df = df.drop(columns=same)
    if len(df) > max_rows:
        notes.append(f"first {max_rows} of {len(df)} rows (all of them: bloatlab query)")
        df = df.head(max_rows)

    def f(v):
        if v is None or (isinstance(v, float) and v != v):
            return ""
        if isinstance(v, bool):  # before int: a bool is one in Python
            return "yes" if v else "no"
        if isinstance(v, (list, tuple)):  # a link's stages, in the order a packet meets them
            return " → ".join(f(x) for x in v)
        if isinstance(v, float):
            return human(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return human(v)
        return str(v)

    body = df.map(f).to_html(index=False, escape=True, border=0)  # formatted cell by cell: None too is ""
    return _wrap_headers(body), "; ".join(notes)


class _Sections(list):
    def __init__(self):
        super().__init__()
        self.reserved = set()  # what the experiment's own figures already show (see figure())

    def text(self, heading, body):
        self.append({"kind": "text", "heading": heading, "body": body})

    def pre(self, heading, body):
        self.append({"kind": "pre", "heading": heading, "body": body})

    def details(self, heading, summary, body):
        """A long block (a scenario as JSON) folded under its summary line."""
        self.append({"kind": "details", "heading": heading, "summary": summary, "body": body})

    def table(self, heading, df, **kw):
        body, note = _table(df, **kw)
        self.append({"kind": "table", "heading": heading, "body": body, "note": note})

    def figure(self, caption, fig, heading=None, reserve=False):
        """A figure; with ``reserve`` (the experiment's own figures) its axes'
        labels are noted, and a generic figure with the same labels later is
        left out: the report shows each view of the data once."""
        sig = _signature(fig)
        if not reserve and sig in self.reserved:
            import matplotlib.pyplot as plt

            plt.close(fig)
            return
        if reserve:
            self.reserved.add(sig)
        self.append({"kind": "figure", "heading": heading, "caption": caption, "body": fig_png(fig)})

    def claims(self, heading, claims):
        self.append({"kind": "claims", "heading": heading, "body": claims})

    def try_figure(self, caption, make, heading=None):
        """A plot that may not apply to these data is left out, with a note."""
        try:
            self.figure(caption, make(), heading)
        except UserError as e:
            self.text(heading, f"({caption}: not drawn — {e})")


def _signature(fig):
    """What a figure shows, by its axes' labels (colour bars left out)."""
    return tuple((ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes if ax.get_label() != "<colorbar>")


def headline_claims(claims) -> str:
    """One line: how many of the experiment's claims hold, and which do not."""
    from .check import FAILS, HOLDS, NOT_EVALUATED

    n = len(claims)
    held = sum(c.verdict == HOLDS for c in claims)
    line = f"Verdict: {held} of {n} claim{'s' if n != 1 else ''} hold{'s' if held == 1 else ''}"
    for verdict, word in ((FAILS, "fail"), (NOT_EVALUATED, "not evaluated")):
        ids = [c.id for c in claims if c.verdict == verdict]
        if ids:
            line += f"; {word}: {', '.join(ids)}"
    return line + "."


def headline_store(store) -> str:
    """One line for a study without claims: its best point for goodput and for delay (means over seeds)."""
    from .plots import _label, human, point_label, varying_keys

    runs = store.runs
    keys = varying_keys(store)
    if not keys:
        return ""
    delay = next((c for c in ("probe_rtt_p95_ms", "rtt_p95_ms") if c in runs and runs[c].notna().any()), None)
    mean = runs.groupby(keys, sort=False, dropna=False)[[c for c in ("total_goodput_mbps", delay) if c]].mean()
    parts = []
    for col, best, unit, what in (("total_goodput_mbps", "idxmax", "Mbit/s", "highest goodput"),
                                  (delay, "idxmin", "ms", f"lowest {_label(delay).replace(' (ms)', '') if delay else ''}")):
        if col and mean[col].notna().any():
            i = getattr(mean[col], best)()
            vals = i if isinstance(i, tuple) else (i,)
            parts.append(f"{what} {human(mean[col][i])} {unit} at {point_label(dict(zip(keys, vals)), keys)}")
    n = runs.groupby(keys, sort=False, dropna=False).size()
    seeds = f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"
    return f"Best of {len(mean)} points ({seeds} run{'s' if n.max() > 1 else ''} each): " + "; ".join(parts) + "."


def _machine():
    return f"{platform.node()} — {platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores"


def render(title, meta, sections, headline=None) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True)
    return env.from_string(TEMPLATE).render(title=title, meta=meta, sections=sections, version=__version__,
                                            headline=[h for h in (headline or []) if h],
                                            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"))


def _toml_like(doc) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str)


def run_report(result, path: str) -> str:
    from . import plots

    s = result.summary
    meta = [("scenario", s["scenario"].get("name", "")), ("engine", s["engine"]), ("seed", s["seed"]),
            ("duration", f"{s['duration_s']:g} s"), ("bloatlab", s.get("version", "")),
            ("engine meta", ", ".join(f"{k}={v}" for k, v in (s.get("meta") or {}).items())), ("machine", _machine())]
    sec = _Sections()
    sec.details("Scenario", f"the scenario as run ({s['scenario'].get('name', '')})", _toml_like(s["scenario"]))
    import pandas as pd

    from .store import flow_rows

    sec.table("Flows", pd.DataFrame(flow_rows(s)))
    links = [dict(direction=d, **{k: v for k, v in l.items() if k not in ("qdelay_ms", "drops_by_reason")},
                  **{f"qdelay_{k}_ms": v for k, v in (l.get("qdelay_ms") or {}).items()})
             for d, l in s.get("links", {}).items()]
    if links:
        sec.table("Links", pd.DataFrame(links))
    if s.get("probes"):
        sec.table("Probes", pd.DataFrame([{"name": p["name"], "loss %": None if p["loss"] is None else 100 * p["loss"],
                                            "sent": p["sent"],
                                            **{f"rtt_{k}_ms": v for k, v in p["rtt_ms"].items()}}
                                           for p in s["probes"]]))
    _run_figures(sec, result, "Plots")
    if len(s.get("flows") or []) > 1:  # one flow's bar would only repeat the headline's total
        sec.try_figure("goodput per flow", lambda: plots.fairness_run(result))
    return _write(path, render(f"bloatlab run: {s['scenario'].get('name', '')}", meta, sec, [headline_run(s)]))


def headline_run(s: dict) -> str:
    """One line: what the run delivered and what it cost in delay."""
    from .plots import human

    out = [f"total goodput {human(s['total_goodput_mbps'])} Mbit/s"]
    probes = [p for p in s.get("probes") or [] if (p.get("rtt_ms") or {}).get("p95") is not None]
    if probes:
        out.append(f"probe RTT p95 {human(probes[0]['rtt_ms']['p95'])} ms")
    down = (s.get("links") or {}).get("down") or {}
    if (down.get("qdelay_ms") or {}).get("p95") is not None:
        out.append(f"queueing delay p95 (down) {human(down['qdelay_ms']['p95'])} ms")
    if s.get("jain_fairness") is not None and len(s.get("flows") or []) > 1:
        dirs = {f.get("direction", "down") for f in s["flows"]}
        over = " over the download flows" if len(dirs) > 1 else ""  # docs/results.md: never across directions
        out.append(f"Jain's fairness index{over} {s['jain_fairness']:.3f}")
    return "This run: " + "; ".join(out) + "."


def _run_figures(sec, result, heading=None, label=""):
    """One run at a glance (flent's "all"), then the detail panels the glance
    leaves out (cwnd, the flows' RTT, pacing, queueing delay): no panel twice."""
    from . import plots

    sec.try_figure(f"goodput and probe RTT{label} (flent's all)", lambda: plots.all_plot(result), heading)
    sec.try_figure(f"per-flow state and queues{label}",
                   lambda: plots.timeseries(result, panels=("cwnd", "rtt", "pacing", "qdelay")))
    sec.try_figure(f"CDFs of RTT and queueing delay{label}", lambda: plots.cdf(result))


METRICS = ["total_goodput_mbps", "retransmits", "retrans_rate", "rtt_p95_ms", "probe_rtt_p95_ms",
           "down_qdelay_p95_ms", "down_utilization", "jain_fairness", "fct_s"]


def _builds(runs) -> str:
    """The builds that made the runs (study/build.py), with how many each: one
    line of the report's header ("unknown": stored before runs recorded it)."""
    counts = runs["build"].fillna("unknown").value_counts() if "build" in runs else {}
    return ", ".join(f"{b} ({n} run{'' if n == 1 else 's'})" for b, n in sorted(dict(counts).items())) or "unknown"


def store_report(store, path: str, experiment=None, claims=None, extra: dict | None = None) -> str:
    from . import plots

    runs = store.runs
    if runs.empty:
        raise UserError(f"report: {store.path} holds no finished run yet")
    st = store.study
    engines = ", ".join(sorted(runs["engine"].astype(str).unique()))
    meta = [("study", st.get("name", "")), ("runs", len(runs)), ("engine", engines),
            ("seeds", ", ".join(str(s) for s in sorted(runs["seed"].unique())[:20])),
            ("created", st.get("created", "")), ("bloatlab", __version__), ("builds", _builds(runs)),
            ("machine", _machine()), ("results", os.path.abspath(store.path))]
    sec = _Sections()
    if experiment is not None:
        sec.text("Source", experiment.source)
        sec.pre("Published numbers", experiment.published.strip())
    if claims:
        sec.claims("Check against the published numbers", claims)
    if st.get("description"):
        sec.text("Description", st["description"])
    for part in st.get("parts", []):
        desc = {"set": part.get("set"), "grid": part.get("grid"), "points": part.get("points"),
                "repeat": part.get("repeat"), "first seed": part.get("seed")}
        sec.details(f"Part {part['name']}", f"the scenario of part {part['name']} and its sweep",
                    _toml_like({"scenario": part["base"], "sweep": desc}))
    keys = store.swept_keys()
    metrics = [m for m in METRICS if m in runs and runs[m].notna().any()]
    metrics += [c for c in runs.columns if c.startswith("share_") and c not in metrics]
    by = ["part"] + [k for k in keys if runs[k].nunique(dropna=True) > 1]
    agg = runs.groupby(by, sort=False, dropna=False)[metrics].mean().reset_index()
    agg.insert(len(by), "runs", runs.groupby(by, sort=False, dropna=False).size().values)
    sec.table("Summary (mean over seeds)", agg, fold_constant=True)
    cols = ["run_id", "part", "seed"] + keys + metrics
    sec.table("All runs", runs[[c for c in cols if c in runs]], fold_constant=True)
    if experiment is not None and extra:
        for cap, df in extra.get("tables", []):
            sec.table(cap, df)
        first = True
        for cap, fig in extra.get("figures", []):
            sec.figure(cap, fig, "Figures of the experiment" if first else None, reserve=True)
            first = False
    # Generic plots of every part (a view the experiment's own figures already give is not drawn again).
    for part in runs["part"].unique() if experiment is None or experiment.generic_plots else []:
        pr = runs[runs["part"] == part]
        sub = _SubStore(store, pr)
        pkeys = plots.varying_keys(sub)
        head = [f"Plots (part {part})"]

        def fig(caption, make):
            sec.try_figure(caption, make, head.pop() if head else None)

        cc = next((k for k in pkeys if k.endswith(".cc")), None)
        xkeys = [k for k in pkeys if k != cc]
        for x in xkeys[:3]:
            fig(f"goodput vs {x}", lambda x=x: plots.param(sub, x, "total_goodput_mbps", hue=cc))
            for m in ("probe_rtt_p95_ms", "down_qdelay_p95_ms", "retransmits"):
                if m in pr and pr[m].notna().any() and pr[m].abs().sum() > 0:
                    fig(f"{plots.METRIC_LABELS.get(m, m)} vs {x}", lambda x=x, m=m: plots.param(sub, x, m, hue=cc))
                    break
        num = [k for k in xkeys if plots.numeric_column(pr[k])[0] is not None]
        if len(num) >= 2:
            metric = "gpgain" if cc == "flow.0.cc" and set(pr[cc]) >= {"bbr", "cubic"} else "total_goodput_mbps"
            fig(f"{metric} over {num[0]} × {num[1]}", lambda: plots.heatmap(sub, num[0], num[1], metric))
        if pkeys and any(c in pr and pr[c].notna().any() for c in ("probe_rtt_p95_ms", "rtt_p95_ms")):
            fig("goodput vs p95 delay, per point", lambda: plots.scatter(sub))
        shares = [c for c in pr.columns if c.startswith("share_")]
        if shares and (pr[shares].fillna(0) > 0).sum(axis=1).max() > 1 and pkeys:  # controls that share a run
            fig("goodput share per congestion control", lambda: plots.fairness_store(sub))
        if len(pr) > 1:
            fig("CDFs of RTT and queueing delay, one line per point", lambda: _store_cdf(plots, sub, pkeys, cc))
        rid = pr["run_id"].iloc[0]
        label = plots.point_label(pr.iloc[0], pkeys)
        _run_figures(sec, store.result(rid), head.pop() if head else None,
                     f", run {rid}" + (f" ({label})" if label else ""))
    title = f"bloatlab study: {st.get('name', os.path.basename(os.path.abspath(store.path)))}"
    if experiment is not None:
        title = f"bloatlab reproduce {experiment.name}: {experiment.title}"
    headline = headline_claims(claims) if claims else headline_store(store)
    if not headline and len(runs) == 1:  # one run (an import, say): its own headline
        headline = headline_run(store.result(runs["run_id"].iloc[0]).summary)
    return _write(path, render(title, meta, sec, [headline]))


def _store_cdf(plots, sub, keys, cc):
    """One line per point; with too many points, one per value of the control (or of the first key)."""
    try:
        return plots.cdf_store(sub)
    except UserError:
        for k in [cc] + keys:
            if k and sub.runs[k].nunique() <= 20:
                return plots.cdf_store(sub, hue=k)
        raise


class _SubStore:
    """A view of a store restricted to some runs (one part), for the plots."""

    def __init__(self, store, runs):
        self._s, self.runs, self.path, self.study = store, runs.reset_index(drop=True), store.path, store.study

    def swept_keys(self):
        return [k for k in self._s.swept_keys() if k in self.runs and self.runs[k].notna().any()]

    def result(self, rid):
        return self._s.result(rid)

    @property
    def flows(self):
        f = self._s.flows
        return f[f["run_id"].isin(set(self.runs["run_id"]))] if "run_id" in f else f

    def series(self, kind="flows", run_ids=None):
        return self._s.series(kind, list(self.runs["run_id"]) if run_ids is None else run_ids)


def _write(path: str, text: str) -> str:
    from ..atomic import write_text

    return write_text(path, text)


def report(target_dir: str, out: str | None = None, experiment=None, claims=None, extra=None) -> str:
    """Write the HTML report of a run directory or a results directory."""
    from .store import Store, is_run, is_store

    if is_store(target_dir):
        out = out or os.path.join(target_dir, "report.html")
        return store_report(Store(target_dir), out, experiment, claims, extra)
    if is_run(target_dir):
        from ..result import Result

        out = out or os.path.join(target_dir, "report.html")
        return run_report(Result.load(target_dir), out)
    raise UserError(f"report: {target_dir} is neither a results directory (runs/) nor a run (summary.json)")
