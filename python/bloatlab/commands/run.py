"""``bloatlab run FILE``: run one scenario on one engine."""

from __future__ import annotations

import sys


def _scenario_arg(text: str) -> str:
    from ..ready import lookup

    return lookup(text)


def add_scenario_args(p) -> None:
    p.add_argument("scenario", metavar="FILE", type=_scenario_arg,
                   help="scenario TOML file (docs/scenario.md), or the name of a ready one (bloatlab scenarios)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help='override a scenario key, e.g. --set link.down.loss=5%% --set flow.0.cc=cubic')
    p.add_argument("--seed", type=int, help="shorthand for --set seed=N")


def overrides_of(args) -> list[str]:
    o = list(args.overrides)
    if args.seed is not None:
        o.append(f"seed={args.seed}")
    return o


def register(sub) -> None:
    p = sub.add_parser("run", help="run a scenario", description="Run a scenario and print its summary.")
    add_scenario_args(p)
    p.add_argument("--engine", choices=["sim", "emu"], default="sim",
                   help="sim: bloatlab's TCP model in virtual time; emu: the kernel's TCP through the emulated link")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.add_argument("--out", metavar="DIR", help="also write summary.json and the time series (Parquet) into DIR")
    p.add_argument("--force", action="store_true", help="--out may replace the run already in DIR")
    p.add_argument("--pcap", metavar="DIR",
                   help="also write DIR/down.pcap and DIR/up.pcap: each packet's headers as it enters the link, "
                        "dropped ones included (both engines, the same addresses and ports; tcpdump -r, Wireshark)")
    p.set_defaults(func=main)


def check_out(out: str, force: bool = False) -> None:
    """``--out`` must be a new directory, or with ``force`` a run's own: never
    a file, never a sweep's results store (its root would get a stray
    summary.json), never a run already there without ``--force`` (as sweep
    refuses a store of another sweep). Checked before the run, and the
    directory made and proven writable, so a run is not lost to a path that
    cannot take its results."""
    import os
    import tempfile

    from ..errors import UserError

    if os.path.islink(out) and not os.path.exists(out):
        raise UserError(f"--out {out}: a symbolic link to nothing (or a loop of links)")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError(f"--out {out}: exists and is not a directory")
    if os.path.isdir(out) and any(os.path.exists(os.path.join(out, f)) for f in ("study.json", "index.parquet", "runs")):
        raise UserError(f"--out {out}: is a results store of a sweep; give a directory of its own to this run")
    if os.path.isdir(out) and os.path.exists(os.path.join(out, "summary.json")) and not force:
        raise UserError(f"--out {out}: holds a run already; add --force to replace it, or choose another directory")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise UserError(f"--out {out}: the directory {parent} does not exist")
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-"):
            pass
    except OSError as e:
        raise UserError(f"--out {out}: cannot write there ({e.strerror})") from None


#: what an emulator run takes beyond its scenario's duration: namespaces, devices, the generators' start and
#: their reports (2-4 s measured on this machine; the estimate a progress line shows)
EMU_SETUP_S = 3.0


def main(args) -> int:
    import bloatlab

    if args.out:
        check_out(args.out, args.force)
    if args.engine == "emu":  # real time: tens of seconds, said as it goes (bloatlab.progress)
        from ..progress import Long

        sc = bloatlab.load_scenario(args.scenario, overrides_of(args))
        secs = sc.resolved()["duration_ns"] / 1e9
        with Long(f"running {sc.name} on the kernel's TCP through the emulator", secs + EMU_SETUP_S):
            res = bloatlab.run(sc, engine=args.engine, pcap=args.pcap)
    else:
        # without --out nothing reads the flows' time series (the summary is built from per-flow totals)
        res = bloatlab._run(args.scenario, args.engine, overrides_of(args), args.pcap, {}, flow_series=bool(args.out))
    if args.out:
        res.save(args.out)
    judged = _expectations(res)
    if args.json:
        from ..jsontext import indented

        out = res.summary if judged is None else dict(res.summary, expect=judged)
        text = indented(out, default=str)
        buf = getattr(sys.stdout, "buffer", None)  # one write of the bytes, after anything printed before
        if buf is None:
            sys.stdout.write(text.decode())
        else:
            sys.stdout.flush()
            buf.write(text)
            buf.flush()
    else:
        print_summary(res.summary)
        if judged is not None:
            print_expectations(judged)
        if args.out:
            print(f"results written to {args.out}/")
    return 1 if judged and any(j["holds"] is False for j in judged) else 0


def _expectations(res) -> list[dict] | None:
    """The scenario's ``[[expect]]`` tables judged on this run (transperf's scores), or None without any."""
    tables = res.summary["scenario"].get("expect")
    if not tables:
        return None
    from ..study.expect import judge_run, parse

    return judge_run(res, parse(tables))


def print_expectations(judged: list[dict]) -> None:
    """One line per expectation: the score, its threshold and the verdict (exit status 1 when one misses)."""
    for j in judged:
        verdict = "not scored" if j["holds"] is None else ("holds" if j["holds"] else "MISSES")
        score = "" if j["score"] is None else f" {j['score']:.1f}"
        print(f"expect {j['check']} >= {j['min']:g}:{score} {verdict} ({j['detail']})")


def _f(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)


def print_summary(s: dict) -> None:
    name = s["scenario"].get("name", "")
    print(f"{name}  engine={s['engine']}  seed={s['seed']}  duration={s['duration_s']:g}s")
    from ._table import print_table

    # a page's objects are summarized as the page (below), not one line each
    # units in the headers, numbers alone in the cells (so a table fits 80 columns)
    print_table(["flow", "cc", "dir"] + [(c, "right") for c in ("base rtt ms", "goodput Mbit/s", "retx segs", "retx %",
                                                                 "rtt p50 ms", "rtt p95 ms", "fct s")],
                [(f["name"], f["cc"], f["direction"], f"{f['rtt_base_ms']:.3g}", f"{f['goodput_mbps']:.2f}",
                  f["retransmits"], f"{100 * f['retrans_rate']:.2f}", _f(f["rtt_ms"]["p50"]), _f(f["rtt_ms"]["p95"]),
                  _f(f["fct_s"], "{:.2f}")) for f in s["flows"] if f.get("page") is None])
    for d, l in s["links"].items():
        q = l["qdelay_ms"]
        path = " -> ".join(l.get("stages") or [f"{l['qdisc']}", f"wire {l['rate_mbps']:g} Mbit/s"])
        print(f"link {d:<4} {path}")
        print(f"          utilization {100 * l['utilization']:.1f}%  "
              f"drops {l['drops']}  qdelay ms mean {_f(q['mean'])} p95 {_f(q['p95'])} p99 {_f(q['p99'])}")
        if l.get("autorate"):
            a = l["autorate"]
            print(f"          autorate shaper Mbit/s p10 {a['rate_p10_mbps']:.2f} median {a['rate_median_mbps']:.2f} "
                  f"p90 {a['rate_p90_mbps']:.2f} min {a['rate_min_mbps']:.2f}  changes {a['changes']}")
    for st in s.get("stations", []):
        q = st["qdelay_ms"]
        print(f"station {st['name'][:12]:<12} {st['phy_rate_mbps']:>6.1f} Mbit/s PHY: goodput {st['goodput_mbps']:>7.2f} Mb/s  "
              f"airtime {100 * st['airtime_share']:5.1f}%  aggregate {_f(st['aggregate_frames_down'])} frames  "
              f"retries {st['retries']}  AP qdelay ms p50 {_f(q['p50'])} p95 {_f(q['p95'])}")
    if "stations" in s:
        print(f"wifi mac={s['wifi']['mac']}{'+aql' if s['wifi'].get('aql') else ''}: jain over station goodput {_f(s['jain_station_goodput'], '{:.3f}')}, "
              f"over airtime {_f(s['jain_station_airtime'], '{:.3f}')}; medium busy {100 * s['wifi']['busy_fraction']:.1f}%, "
              f"{s['wifi']['collisions']} collisions in {s['wifi']['txops']} TXOPs")
    for pg in s.get("pages", []):
        plt = f"loaded in {pg['plt_s']:.2f} s" if pg["completed"] else f"not loaded: {pg['objects_done']} of {pg['objects']} objects by the end"
        print(f"page {pg['name']}: {pg['objects']} objects, {pg['bytes'] / 1e6:.3g} MB over {pg['connections']} "
              f"connection{'s' if pg['connections'] > 1 else ''}: {plt}")
    for p in s["probes"]:
        r = p["rtt_ms"]
        loss = "-" if p["loss"] is None else f"{100 * p['loss']:.1f}%"
        print(f"probe {p['name']}: rtt ms p50 {_f(r['p50'])} p95 {_f(r['p95'])} p99 {_f(r['p99'])}  loss {loss}")
    for t in s.get("trains", []):
        d = t["delay_ms"]
        pace = f"at {t['rate_mbps']:.4g} Mbit/s" if t["rate_mbps"] else "back to back"
        loss = "-" if t["loss"] is None else f"{100 * t['loss']:.1f}%"
        disp = "" if t["dispersion_mbps"] is None else f" at {t['dispersion_mbps']:.4g} Mbit/s"
        print(f"train {t['name']}: {t['sent']} x {t['size_bytes']} B {t['direction']}, {pace} at {t['start_s']:g} s; "
              f"{t['received']} arrived{disp}")
        print(f"          one-way delay ms p50 {_f(d['p50'])} p95 {_f(d['p95'])} max {_f(d['max'])}  loss {loss}")
    by = s.get("jain_fairness_by_direction") or {"down": s["jain_fairness"], "up": None}
    fair = "  ".join(f"jain fairness {d} {_f(v, '{:.3f}')}" for d, v in by.items() if v is not None) or "jain fairness -"
    print(f"total goodput {s['total_goodput_mbps']:.2f} Mbit/s  {fair}")
