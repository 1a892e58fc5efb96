"""Every plot kind drawn from a stored run and a stored sweep, and checked for
what a reader needs (issue 15 §3): axis labels with units, the legend entries,
the number of drawn series — and the HTML report's numbers, headline and tables.

One sweep (2 qdiscs x 2 controls x 2 rates, 2 seeds, 3 simulated seconds) and
two runs (a mixed up/down run, and one with 14 flows) are shared by the tests."""

from __future__ import annotations

import os
import re
import textwrap

import numpy as np
import pytest

import bloatlab
from bloatlab.cli import main as cli
from bloatlab.errors import UserError
from bloatlab.study import plots

UNIT = re.compile(r"\((Mbit/s|KB|ms|s|%)\)")

BASE = """
name = "glance"
duration = "3s"
seed = 1
[link.down]
rate = "20Mbit"
buffer = "2bdp"
[link.up]
rate = "20Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
[[probe]]
interval = "20ms"
"""

MIXED = """
name = "mixed"
duration = "4s"
seed = 1
[link.down]
rate = "20Mbit"
buffer = "2bdp"
[link.up]
rate = "5Mbit"
buffer = "2bdp"
[[flow]]
name = "a"
cc = "cubic"
rtt = "30ms"
[[flow]]
name = "b"
cc = "bbr"
rtt = "30ms"
[[flow]]
name = "u"
cc = "cubic"
rtt = "30ms"
direction = "up"
[[probe]]
interval = "20ms"
"""

MANY = """
name = "many"
duration = "3s"
seed = 1
[link.down]
rate = "50Mbit"
buffer = "1bdp"
[link.up]
rate = "50Mbit"
[[flow]]
cc = "cubic"
rtt = "20ms"
count = 14
[[probe]]
interval = "20ms"
"""


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("glance")
    (d / "scenario.toml").write_text(BASE)
    (d / "exp.toml").write_text(textwrap.dedent("""
        name = "glance"
        base = "scenario.toml"
        repeat = 2
        [grid]
        "link.down.qdisc" = ["fifo", "fq_codel"]
        "flow.0.cc" = ["cubic", "bbr"]
        "link.down.rate" = ["10Mbit", "20Mbit"]
    """))
    out = str(d / "out")
    assert cli(["sweep", str(d / "exp.toml"), "--out", out, "-q"]) == 0
    return out


@pytest.fixture(scope="module")
def store(store_dir):
    return bloatlab.load(store_dir)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("mixed") / "run")
    bloatlab.run(MIXED).save(d)
    return bloatlab.load(d)


@pytest.fixture(scope="module")
def many():
    return bloatlab.run(MANY)


def legend_texts(fig):
    return [t.get_text() for lg in [ax.get_legend() for ax in fig.axes] + list(fig.legends) if lg
            for t in lg.get_texts()]


def drawn_lines(ax):
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_") or len(ln.get_xdata()) > 1]


def outside(fig, legend, ax):
    """The legend sits to the right of the axes, not on the data."""
    fig.canvas.draw()
    return legend.get_window_extent().x0 >= ax.get_window_extent().x1 - 1


# ---------------------------------------------------------------- a run


def test_the_all_plot_has_a_goodput_panel_per_direction_with_totals_and_the_probe(mixed):
    fig = plots.plot(mixed, "all")
    down, up, rtt = fig.axes
    assert [ax.get_ylabel() for ax in fig.axes] == ["goodput down\n(Mbit/s)", "goodput up\n(Mbit/s)", "probe RTT (ms)"]
    assert rtt.get_xlabel() == "time (s)"
    texts = [t.get_text() for t in down.get_legend().get_texts()]
    assert texts == ["a (cubic)", "b (bbr)", "total down", "link down rate 20 Mbit/s"]
    # Two flows, their total, and the link's rate: four lines; the up panel has its one flow and its rate, no total.
    assert len(down.get_lines()) == 4
    assert [t.get_text() for t in up.get_legend().get_texts()] == ["u (cubic)", "link up rate 5 Mbit/s"]
    assert [t.get_text() for t in rtt.get_legend().get_texts()] == ["probe 0"]
    assert all(outside(fig, ax.get_legend(), ax) for ax in fig.axes)
    # The total is the sum of the flows, window by window.
    a, b, tot = (np.asarray(ln.get_ydata(), dtype=float) for ln in down.get_lines()[:3])
    assert np.allclose(a + b, tot)


