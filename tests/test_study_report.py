"""Plots of every kind, and the HTML report rendered by headless Chromium."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import textwrap

import pytest

import bloatlab
from bloatlab.cli import main as cli

SCENARIO = """
name = "two"
duration = "8s"
seed = 1
[link.down]
rate = "20Mbit"
buffer = "2bdp"
[link.up]
rate = "20Mbit"
[[flow]]
name = "a"
cc = "cubic"
rtt = "20ms"
[[flow]]
name = "b"
cc = "bbr"
rtt = "20ms"
[[probe]]
interval = "50ms"
"""


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    (d / "scenario.toml").write_text(SCENARIO)
    (d / "exp.toml").write_text(textwrap.dedent("""
        name = "report-test"
        base = "scenario.toml"
        [grid]
        "link.down.rate" = ["10Mbit", "20Mbit"]
        "flow.0.rtt" = ["10ms", "40ms"]
        "flow.0.cc" = ["cubic", "bbr"]
    """))
    out = d / "out"
    assert cli(["sweep", str(d / "exp.toml"), "--out", str(out), "-q"]) == 0
    return str(out)


@pytest.mark.parametrize("kind, extra", [
    ("scatter", []), ("param", ["--x", "link.down.rate", "--hue", "flow.0.cc"]),
    ("heatmap", ["--x", "link.down.rate", "--y", "flow.0.rtt"]),
    ("heatmap", ["--x", "link.down.rate", "--y", "flow.0.rtt", "--metric", "jain_fairness"]),
    ("fairness", []), ("cdf", []),
])
def test_every_store_plot_kind_writes_an_image(sweep_dir, tmp_path, kind, extra):
    out = str(tmp_path / f"{kind}.png")
    assert cli(["plot", sweep_dir, "--kind", kind, "--out", out] + extra) == 0
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(out) > 5000


def test_run_plots_draw_one_run_of_a_sweep(sweep_dir, tmp_path):
    rid = bloatlab.load(sweep_dir).runs["run_id"].iloc[0]
    for kind in ("timeseries", "cdf", "fairness"):
        out = str(tmp_path / f"{kind}.svg")
        assert cli(["plot", sweep_dir, "--kind", kind, "--run", rid, "--out", out]) == 0
        assert "<svg" in open(out).read(2000)


def test_gpgain_is_bbr_minus_cubic_over_cubic_per_cell(sweep_dir):
    from bloatlab.study.plots import gpgain_frame

    runs = bloatlab.load(sweep_dir).runs
    g = gpgain_frame(runs, "link.down.rate", "flow.0.rtt")
    r = runs[(runs["link.down.rate"] == "10Mbit") & (runs["flow.0.rtt"] == "40ms")].set_index("flow.0.cc")
    b, c = r.loc["bbr", "total_goodput_mbps"], r.loc["cubic", "total_goodput_mbps"]
    assert g.loc["40ms", "10Mbit"] == pytest.approx((b - c) / c * 100)


@pytest.mark.parametrize("args, msg", [
    (["--kind", "heatmap", "--x", "link.down.rate", "--y", "nope"], 'no column "nope"'),
    (["--kind", "timeseries"], "give --run"),
    (["--kind", "param", "--where", "flow.0.cc=vegas"], "no run matches"),
])
def test_plot_errors_name_the_argument(sweep_dir, capsys, args, msg):
    assert cli(["plot", sweep_dir] + args) == 2
    assert msg in capsys.readouterr().err


def chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHECK_JS = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length;
  const p = document.createElement('p'); p.id = 'render-check';
  p.textContent = `IMAGES ${ok}/${imgs.length} TABLES ${document.querySelectorAll('table').length} H2 ${document.querySelectorAll('h2').length}`;
  document.body.appendChild(p);
});
</script></body>"""


def render_in_chromium(html_path, tmp_path):
    """Load the page in headless Chromium; return the DOM after load (with our check's line)."""
    probe = tmp_path / "probe.html"
    probe.write_text(open(html_path, encoding="utf-8").read().replace("</body>", CHECK_JS))
    prof = tempfile.mkdtemp(prefix="bloatlab-chromium-")
    try:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={prof}", "--virtual-time-budget=5000"]
        dom = subprocess.run([chromium()] + flags + ["--dump-dom", f"file://{probe}"], capture_output=True,
                             text=True, timeout=120).stdout
        shot = tmp_path / "shot.png"
        subprocess.run([chromium()] + flags + ["--window-size=1200,1600", f"--screenshot={shot}", f"file://{html_path}"],
                       capture_output=True, timeout=120)
        return dom, shot
    finally:
        shutil.rmtree(prof, ignore_errors=True)


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install -y chromium; "
                                               "scripts/setup.sh does it when run as root)")
def test_the_report_is_one_file_whose_page_and_images_render_in_chromium(sweep_dir, tmp_path, capsys):
    path = str(tmp_path / "report.html")
    assert cli(["report", sweep_dir, "--out", path]) == 0
    text = open(path, encoding="utf-8").read().replace("<wbr>", "")  # column names may break after . and _
    assert not re.search(r'(src|href)="(?!data:)', text)      # self-contained: nothing loaded from elsewhere
    n_img = text.count("<img ")
    assert n_img >= 6
    assert "report-test" in text and "link.down.rate" in text and "total_goodput_mbps" in text
    dom, shot = render_in_chromium(path, tmp_path)
    m = re.search(r"IMAGES (\d+)/(\d+) TABLES (\d+) H2 (\d+)", dom)
    assert m, dom[-2000:]
    ok, total, tables, h2 = map(int, m.groups())
    assert ok == total == n_img and tables >= 3 and h2 >= 4
    # The screenshot is not blank: the rendered page has many colours.
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    assert img.size == (1200, 1600) and len(img.getcolors(1 << 20) or []) > 50


def test_a_run_directory_gets_a_report_too(tmp_path):
    r = bloatlab.run(SCENARIO)
    r.save(str(tmp_path / "run"))
    assert cli(["report", str(tmp_path / "run")]) == 0
    text = open(tmp_path / "run" / "report.html", encoding="utf-8").read()
    assert text.count("<img ") == 4 and "Flows" in text and "jain" in text.lower()
