"""Dump the simulator's summary (and a digest of its time series) for every
scenario in scenarios/ (a WiFi one with each MAC design), for a seed, so
that a refactor can be shown not to change results.

    python scripts/sim_summaries.py dump before.json        # on the old code
    python scripts/sim_summaries.py compare before.json     # on the new code: exit 1 on any difference

Wall-clock fields (meta.wall_s) and the package version are left out: they
are not results. The series digest covers every column of flows/links/probes.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _strip(summary: dict) -> dict:
    s = dict(summary)
    s.pop("version", None)
    s["meta"] = {k: v for k, v in s.get("meta", {}).items() if k not in ("wall_s", "engine_version")}
    return s


def dump(seed: int = 1) -> dict:
    import bloatlab

    out = {}
    runs = []
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        name = str(path.relative_to(ROOT))
        runs.append((name, path, {}))
        if "[wifi]" in path.read_text():  # every MAC design of a WiFi scenario
            runs += [(f"{name} wifi.mac={m}", path, {"wifi.mac": m}) for m in ("legacy", "fq", "airtime")]
    for name, path, sets in runs:
        r = bloatlab.run(str(path), set=dict(sets, seed=seed))
        h = hashlib.sha256()
        for table in ("flows", "links", "probes"):
            df = r._frame(table)
            h.update(table.encode())
            h.update(df.to_csv(index=False).encode())
        out[name] = {"summary": _strip(r.summary), "series_sha256": h.hexdigest()}
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("dump", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    now = dump()
    if argv[0] == "dump":
        pathlib.Path(argv[1]).write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"{len(now)} scenarios dumped to {argv[1]}")
        return 0
    before = json.loads(pathlib.Path(argv[1]).read_text())
    bad = 0
    for k in sorted(set(before) | set(now)):
        b, n = before.get(k), json.loads(json.dumps(now.get(k)))
        if b is None or n is None:
            print(f"{k}: only {'before' if n is None else 'after'}")
            bad += 1
        elif b["summary"] != n["summary"]:
            print(f"{k}: summary differs")
            bad += 1
        elif b["series_sha256"] != n["series_sha256"]:
            print(f"{k}: series differ (summary identical)")
            bad += 1
        else:
            print(f"{k}: identical")
    print(f"{len(now)} scenarios, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