def test_timeseries_names_each_flow_once_the_probe_and_units_on_every_axis(mixed):
    # goodput per direction (issue 35: a download's and an upload's goodput shared one axis), as `all` draws it
    fig = plots.plot(mixed, "timeseries")
    labels = [ax.get_ylabel().replace("\n", " ") for ax in fig.axes]
    assert labels == ["goodput down (Mbit/s)", "goodput up (Mbit/s)", "cwnd (KB)", "RTT (ms)", "pacing rate (Mbit/s)",
                      "queueing delay (ms)"]
    down = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    up = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert {"a (cubic)", "b (bbr)", "total down"} <= set(down) and "u (cubic)" not in down
    assert "u (cubic)" in up and not {"a (cubic)", "b (bbr)"} & set(up)
    assert [t.get_text() for t in fig.axes[3].get_legend().get_texts()] == ["probe 0"]
    assert [t.get_text() for t in fig.axes[5].get_legend().get_texts()] == ["link down", "link up"]
    assert len(fig.axes[2].get_lines()) == 3  # cwnd: one line per flow


def test_many_flows_draw_their_mean_band_and_total_not_fourteen_lines(many):
    fig = plots.timeseries(many)
    gp = fig.axes[0]
    texts = [t.get_text() for t in gp.get_legend().get_texts()]
    assert texts == ["min–max of 14 flows", "mean of 14 flows", "total down", "link down rate 50 Mbit/s"]
    assert len(gp.get_lines()) == 3 and len(gp.collections) == 1
    assert len(fig.axes[1].get_lines()) == 1  # cwnd: the mean, with its band


def test_goodput_windows_add_up_to_the_run_and_binning_never_passes_the_link_rate(mixed, many):
    # The windows' total, averaged over the run, is the summary's goodput: no byte lost or counted twice.
    for r in (mixed, many):
        gp = plots.goodput_series(r.flows)
        dirs = {f["id"]: f["direction"] for f in r.summary["flows"]}
        down = gp[gp["flow"].map(dirs) == "down"].groupby("t")["goodput_mbps"].sum()
        want = sum(f["goodput_mbps"] for f in r.summary["flows"] if f["direction"] == "down")
        assert down.mean() == pytest.approx(want, rel=0.02)
    # Two flows at 6 and 4 Mbit/s sampled on clocks of their own (offset, jittered, as the kernel's are):
    # their total per window is 10 Mbit/s, never more.
    import pandas as pd

    rng = np.random.default_rng(1)
    frames = []
    for fid, (rate, off) in enumerate(((6e6, 0.003), (4e6, 0.0071))):
        t = np.sort(off + np.arange(0, 3, 0.01) + rng.uniform(0, 0.004, 300))
        frames.append(pd.DataFrame({"flow": fid, "t": t, "delivered_bytes": np.floor(rate / 8 * (t - off))}))
    gp = plots.goodput_series(pd.concat(frames))
    tot = gp.groupby("t")["goodput_mbps"].sum()
    inner = tot[(tot.index > 0.3) & (tot.index < 2.7)]
    assert len(inner) > 10 and inner.max() <= 10.0 * 1.001 and inner.min() >= 10.0 * 0.999


def test_goodput_above_the_link_rate_only_where_retransmissions_released_waiting_bytes(mixed):
    r = mixed
    dirs = {f["id"]: f["direction"] for f in r.summary["flows"]}
    gp = plots.goodput_series(r.flows)
    down = gp[gp["flow"].map(dirs) == "down"].groupby("t")["goodput_mbps"].sum()
    over = down[down > 20.0 * 1.001]
    fl = r.flows[r.flows["flow"].map(dirs) == "down"]
    retx = fl.groupby("t")["retransmits"].sum()
    for t in over.index:  # in-order delivery: the bytes behind a hole arrive with its retransmission
        assert retx[(retx.index > t - 1.0) & (retx.index <= t + 0.1)].diff().fillna(0).sum() > 0, t


