"""The rate four CUBIC flows get through a WiFi hop down and up, in the model (``bloatlab.run``, seed 1, 15 s).

``python bench/advise/wifi_up_down.py``: the figures behind ``wifi_hop.up_through_the_hop`` (docs/advise.md "The
up direction"): a lone station's hop (legacy / fq / airtime, MCS 2, 7, 12, RTT 10, 60, 250 ms) gives the same rate
each way; beside other stations' downloads it does not; a wired line slower than the hop up holds the up flows below
the down ones. One line per case: down, up (Mbit/s of goodput) and up / down.
"""

from __future__ import annotations

import bloatlab


def rate(mac: str, mcs: int, rtt_ms: float, direction: str, others: tuple[int, int] | None = None,
         up_line_mbps: float | None = None) -> float:
    """Four CUBIC flows' goodput (Mbit/s) through the hop in ``direction``; ``others``: (count, MCS) of stations
    with a backlogged CUBIC download each; ``up_line_mbps``: a wired FIFO (1 BDP) behind the AP at that rate up."""
    doc = {"name": "wifi-up-down", "duration": "15s", "seed": 1,
           "wifi": {"mac": mac, "station": [{"name": "you", "phy_rate": f"mcs{mcs}"}]},
           "flow": [{"cc": "cubic", "count": 4, "rtt": f"{rtt_ms:g}ms", "station": "you", "direction": direction}]}
    if others:
        doc["wifi"]["station"].append({"name": "others", "phy_rate": f"mcs{others[1]}", "count": others[0]})
        doc["flow"].append({"name": "others", "cc": "cubic", "count": others[0], "station": "others",
                            "rtt": f"{rtt_ms:g}ms"})
    if up_line_mbps:
        doc["link"] = {"down": {"rate": "1000Mbit", "qdisc": "fifo", "buffer": "1bdp"},
                       "up": {"rate": f"{up_line_mbps:.6g}Mbit", "qdisc": "fifo", "buffer": "1bdp"}}
    return sum(f["goodput_mbps"] for f in bloatlab.run(doc).summary["flows"][:4])


def main() -> None:
    def line(what: str, dn: float, up: float) -> None:
        print(f"{what:36} down {dn:7.3f} up {up:7.3f} up/down {up / dn:.3f}", flush=True)

    for mac in ("legacy", "fq", "airtime"):
        for mcs in (2, 7, 12):
            for rtt in (10, 60, 250):
                line(f"alone {mac} mcs{mcs} {rtt} ms", rate(mac, mcs, rtt, "down"), rate(mac, mcs, rtt, "up"))
    for mac in ("legacy", "airtime"):
        for o in ((1, 0), (2, 5), (1, 12)):
            for rtt in (20, 100):
                line(f"others {o} {mac} mcs7 {rtt} ms", rate(mac, 7, rtt, "down", o), rate(mac, 7, rtt, "up", o))
    for f in (0.5, 0.9, 0.97):
        line(f"airtime mcs7 60 ms, line up {f} x 45.7", rate("airtime", 7, 60, "down", None, f * 45.7),
             rate("airtime", 7, 60, "up", None, f * 45.7))


if __name__ == "__main__":
    main()
