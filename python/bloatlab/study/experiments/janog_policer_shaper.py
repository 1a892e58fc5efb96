"""janog-policer-shaper: flow mixes through a 2 Mbit/s CIR policer and a 2 Mbit/s shaper (seed 003).

Source: seed 003, JANOG41 (2018), Y. Ishizaki: a Cisco ASR with ``police``
(CIR 2 Mbit/s, exceed-action drop) or ``shape peak`` (CIR 2 Mbit/s, target
shape rate 4 Mbit/s) on GigabitEthernet; BBR×4, CUBIC×4, BBR×2+CUBIC×2,
BBR×4+Reno×4. The seed carries the resulting throughput graphs only as
images: it has no number for them. It quotes Google's IETF 97 BBR FAQ: "Is
BBR fair to Cubic/Reno? Buffer >= 1.5*BDP: Yes; Else: WIP".

Setup here: 100 Mbit/s link (the ASR port's rate is not what limits),
50 ms base RTT (not given), 60 s. The policer and the shaper are the
scenario keys ``link.down.policer = {rate, burst}`` and
``link.down.shaper = {rate, burst}`` (docs/scenario.md) with their default
burst; until the simulator applies those keys (checked by a 3 s probe run), the core's
``policer`` and ``tbf`` qdiscs (the same token buckets: act_police,
sch_tbf) stand in, with a 3000 B burst (the documented default at 2 Mbit/s)
— the report says which form ran. The shaper's queue is 64 packets (96 KB,
Cisco's default queue-limit), i.e. 7.7 BDP at 2 Mbit/s and 50 ms.
"""

from __future__ import annotations

import functools

from ... import scenario as _scenario
from ..check import Claim
from ..spec import Part, Sweep
from . import Experiment
from ._common import dumbbell, mean_at, missing

CIR = "2Mbit"
CIR_MBPS = 2.0
MIXES = {"bbr4": [("bbr", 4)], "cubic4": [("cubic", 4)], "bbr2+cubic2": [("bbr", 2), ("cubic", 2)],
         "bbr4+reno4": [("bbr", 4), ("reno", 4)]}
BOXES = ("policer", "shaper")


@functools.lru_cache(maxsize=None)
def link_keys_available() -> bool:
    """True when the scenario language has ``link.<dir>.policer/shaper`` *and*
    the simulator applies them: a 3 s probe run through a 2 Mbit/s policer
    must carry less than 4 Mbit/s (a key that validates but is ignored would
    otherwise turn this experiment into a 100 Mbit/s one)."""
    if not {"policer", "shaper"} <= set(_scenario.LINK_KEYS):
        return False
    import bloatlab

    for box in BOXES:
        d = dumbbell("probe-keys", "100Mbit", "50ms", "64pkt", [{"name": "c", "cc": "cubic"}], "3s")
        d["link"]["down"][box] = {"rate": CIR}
        try:
            if bloatlab.run(d).summary["total_goodput_mbps"] >= 2 * CIR_MBPS:
                return False
        except Exception:
            return False
    return True


def box_doc(box: str) -> dict:
    """The down link's settings for the box, by the documented keys if the
    scenario language has them, else by the core's qdiscs."""
    if link_keys_available():
        return {"qdisc": "fifo", "buffer": "64pkt", box: {"rate": CIR}}
    if box == "policer":
        return {"qdisc": "policer", "qdisc_params": {"rate": CIR, "burst": "3000B"}, "buffer": "64pkt"}
    return {"qdisc": "tbf", "qdisc_params": {"rate": CIR, "burst": "3000B", "limit": "96KB"}, "buffer": "96KB"}