def test_cdf_and_fairness_of_a_run(mixed):
    fig = plots.plot(mixed, "cdf")
    a1, a2 = fig.axes
    assert (a1.get_xlabel(), a2.get_xlabel(), a1.get_ylabel()) == ("RTT (ms)", "queueing delay (ms)", "CDF")
    assert legend_texts(fig) == ["flows' srtt", "probe RTT", "link down", "link up"]
    fig = plots.plot(mixed, "fairness")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "goodput (Mbit/s)" and len(ax.patches) == 3
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["bbr", "cubic"]
    assert "Jain's index" in ax.get_title()


# ---------------------------------------------------------------- a sweep


def test_cdf_of_a_sweep_draws_one_line_per_point_with_the_seeds_pooled(store):
    fig = plots.plot(store, "cdf")
    a1, a2 = fig.axes
    assert a1.get_xlabel() == "probe RTT (ms)" and a2.get_xlabel() == "queueing delay, link down (ms)"
    assert len(a1.get_lines()) == 8 and len(a2.get_lines()) == 8  # 8 points, not 16 runs
    lg = fig.legends[0]
    texts = [t.get_text() for t in lg.get_texts()]
    assert len(texts) == 8 and texts[0] == "qdisc=fifo, cc=cubic, rate=10Mbit"
    fig.canvas.draw()
    assert lg.get_window_extent().x0 >= a2.get_window_extent().x1 - 1  # outside the axes
    assert "2 runs pooled" in fig._suptitle.get_text()
    # Pooled by one key: two lines; too many points for a reader: an error that says what to do.
    assert len(plots.plot(store, "cdf", hue="flow.0.cc").axes[0].get_lines()) == 2
    with pytest.raises(UserError, match="--where KEY=VALUE or pool by one key with --hue"):
        plots.cdf_store(store, max_groups=4)


def test_scatter_shows_each_point_labelled_with_its_mean_and_ellipse_on_a_readable_log_axis(store):
    fig = plots.plot(store, "scatter", hue="link.down.qdisc")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] > ax.get_xlim()[1]  # reversed: better to the right
    assert ax.get_xlabel().startswith("probe RTT p95 (ms)") and "better" in ax.get_xlabel()
    assert ax.get_ylabel() == "goodput (Mbit/s)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["fifo (8 runs)", "fq_codel (8 runs)"]
    assert outside(fig, ax.get_legend(), ax)
    means = [ln for ln in ax.get_lines() if ln.get_label().endswith("runs)")]
    ellipses = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 100]
    assert len(means) == 2 and len(ellipses) == 2
    assert {t.get_text() for t in ax.texts} == {"fifo", "fq_codel"}  # each point named on the plot
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) >= 3 and all(re.fullmatch(r"[\d,.]+", t) for t in ticks), ticks  # 30, 50, ... not 10^2
    # The mean marker sits at the geometric mean delay and the mean goodput of its runs.
    runs = store.runs[store.runs["link.down.qdisc"] == "fifo"]
    x, y = means[0].get_xdata()[0], means[0].get_ydata()[0]
    assert x == pytest.approx(10 ** np.log10(runs["probe_rtt_p95_ms"]).mean())
    assert y == pytest.approx(runs["total_goodput_mbps"].mean())


def test_a_categorical_key_gets_bars_not_lines_and_a_numeric_one_lines(store):
    fig = plots.plot(store, "param", x="link.down.qdisc", hue="flow.0.cc", metric="probe_rtt_p95_ms")
    ax = fig.axes[0]
    assert len(ax.patches) == 4  # 2 qdiscs x 2 controls
    assert not [ln for ln in ax.get_lines() if ln.get_linestyle() != "None"]  # nothing joins fifo to fq_codel
    assert [t.get_text() for t in ax.get_xticklabels()] == ["fifo", "fq_codel"]
    assert ax.get_ylabel() == "probe RTT p95 (ms)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["runs (one dot each)", "cubic", "bbr"]
    assert len(ax.texts) == 4 and not any("e+" in t.get_text() for t in ax.texts)  # each mean written on its bar
    assert "mean over link.down.rate" in ax.get_title()  # what each bar pools
    fig = plots.plot(store, "param", x="link.down.rate", hue="flow.0.cc")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "link.down.rate (Mbit/s)" and not ax.patches
    assert len([ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]) == 2
    # --kind bars draws bars also for a numeric key, labelled as swept.
    ax = plots.plot(store, "bars", x="link.down.rate", hue="flow.0.cc").axes[0]
    assert len(ax.patches) == 4 and [t.get_text() for t in ax.get_xticklabels()] == ["10Mbit", "20Mbit"]


