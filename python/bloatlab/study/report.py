"""``bloatlab report DIR``: one self-contained HTML file.

The page holds the scenario and its metadata (engine, seed, version, machine),
summary tables and every plot, the images embedded as ``data:`` PNGs, so the
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
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: .6em; overflow-x: auto; font-size: 12px; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.holds { color: #1a7f37; font-weight: bold; } .fails { color: #c62828; font-weight: bold; }
.not-evaluated { color: #8a6d00; font-weight: bold; } .meta td { text-align: left; }
.scroll { max-height: 480px; overflow: auto; }
</style></head><body>
<h1>{{ title }}</h1>
<table class="meta">{% for k, v in meta %}<tr><th class="l">{{ k }}</th><td>{{ v }}</td></tr>{% endfor %}</table>
{% for s in sections %}
<section>
{% if s.heading %}<h2>{{ s.heading }}</h2>{% endif %}
{% if s.kind == "text" %}<p>{{ s.body }}</p>
{% elif s.kind == "pre" %}<pre>{{ s.body }}</pre>
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


def _table(df, max_rows: int = 300, floatfmt="{:.3g}") -> tuple[str, str]:
    note = ""
    if len(df) > max_rows:
        note = f"first {max_rows} of {len(df)} rows (all of them: bloatlab query)"
        df = df.head(max_rows)

    def f(v):
        if v is None:
            return ""
        if isinstance(v, float):
            return "" if v != v else floatfmt.format(v)
        return str(v)

    body = df.to_html(index=False, escape=True, na_rep="", formatters={c: f for c in df.columns}, border=0)
    return body, note


class _Sections(list):
    def text(self, heading, body):
        self.append({"kind": "text", "heading": heading, "body": body})

    def pre(self, heading, body):
        self.append({"kind": "pre", "heading": heading, "body": body})

    def table(self, heading, df, **kw):
        body, note = _table(df, **kw)
        self.append({"kind": "table", "heading": heading, "body": body, "note": note})

    def figure(self, caption, fig, heading=None):
        self.append({"kind": "figure", "heading": heading, "caption": caption, "body": fig_png(fig)})

    def claims(self, heading, claims):
        self.append({"kind": "claims", "heading": heading, "body": claims})

    def try_figure(self, caption, make, heading=None):
        """A plot that may not apply to these data is left out, with a note."""
        try:
            self.figure(caption, make(), heading)
        except UserError as e:
            self.text(heading, f"({caption}: not drawn — {e})")


def _machine():
    return f"{platform.node()} — {platform.system()} {platform.release()}, {platform.machine()}, {os.cpu_count()} cores"


def render(title, meta, sections) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True)
    return env.from_string(TEMPLATE).render(title=title, meta=meta, sections=sections, version=__version__,
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
    sec.pre("Scenario", _toml_like(s["scenario"]))
    import pandas as pd

    from .store import flow_rows

    sec.table("Flows", pd.DataFrame(flow_rows(s)))
    links = [dict(direction=d, **{k: v for k, v in l.items() if k not in ("qdelay_ms", "drops_by_reason")},
                  **{f"qdelay_{k}_ms": v for k, v in (l.get("qdelay_ms") or {}).items()})
             for d, l in s.get("links", {}).items()]
    if links:
        sec.table("Links", pd.DataFrame(links))
    if s.get("probes"):
        sec.table("Probes", pd.DataFrame([dict(name=p["name"], loss=p["loss"], sent=p["sent"],
                                                **{f"rtt_{k}_ms": v for k, v in p["rtt_ms"].items()})
                                           for p in s["probes"]]))
    sec.text("Totals", f"total goodput {s['total_goodput_mbps']:.2f} Mbit/s; Jain's fairness index "
                       f"{s['jain_fairness'] if s['jain_fairness'] is None else round(s['jain_fairness'], 3)}")
    sec.try_figure("time series per flow and link", lambda: plots.timeseries(result), "Plots")
    sec.try_figure("CDFs of RTT and queueing delay", lambda: plots.cdf(result))
    sec.try_figure("goodput per flow", lambda: plots.fairness_run(result))
    return _write(path, render(f"bloatlab run: {s['scenario'].get('name', '')}", meta, sec))


METRICS = ["total_goodput_mbps", "retransmits", "retrans_rate", "rtt_p95_ms", "probe_rtt_p95_ms",
           "down_qdelay_p95_ms", "down_utilization", "jain_fairness", "fct_s"]


def store_report(store, path: str, experiment=None, claims=None, extra: dict | None = None) -> str:
    import pandas as pd

    from . import plots

    runs = store.runs
    if runs.empty:
        raise UserError(f"report: {store.path} holds no finished run yet")
    st = store.study
    engines = ", ".join(sorted(runs["engine"].astype(str).unique()))
    meta = [("study", st.get("name", "")), ("runs", len(runs)), ("engine", engines),
            ("seeds", ", ".join(str(s) for s in sorted(runs["seed"].unique())[:20])),
            ("created", st.get("created", "")), ("bloatlab", __version__), ("machine", _machine()),
            ("results", os.path.abspath(store.path))]
    sec = _Sections()
    if experiment is not None:
        sec.text("Source", experiment.source)
        sec.pre("Published numbers", experiment.published.strip())
    if claims:
        sec.claims("Check against the published numbers", claims)
    if st.get("description"):
        sec.text("Description", st["description"])
    for part in st.get("parts", []):
        sec.pre(f"Scenario (part {part['name']})", _toml_like(part["base"]))
        desc = {"set": part.get("set"), "grid": part.get("grid"), "points": part.get("points"),
                "repeat": part.get("repeat"), "first seed": part.get("seed")}
        sec.pre(f"Sweep (part {part['name']})", _toml_like(desc))
    keys = store.swept_keys()
    metrics = [m for m in METRICS if m in runs and runs[m].notna().any()]
    metrics += [c for c in runs.columns if c.startswith("share_") and c not in metrics]
    by = ["part"] + [k for k in keys if runs[k].nunique(dropna=True) > 1]
    agg = runs.groupby(by, sort=False, dropna=False)[metrics].mean().reset_index()
    agg.insert(len(by), "runs", runs.groupby(by, sort=False, dropna=False).size().values)
    sec.table("Summary (mean over seeds)", agg)
    cols = ["run_id", "part", "seed"] + keys + metrics
    sec.table("All runs", runs[[c for c in cols if c in runs]])
    if experiment is not None and extra:
        for cap, df in extra.get("tables", []):
            sec.table(cap, df)
        first = True
        for cap, fig in extra.get("figures", []):
            sec.figure(cap, fig, "Figures of the experiment" if first else None)
            first = False
    # Generic plots of every part.
    first = True
    for part in runs["part"].unique():
        pr = runs[runs["part"] == part]
        sub = _SubStore(store, pr)
        pkeys = [k for k in keys if k in pr and pr[k].nunique(dropna=True) > 1]
        head = f"Plots (part {part})"
        cc = next((k for k in pkeys if k.endswith(".cc")), None)
        xkeys = [k for k in pkeys if k != cc]
        for x in xkeys[:3]:
            sec.try_figure(f"goodput vs {x}", lambda x=x: plots.param(sub, x, "total_goodput_mbps", hue=cc), head)
            head = None
            for m in ("retransmits", "probe_rtt_p95_ms", "down_qdelay_p95_ms"):
                if m in pr and pr[m].notna().any() and pr[m].abs().sum() > 0:
                    sec.try_figure(f"{m} vs {x}", lambda x=x, m=m: plots.param(sub, x, m, hue=cc))
                    break
        num = [k for k in xkeys if plots.numeric_column(pr[k])[0] is not None]
        if len(num) >= 2:
            metric = "gpgain" if cc == "flow.0.cc" and set(pr[cc]) >= {"bbr", "cubic"} else "total_goodput_mbps"
            sec.try_figure(f"{metric} over {num[0]} × {num[1]}", lambda: plots.heatmap(sub, num[0], num[1], metric), head)
            head = None
        if pr["rtt_p95_ms"].notna().any():
            sec.try_figure("throughput vs p95 delay", lambda: plots.scatter(sub, hue=cc), head)
            head = None
        if any(c.startswith("share_") for c in pr.columns) and pr["n_flows"].max() > 1:
            sec.try_figure("goodput share per congestion control", lambda: plots.fairness_store(sub), head)
            head = None
        rid = pr["run_id"].iloc[0]
        r = store.result(rid)
        label = plots.point_label(pr.iloc[0], keys) or rid
        sec.try_figure(f"time series of run {rid} ({label})", lambda: plots.timeseries(r), head)
        sec.try_figure(f"CDFs of run {rid} ({label})", lambda: plots.cdf(r))
        first = False
    title = f"bloatlab study: {st.get('name', os.path.basename(os.path.abspath(store.path)))}"
    if experiment is not None:
        title = f"bloatlab reproduce {experiment.name}: {experiment.title}"
    return _write(path, render(title, meta, sec))


class _SubStore:
    """A view of a store restricted to some runs (one part), for the plots."""

    def __init__(self, store, runs):
        self._s, self.runs, self.path, self.study = store, runs.reset_index(drop=True), store.path, store.study

    def swept_keys(self):
        return [k for k in self._s.swept_keys() if k in self.runs and self.runs[k].notna().any()]

    def result(self, rid):
        return self._s.result(rid)


def _write(path: str, text: str) -> str:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


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