class JanogPolicerShaper(Experiment):
    name = "janog-policer-shaper"
    title = "BBR, CUBIC and Reno mixes through a 2 Mbit/s policer and a 2 Mbit/s shaper"
    source = "seed 003: JANOG41 (2018), Ishizaki, policer vs shaper tests on a Cisco ASR; IETF 97 BBR FAQ (quoted there)"
    published = """
Seed 003 (JANOG41): policer CIR 2 Mbit/s (exceed-action drop) and shaper CIR 2 Mbit/s (shape peak, target 4 Mbit/s);
mixes BBR x4, CUBIC x4, BBR x2 + CUBIC x2, BBR x4 + Reno x4. Results: graphs only (no numbers in the seed).
IETF 97 BBR FAQ (quoted in seed 003): "Is BBR fair to Cubic/Reno? Buffer >= 1.5*BDP: Yes; Else: WIP".
"""

    def sweep(self, quick: bool) -> Sweep:
        parts = []
        for box in BOXES:
            for mix, groups in MIXES.items():
                flows = [{"name": cc, "cc": cc, "count": n} for cc, n in groups]
                base = dumbbell(f"janog-{box}-{mix}", "100Mbit", "50ms", "64pkt", flows, "30s" if quick else "60s",
                                sample="50ms")
                base["link"]["down"].update(box_doc(box))
                parts.append(Part(f"{box}/{mix}", base, repeat=1 if quick else 3))
        form = "link keys policer/shaper" if link_keys_available() else "core qdiscs policer/tbf (the link keys are not applied by the simulator yet)"
        return Sweep(self.name + ("-quick" if quick else ""), parts,
                     description=f"100 Mbit/s, 50 ms; CIR 2 Mbit/s; box form: {form}.")

    def claims(self, store) -> list:
        runs, cl = store.runs, []
        form = ("the documented link keys" if link_keys_available() else
                "the core's policer/tbf qdiscs (link.down.policer/shaper are not applied by the simulator yet)")
        c = Claim("bbr-fair-to-cubic-deep-shaper-queue",
                  "BBR is fair to CUBIC/Reno when the buffer is >= 1.5 BDP (IETF 97 BBR FAQ, quoted in seed 003)",
                  "through the shaper (queue 7.7 BDP), BBR x2 + CUBIC x2: BBR's share between 35 % and 65 %; "
                  f"box built with {form}")
        v = mean_at(runs, "share_bbr", part="shaper/bbr2+cubic2")
        cl.append(c.skip(missing("shaper/bbr2+cubic2")) if v is None else
                  c.judge(0.35 <= v <= 0.65, f"BBR share {v:.0%}", share=v))
        c = Claim("bbr-fair-to-reno-deep-shaper-queue",
                  "BBR is fair to CUBIC/Reno when the buffer is >= 1.5 BDP (IETF 97 BBR FAQ, quoted in seed 003)",
                  "through the shaper, BBR x4 + Reno x4: BBR's share between 35 % and 65 %")
        v = mean_at(runs, "share_bbr", part="shaper/bbr4+reno4")
        cl.append(c.skip(missing("shaper/bbr4+reno4")) if v is None else
                  c.judge(0.35 <= v <= 0.65, f"BBR share {v:.0%}", share=v))
        for box in BOXES:
            c = Claim(f"{box}-caps-at-cir", f"a {CIR_MBPS:g} Mbit/s CIR {box} passes at most the CIR "
                                            "(physics of a token bucket; not a number from the seed)",
                      f"every mix: total goodput <= {CIR_MBPS:g} Mbit/s x 1448/1500 x 1.05, and >= 50 % of it")
            vals = {m: mean_at(runs, "total_goodput_mbps", part=f"{box}/{m}") for m in MIXES}
            if None in vals.values():
                cl.append(c.skip(missing(f"every {box} mix")))
                continue
            cap = CIR_MBPS * 1448 / 1500
            cl.append(c.judge(all(0.5 * cap <= v <= 1.05 * cap for v in vals.values()),
                              ", ".join(f"{m} {v:.2f} Mbit/s" for m, v in vals.items()), **vals))
        cl.append(Claim("slide-graphs", "per-mix throughput graphs through the policer and the shaper (seed 003)",
                        "compare per-mix goodput and shares with the slides").skip(
            "the seed has these results only as graphs (images), no number to compare; our numbers are in the "
            "report's table"))
        return cl

    def analyze(self, store) -> dict:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        runs = store.runs
        figs = []
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, box in zip(axes, BOXES):
            labels = []
            for i, mix in enumerate(MIXES):
                sel = runs[runs["part"] == f"{box}/{mix}"]
                if sel.empty:
                    continue
                y = 0.0
                for j, cc in enumerate(("bbr", "cubic", "reno")):
                    col = f"goodput_{cc}_mbps"
                    if col in sel and sel[col].notna().any():
                        v = float(sel[col].mean())
                        ax.bar(i, v, bottom=y, color=f"C{j}", label=cc if i == 0 or cc not in labels else None)
                        labels.append(cc)
                        y += v
            ax.set_xticks(range(len(MIXES)), list(MIXES), rotation=20, fontsize=8)
            ax.axhline(CIR_MBPS, color="k", ls=":", lw=1)
            ax.set_title(f"through the {box} (CIR {CIR})", fontsize=10)
            ax.set_ylabel("goodput (Mbit/s)")
            handles, labs = ax.get_legend_handles_labels()
            uniq = dict(zip(labs, handles))
            ax.legend(uniq.values(), uniq.keys(), fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        figs.append(("goodput per congestion control, per mix, policer vs shaper", fig))
        cols = ["part", "total_goodput_mbps", "goodput_bbr_mbps", "goodput_cubic_mbps", "goodput_reno_mbps",
                "share_bbr", "jain_fairness", "retrans_rate", "rtt_p95_ms", "down_drops"]
        tab = runs[[c for c in cols if c in runs]].groupby("part", sort=False).mean().reset_index()
        return {"figures": figs, "tables": [("per mix and box (mean over seeds)", tab)]}


EXPERIMENT = JanogPolicerShaper()