def test_the_readme_bars_example_runs(store_dir, tmp_path):
    out = str(tmp_path / "bars.png")
    assert cli(["plot", store_dir, "--kind", "bars", "--x", "link.down.qdisc", "--metric", "probe_rtt_p95_ms",
                "--out", out]) == 0
    assert os.path.getsize(out) > 5000


def test_gpgain_heatmap_is_diverging_around_zero_readable_and_inked_for_contrast(store):
    fig = plots.plot(store, "heatmap", x="link.down.rate", y="link.down.qdisc")
    ax = fig.axes[0]
    im = ax.get_images()[0]
    assert im.cmap.name == "RdBu" and im.norm.vmin == pytest.approx(-im.norm.vmax)
    assert ax.get_xlabel() == "link.down.rate (Mbit/s)" and ax.get_ylabel() == "link.down.qdisc"
    assert fig.axes[1].get_ylabel() == "GpGain (%)"  # the colour bar, with its unit
    w, h = fig.get_size_inches()
    assert w >= 6 and h >= 3.5
    vals = im.get_array()
    assert len(ax.texts) == vals.size
    for t in ax.texts:
        j, i = (round(v) for v in t.get_position())
        r, g, b, _ = im.cmap(im.norm(vals[i, j]))
        dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
        assert t.get_color() == ("white" if dark else "black")
        assert re.fullmatch(r"[+-]?\d+|0", t.get_text()), t.get_text()


def test_fairness_of_a_sweep_stacks_the_shares_per_point(store):
    fig = plots.plot(store, "fairness")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "share of total goodput" and len(ax.patches) == 2 * 8
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["cubic", "bbr"]


@pytest.mark.parametrize("kind", plots.KINDS)
def test_every_kind_draws_from_the_stored_sweep_through_the_cli(store_dir, store, tmp_path, kind):
    rid = store.runs["run_id"].iloc[0]
    extra = ["--run", rid] if kind in ("all", "timeseries") else []
    extra += ["--x", "link.down.rate", "--y", "link.down.qdisc"] if kind == "heatmap" else []
    out = str(tmp_path / f"{kind}.png")
    assert cli(["plot", store_dir, "--kind", kind, "--out", out] + extra) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- the report


def test_numbers_are_for_people():
    h = plots.human
    assert [h(2381.7), h(18.94), h(0.0209), h(7.0), h(0.000568), h(-3.14159), h(1e6), h(float("nan")), h(9.99996),
            h(99.96)] == ["2,382", "18.9", "0.0209", "7", "0.000568", "-3.14", "1,000,000", "", "10.0", "100"]


def test_the_report_has_one_headline_human_numbers_folded_columns_and_no_figure_twice(store_dir, tmp_path):
    path = str(tmp_path / "r.html")
    assert cli(["report", store_dir, "--out", path]) == 0
    html = open(path, encoding="utf-8").read()
    assert html.count('class="headline"') == 1
    assert html.index('class="headline"') < html.index("<h2>")  # at the top
    head = re.search(r'class="headline">([^<]*)<', html).group(1)
    assert "highest goodput" in head and "lowest probe RTT p95" in head and "Mbit/s" in head
    tables = "".join(re.findall(r"<table.*?</table>", html, flags=re.S))
    assert not re.search(r"\d[eE][+-]\d", tables)  # no 2.38e+03
    assert "same in every row: " in html and "duration_s" not in re.findall(r"<thead>.*?</thead>", html, re.S)[1]
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(imgs) >= 6 and len(set(imgs)) == len(imgs)
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", html)
    assert len(set(captions)) == len(captions), captions


def test_a_run_report_leads_with_its_figures(mixed, tmp_path):
    d = str(tmp_path / "run")
    mixed.save(d)
    assert cli(["report", d]) == 0
    html = open(os.path.join(d, "report.html"), encoding="utf-8").read()
    head = re.search(r'class="headline">([^<]*)<', html).group(1)
    assert head.startswith("This run: total goodput") and "probe RTT p95" in head
    caps = re.findall(r"<figcaption>([^<]*)</figcaption>", html)
    assert caps[0].startswith("goodput and probe RTT") and len(caps) == 4


