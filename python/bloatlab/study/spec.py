"""Experiment files: a base scenario, a grid and/or list of overrides, seeds.

```toml
name = "loss-sweep"
base = "scenario.toml"           # a scenario file (relative to this file) ...
repeat = 3                       # seeds per point (seed, seed+1, ...)
start_jitter = "100ms"           # with repeat > 1: flows start up to this much later, drawn from the seed (default 100ms)
seed = 1                         # first seed (default: the base scenario's, else 1)
engine = "sim"                   # default engine (the CLI's --engine wins)
[set]                            # fixed overrides applied to every point
"duration" = "30s"
[grid]                           # cartesian product; keys are --set paths
"link.down.loss" = ["0%", "0.1%", "1%"]
"flow.0.cc" = ["cubic", "bbr"]
[[points]]                       # a list of override sets, crossed with the grid
"link.down.rate" = "10Mbit"
"link.up.rate" = "10Mbit"
[[expect]]                       # transperf's scores every run must reach (study/expect.py)
check = "tput"
min = 80
```

``[scenario]`` (an inline scenario table) may replace ``base``. A sweep has
one or more *parts* (the built-in experiments use several, e.g. the IMC 2019
grid plus its fairness runs); a file describes one part.

Every expanded point is validated before anything runs, so a typo in a key or
a value is an error naming it (exit 2), never a failure in the 300th run.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

from ..errors import ScenarioError, UserError

SPEC_KEYS = {"name", "description", "base", "scenario", "repeat", "seed", "engine", "set", "grid", "points", "start_jitter",
             "expect"}

#: a sweep file's default ``start_jitter`` when it repeats points (``repeat > 1``)
#: and its base scenario sets none: so that the seeds change something real in a
#: deterministic scenario. 100 ms is a few RTTs of a typical path: enough to
#: change which flow's slow start meets the queue first, small against a run.
REPEAT_START_JITTER = "100ms"


@dataclass
class Point:
    """One run of a sweep: a part's base scenario plus ``params`` (path ->
    value) and a seed. ``run_id`` is a hash of all of that, so the same point
    has the same id in every attempt (that is what resume keys on, with
    the build that stored the run: study/build.py)."""

    order: int
    part: str
    params: dict[str, Any]
    seed: int
    rep: int
    run_id: str
    #: the simulator's work the point is expected to cost, known before it runs (:func:`work`; 0 until
    #: :func:`validate` sets it): what a sweep hands out first, never part of the point's identity
    work: float = field(default=0.0, compare=False)


def work(resolved: dict) -> float:
    """What a run of the resolved scenario costs the simulator, in relative units, before it runs: the bits its
    links can carry in the run (rate x duration, summed over the links; a link without a fixed rate, a trace's
    or WiFi's, counts as 1 Gbit/s). The engine's time grows with the packets it moves, so this orders a grid's
    points from the heaviest (imc2019: the 1000-Mbit/s fifth is half of the engine's time) to the lightest."""
    dur = (resolved.get("duration_ns") or 0) / 1e9
    links = (resolved.get("links") or {}).values()
    return dur * sum(float(ln.get("rate_bps") or 1e9) for ln in links if isinstance(ln, dict))


@dataclass
class Part:
    name: str
    base: dict                                   # the scenario document
    grid: dict[str, list] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    fixed: dict[str, Any] = field(default_factory=dict)
    repeat: int = 1
    seed: int = 1
    #: flows' start jitter applied to every point (``None``: the scenario's own)
    start_jitter: str | None = None

    def swept_keys(self) -> list[str]:
        keys = []
        for p in self.points:
            for k in p:
                if k not in keys:
                    keys.append(k)
        for k in self.grid:
            if k not in keys:
                keys.append(k)
        return keys


@dataclass
class Sweep:
    name: str
    parts: list[Part]
    engine: str | None = None
    description: str = ""
    source: str | None = None
    #: ``[[expect]]`` tables: transperf's scores every run must reach (study/expect.py)
    expect: list = field(default_factory=list)

    def swept_keys(self) -> list[str]:
        keys: list[str] = []
        for p in self.parts:
            keys += [k for k in p.swept_keys() if k not in keys]
        return keys

    def points(self, engine: str | None = None) -> list[Point]:
        """Every point of the sweep, run on ``engine`` (default: the sweep file's, else sim)."""
        engine = engine or self.engine or "sim"
        out = []
        for part in self.parts:
            gkeys = list(part.grid)
            combos = list(itertools.product(*[part.grid[k] for k in gkeys])) if gkeys else [()]
            for base_pt in part.points:
                for combo in combos:
                    params = dict(part.fixed)
                    params.update(base_pt)
                    params.update(zip(gkeys, combo))
                    for rep in range(part.repeat):
                        seed = part.seed + rep
                        out.append(Point(len(out), part.name, params, seed, rep,
                                         run_id(part.name, part.base, params, seed, engine)))
        ids = [p.run_id for p in out]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            p = out[ids.index(dup)]
            raise UserError(f"the sweep lists the same point twice ({p.part}: {p.params}, seed {p.seed})")
        return out

    def longest_duration_s(self) -> float:
        """The longest run of any point (s): its ``duration`` override, else
        its part's, else the base scenario's."""
        from ..units import parse_duration

        longest = 0.0
        for part in self.parts:
            for d in {str(p.get("duration", part.fixed.get("duration", part.base.get("duration", "0s"))))
                      for p in part.points + [{}]} | {str(v) for v in part.grid.get("duration", [])}:
                try:
                    longest = max(longest, parse_duration(d) / 1e9)
                except ValueError:
                    pass
        return longest

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description, "engine": self.engine, "source": self.source,
                "parts": [{"name": p.name, "base": p.base, "grid": p.grid, "points": p.points, "set": p.fixed,
                           "repeat": p.repeat, "seed": p.seed} | ({"start_jitter": p.start_jitter} if p.start_jitter else {})
                          for p in self.parts]}


def run_id(part: str, base: dict, params: dict, seed: int, engine: str = "sim") -> str:
    """A stable id: the same base, overrides, seed and engine give the same id.
    (The simulator's ids leave the engine out, as they always did, so stores
    made before the emulator could share one keep their runs.) A point run on
    the emulator into a store that holds it from the simulator is a new run,
    not one to skip."""
    key = {"part": part, "base": base, "params": params, "seed": seed} | ({} if engine == "sim" else {"engine": engine})
    blob = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def _values(key: str, v) -> list:
    if not isinstance(v, list) or not v:
        raise ScenarioError(f"grid.{key}", f"expected a non-empty list of values, got {v!r}")
    return v


def load(path: str) -> Sweep:
    """Read and validate an experiment file (see the module docstring)."""
    from .. import files

    try:
        doc = tomllib.loads(files.read_bytes(path, files.TEXT_LIMIT, "experiment").decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: TOML syntax error: {e}") from None
    return from_doc(doc, os.path.dirname(os.path.abspath(path)), source=path)


def from_doc(doc: dict, base_dir: str = ".", source: str | None = None) -> Sweep:
    from .. import scenario as sc

    for k in doc:
        if k not in SPEC_KEYS:
            raise ScenarioError(k, f"unknown key of an experiment file (known: {', '.join(sorted(SPEC_KEYS))})")
    if ("base" in doc) == ("scenario" in doc):
        raise ScenarioError("base", 'give exactly one of base = "file.toml" or an inline [scenario] table')
    if "base" in doc:
        if not isinstance(doc["base"], str):
            raise ScenarioError("base", f"expected a file name, got {doc['base']!r}")
        bpath = os.path.join(base_dir, doc["base"])
        if not os.path.exists(bpath):
            from ..ready import lookup

            bpath = lookup(doc["base"], key="base")  # a ready scenario's name (bloatlab scenarios), as run takes
        base = copy.deepcopy(sc.load(bpath).doc)
        base.setdefault("name", os.path.splitext(os.path.basename(bpath))[0])
    else:
        if not isinstance(doc["scenario"], dict):
            raise ScenarioError("scenario", "expected a table")
        base = copy.deepcopy(doc["scenario"])
    name = doc.get("name") or (os.path.splitext(os.path.basename(source))[0] if source else base.get("name", "sweep"))
    if not isinstance(name, str):
        raise ScenarioError("name", f"expected a string, got {name!r}")
    repeat = doc.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ScenarioError("repeat", f"expected a whole number >= 1, got {repeat!r}")
    seed = doc.get("seed", base.get("seed", 1))
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScenarioError("seed", f"expected a whole number >= 0, got {seed!r}")
    engine = doc.get("engine")
    if engine is not None and engine not in ("sim", "emu"):
        raise ScenarioError("engine", f'unknown engine "{engine}" (expected sim or emu)')
    fixed = doc.get("set", {})
    if not isinstance(fixed, dict):
        raise ScenarioError("set", "expected a table of KEY = value")
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise ScenarioError("grid", "expected a table of KEY = [values]")
    grid = {k: _values(k, v) for k, v in grid.items()}
    points = doc.get("points", [{}])
    if not isinstance(points, list) or not points or not all(isinstance(p, dict) for p in points):
        raise ScenarioError("points", "expected [[points]] tables of KEY = value")
    for where, keys in (("grid", grid), ("set", fixed)):
        if "seed" in keys:
            raise ScenarioError(f"{where}.seed", "seeds come from repeat/seed, not from the grid")
    jitter = doc.get("start_jitter")
    if jitter is not None and not isinstance(jitter, str):
        raise ScenarioError("start_jitter", f'expected a duration like "100ms", got {jitter!r}')
    if jitter is None and repeat > 1 and "start_jitter" not in base and "start_jitter" not in fixed:
        jitter = REPEAT_START_JITTER
    part = Part(name="main", base=base, grid=grid, points=points, fixed=fixed, repeat=repeat, seed=seed, start_jitter=jitter)
    from .expect import parse as parse_expect

    sw = Sweep(name=name, parts=[part], engine=engine, description=str(doc.get("description", "")), source=source,
               expect=_merged(parse_expect(doc.get("expect", [])), parse_expect(base.get("expect", []))))
    validate(sw)
    return sw


def _merged(*lists: list) -> list:
    """The experiment file's ``[[expect]]`` tables, then its base scenario's that it does not repeat."""
    out: list = []
    for items in lists:
        out += [e for e in items if e not in out]
    return out


def validate(sw: Sweep, points: list[Point] | None = None, engine: str | None = None) -> list[Point]:
    """Expand and validate every point (key paths and values) to run on
    ``engine``, and set each one's :attr:`Point.work`; the error names the key and the point."""
    from .. import scenario as sc

    pts = sw.points(engine) if points is None else points
    bases = {p.name: p.base for p in sw.parts}
    grids = {p.name: p for p in sw.parts}
    seen: dict[str, float] = {}  # signature -> work
    for pt in pts:
        # Points of one part share keys; checking each distinct value once is enough.
        sig = json.dumps([pt.part, pt.params], sort_keys=True, default=str)
        if sig in seen:
            pt.work = seen[sig]
            continue
        try:
            sets = dict(pt.params)
            if grids[pt.part].start_jitter and "start_jitter" not in sets:
                sets["start_jitter"] = grids[pt.part].start_jitter
            pt.work = seen[sig] = work(sc.load(bases[pt.part], set=sets).resolved())
        except ScenarioError as e:
            part = grids[pt.part]
            key = e.key.replace("set ", "")
            where = "grid" if key in part.grid else ("set" if key in part.fixed else "points")
            raise ScenarioError(f"{where}.{key}" if key else where,
                                f"{e.message} (point {pt.params})") from None
    return pts
