"""janog-lossy-download: a 1 MB HTTP-like download at 20 % loss and 200 ms RTT (seed 003).

Source: seed 003, JANOG41 (2018), Y. Ishizaki, "TCP輻輳制御技術動向": netem
``delay 200ms`` and ``loss 20%`` on the server; a 1 MB image downloaded over
HTTP took about 11 s with BBR (Linux 4.11.2) and about 400 s or a timeout
with CUBIC (Linux 4.4).

Setup here: 100 Mbit/s (not given; a LAN), 200 ms base RTT, 20 % i.i.d.
loss on the data direction only (netem on the server's egress), one 1 MB
transfer per run, BBR or CUBIC, up to 600 s (our "timeout"). The handshake and
the request are modelled (a lost SYN-ACK costs a 1 s timeout, `fct_s` counts
from the first SYN); the kernel's receive window is not (docs/fidelity.md).
Many seeds: single transfers at 20 % loss vary a lot.
"""

from __future__ import annotations

from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, select

TIMEOUT_S = 600.0


class JanogLossyDownload(Experiment):
    name = "janog-lossy-download"
    title = "1 MB download at 20 % loss and 200 ms RTT: BBR vs CUBIC"
    source = "seed 003: JANOG41 (2018), Ishizaki, \"TCP congestion control trends\", the 20 % loss / 200 ms download"
    published = """
Seed 003 (JANOG41): 20 % packet loss, RTT 200 ms, a 1 MB image over HTTP:
  - BBR: download complete in about 11 s.
  - CUBIC: about 400 s, or a timeout.
"""

    def sweep(self, quick: bool) -> Sweep:
        base = dumbbell("janog-lossy-download", "100Mbit", "200ms", "1bdp",
                        [{"name": "http-1MB", "cc": "bbr", "size": "1MB"}], f"{TIMEOUT_S:.0f}s", loss="20%",
                        sample="100ms")
        part = Part("download", base, grid={"flow.0.cc": ["bbr", "cubic"]}, repeat=4 if quick else 12)
        return Sweep(self.name + ("-quick" if quick else ""), [part],
                     description="1 MB, 20 % loss on the data path, 200 ms, 100 Mbit/s, up to 600 s.")

    @staticmethod
    def times(runs, cc):
        sel = select(runs, **{"flow.0.cc": cc})
        if sel.empty:
            return None
        return [float(f) if c and f == f else TIMEOUT_S for f, c in zip(sel["fct_s"], sel["completed"])], \
            int((~sel["completed"].astype(bool)).sum())

    def claims(self, store) -> list:
        import statistics

        runs, cl = store.runs, []
        b, c_ = self.times(runs, "bbr"), self.times(runs, "cubic")
        c = Claim("bbr-about-11s", "BBR downloads the 1 MB in about 11 s (seed 003)",
                  "median BBR completion time between 5.5 s and 22 s (the published value within a factor 2)")
        if b is None:
            cl.append(c.skip("no BBR run in the store"))
        else:
            m = statistics.median(b[0])
            cl.append(c.judge(5.5 <= m <= 22, f"median {m:.1f} s over {len(b[0])} seeds (min {min(b[0]):.1f}, max "
                                              f"{max(b[0]):.1f}; {b[1]} not done in {TIMEOUT_S:.0f} s)", median=m))
        c = Claim("cubic-about-400s-or-timeout", "CUBIC takes about 400 s or times out (seed 003)",
                  f"median CUBIC completion time >= 200 s (unfinished runs count as {TIMEOUT_S:.0f} s)")
        if c_ is None:
            cl.append(c.skip("no CUBIC run in the store"))
        else:
            m = statistics.median(c_[0])
            cl.append(c.judge(m >= 200, f"median {m:.1f} s over {len(c_[0])} seeds (min {min(c_[0]):.1f}, max "
                                        f"{max(c_[0]):.1f}; {c_[1]} not done in {TIMEOUT_S:.0f} s)", median=m))
        c = Claim("cubic-much-slower", "CUBIC is some 36x slower than BBR here (400 s vs 11 s, seed 003)",
                  "median CUBIC time >= 10x median BBR time")
        if b is None or c_ is None:
            cl.append(c.skip("needs both BBR and CUBIC runs"))
        else:
            r = statistics.median(c_[0]) / statistics.median(b[0])
            cl.append(c.judge(r >= 10, f"{r:.1f}x", ratio=r))
        return cl

    def analyze(self, store) -> dict:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import pandas as pd

        runs = store.runs
        fig, ax = plt.subplots(figsize=(6, 3.6))
        data, labels = [], []
        for cc in ("bbr", "cubic"):
            t = self.times(runs, cc)
            if t:
                data.append(t[0])
                labels.append(cc.upper())
        if data:
            ax.boxplot(data, vert=False)
            ax.set_yticks(range(1, len(labels) + 1), labels)
            for i, d in enumerate(data):
                ax.plot(d, [i + 1] * len(d), "o", alpha=0.5)
        ax.axvline(11, color="C0", ls=":", label="published BBR ≈ 11 s")
        ax.axvline(400, color="C1", ls=":", label="published CUBIC ≈ 400 s")
        ax.set_xscale("log")
        ax.set_xlabel(f"completion time of 1 MB (s; {TIMEOUT_S:.0f} = not done)")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title("1 MB at 20 % loss, 200 ms RTT", fontsize=10)
        fig.tight_layout()
        tab = runs[["flow.0.cc", "seed", "fct_s", "completed", "retransmits"]].copy()
        return {"figures": [("completion time of the 1 MB download, per seed", fig)],
                "tables": [("per run", pd.DataFrame(tab))]}


EXPERIMENT = JanogLossyDownload()