def _chromium():
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
def test_the_report_tables_fit_the_page_in_chromium(store_dir, tmp_path):
    """Every table fits the page's width: none needs its horizontal scroll bar."""
    import shutil
    import subprocess
    import tempfile

    path = tmp_path / "r.html"
    assert cli(["report", store_dir, "--out", str(path)]) == 0
    check = """<script>window.addEventListener('load', () => {
      const wide = [...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth + 1).length;
      const p = document.createElement('p'); p.textContent = `WIDE ${wide} OF ${document.querySelectorAll('.scroll').length}`;
      document.body.appendChild(p); });</script></body>"""
    probe = tmp_path / "probe.html"
    probe.write_text(path.read_text(encoding="utf-8").replace("</body>", check), encoding="utf-8")
    prof = tempfile.mkdtemp(prefix="bloatlab-chromium-")
    try:
        dom = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                              f"--user-data-dir={prof}", "--window-size=1280,1600", "--virtual-time-budget=5000",
                              "--dump-dom", f"file://{probe}"], capture_output=True, text=True, timeout=120).stdout
    finally:
        shutil.rmtree(prof, ignore_errors=True)
    m = re.search(r"WIDE (\d+) OF (\d+)", dom)
    assert m, dom[-500:]
    assert int(m.group(2)) >= 2 and m.group(1) == "0", m.group(0)


def test_an_error_heatmap_scales_its_colours_to_the_target_not_to_the_data():
    """Issue 35: scaled to the data's ±0.4 %, a 0.25 % goodput error was drawn dark red. With the target as the
    span (fidelity's 5 %), it is pale; an error past the target saturates."""
    import types

    import pandas as pd

    from bloatlab.study import plots

    runs = pd.DataFrame({"a": [1, 1, 2, 2], "b": [10, 20, 10, 20], "err": [0.0025, -0.002, 0.004, -0.0035]})
    st = types.SimpleNamespace(runs=runs, study={"name": "t"})
    fig = plots.heatmap(st, "a", "b", "err", cmap="RdBu_r", center=0.0, span=0.05)
    im = fig.axes[0].images[0]
    assert min(im.cmap(im.norm(0.0025))[:3]) > 0.85  # pale
    assert min(im.cmap(im.norm(0.08))[:3]) < 0.2  # saturated: past the target
    fig_data = plots.heatmap(st, "a", "b", "err", cmap="RdBu_r", center=0.0)  # without a span: the data's range
    im2 = fig_data.axes[0].images[0]
    assert min(im2.cmap(im2.norm(0.004))[:3]) < 0.3


def test_sweep_shares_are_per_direction_when_data_flows_both_ways():
    """Issue 35: the sweep share plot pooled both directions (two links' goodput in one share)."""
    import types

    import pandas as pd

    from bloatlab.study.store import flatten

    s = {"total_goodput_mbps": 25.0, "duration_s": 1.0,
         "flows": [{"cc": "bbr", "direction": "down", "goodput_mbps": 16.0}, {"cc": "cubic", "direction": "down", "goodput_mbps": 4.0},
                   {"cc": "bbr", "direction": "up", "goodput_mbps": 1.0}, {"cc": "cubic", "direction": "up", "goodput_mbps": 4.0}]}
    row = flatten(s)
    assert row["down_share_bbr"] == 0.8 and row["up_share_bbr"] == 0.2 and row["share_bbr"] == 17 / 25
    runs = pd.DataFrame([dict(row, run_id="r1", **{"link.down.qdisc": "fifo"})])
    st = types.SimpleNamespace(runs=runs, study={"name": "t"}, swept_keys=lambda: ["link.down.qdisc"])
    fig = plots.fairness_store(st)
    assert len(fig.axes) == 2 and "per direction" in fig.axes[0].get_title()
    assert [a.get_ylabel().replace("\n", " ") for a in fig.axes] == ["share of the downloads' goodput",
                                                                     "share of the uploads' goodput"]
