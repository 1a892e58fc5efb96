"""The results store: one directory per sweep (or per reproduced experiment).

Layout (docs/studies.md)::

    DIR/study.json            the sweep: name, parts, base scenarios, grid (what was asked)
    DIR/runs/run_id=<id>/     one finished run (a Hive partition: key=value):
        summary.json          the run's summary (docs/results.md)
        flows.parquet ...     its time series (flows, links, probes)
        run.json              its parameters and its flattened row (the index entry)
    DIR/index.parquet         the runs table (rebuilt from runs/*/run.json; a cache)
    DIR/.lock                 held by the one sweep writing to DIR

The run directories are Hive partitions, so ``runs/*/flows.parquet`` read
with Hive partitioning (DuckDB ``hive_partitioning``, pyarrow
``partitioning="hive"``) carries a ``run_id`` column without anyone parsing
file names. Stores written before this layout (``runs/<id>/``) are read as
they are, and moved to it (one atomic rename per run) by the next sweep or
import that takes their lock (:func:`migrate`).

A run directory is built aside (``runs/.tmp-<id>-<pid>``) and renamed into
place when complete; ``rename`` is atomic, so a run either is in the store
whole or is not there at all — an interrupted sweep never leaves a
half-written result that a reader or a resumed sweep would take for a run.

``runs`` has one row per run: ``run_id``, ``part``, ``engine``, ``seed``,
``rep``, ``build`` (the build that made the run, study/build.py; null for a
run stored before runs recorded it, or imported), one column per swept key
named by its path (``link.down.loss``), and the summary's metrics (see
:func:`flatten`). ``flows`` has one row per flow of every run.

A resumed sweep re-runs a point whose stored run another build made, and
the new run replaces the old one only once it is whole (:func:`_swap_in`);
a point has one run in the store, as a point has one ``run_id``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from typing import Any, Iterable, NamedTuple

from .. import atomic, files, result
from ..errors import UserError

RUNS = "runs"
#: the Hive partition key of a run directory: runs/run_id=<id>/
PARTITION = "run_id="
STUDY = "study.json"
INDEX = "index.parquet"
INDEX_FLOWS = "index_flows.parquet"


# ---------------------------------------------------------------- flattening


def _num(v):
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def flatten(summary: dict) -> dict[str, Any]:
    """The metrics of one run as a flat dict (the runs table's metric columns).

    Flow metrics over several flows: goodput and retransmissions are sums;
    RTT percentiles are the mean over flows of each flow's percentile;
    ``fct_s`` is the longest completion time of the sized flows.
    Per congestion control: ``goodput_<cc>_mbps`` and ``share_<cc>`` (its
    share of the total goodput); with data both ways also ``<d>_share_<cc>``,
    its share of direction ``d``'s goodput. Per link direction ``d``: ``d_utilization``,
    ``d_drops``, ``d_qdelay_{mean,p50,p95,p99,max}_ms``. The first probe:
    ``probe_rtt_{mean,p50,p95,p99,max}_ms`` and ``probe_loss``. The first
    page: ``plt_s`` (its load time; null if it did not load).
    """
    flows = summary.get("flows", [])
    total = summary.get("total_goodput_mbps") or 0.0
    row: dict[str, Any] = {
        "n_flows": len(flows),
        "duration_s": summary.get("duration_s"),
        "total_goodput_mbps": total,
        "jain_fairness": _num(summary.get("jain_fairness")),
        "retransmits": sum(f.get("retransmits", 0) for f in flows),
        "segs_sent": sum(f.get("segs_sent", 0) for f in flows),
    }
    row["retrans_rate"] = row["retransmits"] / row["segs_sent"] if row["segs_sent"] else 0.0
    for k in ("mean", "p50", "p95", "p99"):
        row[f"rtt_{k}_ms"] = _mean([(f.get("rtt_ms") or {}).get(k) for f in flows])
    sized = [f for f, s in zip(flows, _sizes(summary)) if s is not None]
    fcts = [f.get("fct_s") for f in sized]
    row["fct_s"] = max(fcts) if sized and None not in fcts else None
    row["completed"] = all(f.get("completed") for f in sized) if sized else None
    by_cc: dict[str, float] = {}
    for f in (f for f in flows if f.get("page") is None):  # shares of the bulk flows, as total_goodput_mbps
        by_cc[f.get("cc", "?")] = by_cc.get(f.get("cc", "?"), 0.0) + (f.get("goodput_mbps") or 0.0)
    for cc, g in sorted(by_cc.items()):
        row[f"goodput_{cc}_mbps"] = g
        row[f"share_{cc}"] = g / total if total > 0 else None
    bulk = [f for f in flows if f.get("page") is None]
    dirs = sorted({f.get("direction", "down") for f in bulk})
    if len(dirs) > 1:  # data both ways: each direction's shares too (a share of both directions mixes two links)
        for d in dirs:
            in_d = [f for f in bulk if f.get("direction", "down") == d]
            tot_d = sum(f.get("goodput_mbps") or 0.0 for f in in_d)
            for cc in sorted({f.get("cc", "?") for f in in_d}):
                g = sum(f.get("goodput_mbps") or 0.0 for f in in_d if f.get("cc", "?") == cc)
                row[f"{d}_share_{cc}"] = g / tot_d if tot_d > 0 else None
    for d, l in (summary.get("links") or {}).items():
        row[f"{d}_qdisc"] = l.get("qdisc")
        row[f"{d}_rate_mbps"] = l.get("rate_mbps")
        row[f"{d}_utilization"] = l.get("utilization")
        row[f"{d}_drops"] = l.get("drops")
        for k, v in (l.get("qdelay_ms") or {}).items():
            row[f"{d}_qdelay_{k}_ms"] = _num(v)
    late = (summary.get("meta") or {}).get("lateness") or {}
    if late:  # the emulator's timing quality (docs/emulator.md): a flagged run is less accurate than configured
        row["late_p99_us"] = _num(late.get("p99_us"))
        row["timing_flagged"] = bool(late.get("flagged", False))
        row["timing_reasons"] = ",".join(late.get("reasons") or (["p99"] if row["timing_flagged"] else []))
        row["stall_max_ms"] = _num((late.get("stalls") or {}).get("max_ms"))
    for i, pg in enumerate(summary.get("pages") or []):
        row["plt_s" if i == 0 else f"page{i}_plt_s"] = _num(pg.get("plt_s"))
    for i, p in enumerate(summary.get("probes") or []):
        pre = "probe" if i == 0 else f"probe{i}"
        for k, v in (p.get("rtt_ms") or {}).items():
            row[f"{pre}_rtt_{k}_ms"] = _num(v)
        row[f"{pre}_loss"] = _num(p.get("loss"))
    return row


def _sizes(summary: dict) -> list:
    """The ``size`` of each (count-expanded) flow, from the scenario document;
    None for a bulk flow. Expansion follows scenario.resolve: group by group."""
    out = []
    for f in (summary.get("scenario") or {}).get("flow", []) or []:
        out += [f.get("size")] * int(f.get("count", 1) or 1)
    n = len(summary.get("flows", []))
    return (out + [None] * n)[:n]


def flow_rows(summary: dict) -> list[dict]:
    out = []
    for f in summary.get("flows", []):
        r = {k: f.get(k) for k in ("id", "name", "cc", "direction", "rtt_base_ms", "goodput_mbps", "bytes_delivered",
                                   "retransmits", "segs_sent", "retrans_rate", "fct_s", "completed", "start_s", "end_s")}
        for k, v in (f.get("rtt_ms") or {}).items():
            r[f"rtt_{k}_ms"] = _num(v)
        out.append(r)
    return out


# ---------------------------------------------------------------- writing


def init(out_dir: str, sweep_json: dict, other: str = "replace") -> None:
    """Create DIR (or reuse it) and record the sweep.

    A store that holds another sweep (another name, or the same name with
    other parts/grid) is handled by ``other``: ``"replace"`` (reproduce: the
    same name may come back with another grid, e.g. --quick; its old runs stay
    on disk but the store shows the current sweep's), ``"refuse"`` (sweep
    without --append: an error that says what DIR holds) or ``"append"``
    (the new sweep's runs are added beside the old ones and the store shows
    all of them; each run's ``experiment`` column says which sweep made it)."""
    os.makedirs(os.path.join(out_dir, RUNS), exist_ok=True)
    old = read_study(out_dir)
    if old is not None:
        same = old.get("name") == sweep_json.get("name") and old.get("parts") == sweep_json.get("parts")
        if not same and other == "append":
            parts = list(old.get("parts", [])) + [q for q in sweep_json.get("parts", [])
                                                 if q not in old.get("parts", [])]
            names = [n for n in (old.get("name"), sweep_json.get("name")) if n]
            ids = old.get("run_ids")
            run_ids = None if ids is None else list(dict.fromkeys(list(ids) + list(sweep_json.get("run_ids", []))))
            history = list(old.get("history", [])) + [{k: v for k, v in old.items() if k != "history"}]
            sweep_json = dict(sweep_json, name=" + ".join(dict.fromkeys(" + ".join(names).split(" + "))),
                              parts=parts, run_ids=run_ids, history=history)
        elif not same and (other == "refuse" or old.get("name") != sweep_json.get("name")):
            n = len(done_ids(out_dir))
            what = "another grid of " if old.get("name") == sweep_json.get("name") else ""
            raise UserError(f"--out {out_dir}: holds {n} runs of {what}\"{old.get('name')}\", not of this sweep "
                            f"\"{sweep_json.get('name')}\"; " + ("add --append to keep them and add this sweep's runs "
                            "beside them, or choose another directory" if other == "refuse" else
                            "choose another directory"))
        sweep_json = dict(sweep_json, created=old.get("created"))
    sweep_json.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    sweep_json["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_study(out_dir, {k: v for k, v in sweep_json.items() if k != "digest"})


#: absolute paths of the store locks this process holds: a forked worker
#: closes its inherited descriptors of them (:func:`drop_inherited_locks`)
LOCK_PATHS: set[str] = set()


class Lock:
    """An exclusive lock on DIR/.lock (``filelock``, flock(2) underneath): one
    sweep writes to a store at a time; a second one is refused at once.
    flock holds while any descriptor of the open file is open, and forked
    workers inherit it: they call :func:`drop_inherited_locks` first thing, so
    that no worker can keep a store locked after its sweep is gone."""

    def __init__(self, out_dir: str):
        from filelock import FileLock

        self.path = os.path.join(out_dir, ".lock")
        self._lock = FileLock(self.path, timeout=0)

    def __enter__(self):
        from filelock import Timeout

        try:
            self._lock.acquire()
        except Timeout:
            raise UserError(f"another sweep is writing to {os.path.dirname(self.path)} (it holds {self.path})") from None
        LOCK_PATHS.add(os.path.abspath(self.path))
        return self

    def __exit__(self, *exc):
        LOCK_PATHS.discard(os.path.abspath(self.path))
        self._lock.release()


def drop_inherited_locks() -> None:
    """In a forked worker: close the descriptors of the store locks its parent
    holds (found by path in /proc/self/fd; only the parent releases them)."""
    if not LOCK_PATHS:
        return
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") in LOCK_PATHS:
                os.close(int(name))
        except OSError:
            pass


def run_dir(out_dir: str, run_id: str) -> str:
    """The directory of run ``run_id``: where it is (a store of the earlier
    layout, runs/<id>/, not yet migrated), else where it goes (runs/run_id=<id>/)."""
    legacy = os.path.join(out_dir, RUNS, run_id)
    if not run_id.startswith(PARTITION) and os.path.isdir(legacy):
        return legacy
    return os.path.join(out_dir, RUNS, PARTITION + run_id)


def run_dirs(out_dir: str) -> dict[str, str]:
    """Every run directory of the store (finished or not) by run id: the value
    of its Hive partition (``run_id=<id>``), or for the earlier layout the name."""
    runs = os.path.join(out_dir, RUNS)
    out: dict[str, str] = {}
    for d in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
        p = os.path.join(runs, d)
        if d.startswith(".") or not os.path.isdir(p):
            continue
        rid = d[len(PARTITION):] if d.startswith(PARTITION) else d
        if d.startswith(PARTITION) or rid not in out:
            out[rid] = p
    return out


def migrate(out_dir: str) -> int:
    """Move the run directories of the earlier layout (runs/<id>/) to the Hive
    layout (runs/run_id=<id>/), one atomic rename each (call with the lock
    held). A run present in both keeps the Hive one. Returns how many moved."""
    runs = os.path.join(out_dir, RUNS)
    n = 0
    for d in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
        p = os.path.join(runs, d)
        if d.startswith((".", PARTITION)) or not os.path.isdir(p):
            continue
        try:
            os.rename(p, os.path.join(runs, PARTITION + d))
            n += 1
        except OSError:  # the Hive one exists already (a non-empty directory): it is the run
            pass
    if n:
        atomic.fsync_dir(runs)
    return n


def clean_partial(out_dir: str) -> int:
    """Remove run directories that a killed sweep left half-built, and the
    token files of its Dask executor; put back a stored run that a killed
    sweep had moved aside to replace it (:func:`_swap_in`) unless its
    replacement is in place (call with the lock held). Returns how many
    half-built run directories there were."""
    runs = os.path.join(out_dir, RUNS)
    n = 0
    for d in os.listdir(runs) if os.path.isdir(runs) else []:
        if d.startswith(ASIDE):  # a stored run moved aside for its replacement (_swap_in)
            back = os.path.join(runs, d[len(ASIDE) + 13:])
            if os.path.exists(os.path.join(back, "run.json")):  # the replacement is in place: the old one goes
                shutil.rmtree(os.path.join(runs, d), ignore_errors=True)
            else:  # stopped between the renames: the old run comes back
                try:
                    os.rename(os.path.join(runs, d), back)
                except OSError:
                    pass
        elif d.startswith(".tmp-"):
            shutil.rmtree(os.path.join(runs, d), ignore_errors=True)
            n += 1
        elif d.startswith(".dask-"):
            try:
                os.unlink(os.path.join(runs, d))
            except OSError:
                pass
    return n


def done_ids(out_dir: str) -> set[str]:
    """Ids of the runs that are in the store: a directory with its run.json
    (written last, so present only when the run was stored whole)."""
    return {rid for rid, d in run_dirs(out_dir).items() if os.path.exists(os.path.join(d, "run.json"))}


class Stored(NamedTuple):
    """What a resume needs of a whole stored run: the build that made it
    (run.json's ``row.build``, study/build.py; None for a run stored before
    runs recorded it, or imported) and that build's parts (run.json's ``build``)."""

    build: str | None
    parts: dict | None


def check_runs(out_dir: str) -> tuple[dict[str, Stored], dict[str, str]]:
    """Every run directory of the store checked whole: (each whole run's
    :class:`Stored` by id, the damaged runs each with what is wrong). Damaged:
    files changed after they were stored (a truncated or edited
    run.json/summary.json, a missing or unreadable Parquet footer), and run
    directories without run.json (never taken for finished)."""
    import pyarrow.parquet as pq

    from ..result import SERIES, read_json

    whole: dict[str, Stored] = {}
    bad: dict[str, str] = {}
    for rid, d in run_dirs(out_dir).items():
        try:
            if not os.path.exists(os.path.join(d, "run.json")):
                raise UserError(f"{os.path.join(d, 'run.json')}: missing (the run was never stored whole)")
            doc = read_json(os.path.join(d, "run.json"))
            if not isinstance(doc, dict) or doc.get("run_id") != rid or not isinstance(doc.get("row"), dict):
                raise UserError(f"{os.path.join(d, 'run.json')}: not this run's index entry")
            verify_doc(os.path.join(d, "run.json"), doc)
            for name in STORED_FILES:
                verify_file(d, doc, name)
            read_json(os.path.join(d, "summary.json"))
            for name in SERIES:
                p = os.path.join(d, f"{name}.parquet")
                if os.path.exists(p):
                    try:
                        pq.read_metadata(p)
                    except Exception as e:  # pyarrow raises several kinds for a damaged file
                        raise UserError(f"{p}: damaged Parquet ({str(e).splitlines()[0][:120]})") from None
            b, parts = doc["row"].get("build"), doc.get("build")
            whole[rid] = Stored(b if isinstance(b, str) and b else None, parts if isinstance(parts, dict) else None)
        except UserError as e:
            bad[rid] = str(e)
    return whole, bad


def damaged(out_dir: str) -> dict[str, str]:
    """The damaged runs of the store, each with what is wrong (:func:`check_runs`)."""
    return check_runs(out_dir)[1]


def remove_damaged(out_dir: str) -> tuple[dict[str, Stored], dict[str, str]]:
    """Move damaged runs out of the way (call with the lock held) so that a
    resumed sweep computes them again; returns (each whole run's
    :class:`Stored` by id, the damaged ones with their reasons): one reading
    of the store serves the resume's every question (which runs are there,
    which build made each)."""
    whole, bad = check_runs(out_dir)
    dirs = run_dirs(out_dir)
    for rid in bad:
        shutil.rmtree(dirs[rid], ignore_errors=True)
    return whole, bad


def staging_dir(out_dir: str, run_id: str) -> str:
    """A directory aside in the store (removed by :func:`clean_partial` if
    left behind) where a worker writes one run's files for :func:`write_run`."""
    import uuid

    return os.path.join(out_dir, RUNS, f".tmp-{run_id}-{uuid.uuid4().hex[:12]}")


def write_run(out_dir: str, run_id: str, info: dict, summary: dict, series: dict | None = None,
              staged: str | None = None, build=None, replace: bool = False) -> str:
    """Store one finished run atomically (built aside, then renamed). The
    files come from ``summary`` and ``series`` (a Result's tables), or were
    written already by the worker into ``staged`` (:func:`staging_dir`; its
    summary.json is ``summary``). ``build`` (a study.build.Build: the build
    that made the run) goes into the ``build`` column and, part by part, into
    run.json's ``build``. A run already stored under ``run_id`` is kept (the
    first attempt wins) unless ``replace`` (a run of another build, run
    again): then the new run takes its place only once it is whole
    (:func:`_swap_in`)."""
    from ..result import Result

    final = os.path.join(out_dir, RUNS, PARTITION + run_id)
    if staged is not None:
        tmp = staged
    else:
        tmp = os.path.join(out_dir, RUNS, f".tmp-{run_id}-{os.getpid()}")
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        Result(summary, series or {}).save(tmp)
    if build is not None:
        info = dict(info, build=build.id)
    row = dict(info)
    row.update(flatten(summary))
    row["wall_s"] = (summary.get("meta") or {}).get("wall_s")
    doc = {"run_id": run_id, "info": info, "row": row, "flows": flow_rows(summary)}
    if build is not None:
        doc["build"] = dict(build.parts)
    # JSON's round trip first (NaN -> null, numpy -> Python), so that the digest
    # is of what a reader will parse
    doc = json.loads(json.dumps(doc, default=_json_default, allow_nan=False))
    doc["files"] = {n: _sha256(os.path.join(tmp, n)) for n in sorted(os.listdir(tmp)) if n in STORED_FILES}
    doc["digest"] = _doc_digest(doc)
    _write_json_atomic(os.path.join(tmp, "run.json"), doc)
    if replace and os.path.isdir(final):
        _swap_in(tmp, final)
        return final
    try:
        os.rename(tmp, final)
    except OSError:
        # Already there (the same point stored by an earlier attempt): keep the first.
        shutil.rmtree(tmp, ignore_errors=True)
    return final


#: the prefix of a stored run moved aside while a new run of the same point takes its place (:func:`_swap_in`)
ASIDE = ".old-"


def _swap_in(tmp: str, final: str) -> None:
    """Put the whole run ``tmp`` in place of the stored run ``final``: the old
    one is renamed aside (``runs/.old-<random>-run_id=<id>``), the new one
    renamed into place, then the old one removed. Each step is an atomic
    rename, so at every instant the point's run is whole somewhere; a crash
    between the renames leaves the old run aside, and the next sweep puts it
    back (:func:`clean_partial`). Nothing stored is lost before its
    replacement is."""
    import uuid

    runs = os.path.dirname(final)
    aside = os.path.join(runs, f"{ASIDE}{uuid.uuid4().hex[:12]}-{os.path.basename(final)}")
    os.rename(final, aside)
    try:
        os.rename(tmp, final)
    except OSError:
        os.rename(aside, final)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    atomic.fsync_dir(runs)
    shutil.rmtree(aside, ignore_errors=True)


#: the files of a stored run that run.json's checksums cover: its summary and one Parquet per series
STORED_FILES = result.RUN_FILES


_sha256 = files.sha256_file
_doc_digest = files.doc_digest
#: what a damaged run's error adds
DAMAGED_HINT = "bloatlab store check DIR lists damaged runs, a resumed sweep re-runs them"
#: what a damaged study.json's error adds
STUDY_HINT = ("the sweep's record is damaged: re-run the sweep into a new directory, or restore study.json "
              "(bloatlab store check DIR says which runs are whole)")


def verify_doc(path: str, doc) -> None:
    """A run.json's own checksum (runs stored before checksums have none and
    are read as they are)."""
    files.verify_digest(path, doc, DAMAGED_HINT)


def verify_file(run_dir: str, doc: dict, name: str) -> None:
    """One stored file against the checksum its run.json recorded."""
    files.verify_files(run_dir, (doc.get("files") or {}) if isinstance(doc, dict) else {}, [name], DAMAGED_HINT)


#: the keys of study.json (spec.Sweep.to_json, what store.init adds, an import's) and of each of its parts
STUDY_KEYS = {"name", "description", "engine", "source", "parts", "run_ids", "created", "updated", "history", "digest"}
PART_KEYS = {"name", "base", "grid", "points", "set", "repeat", "seed", "start_jitter"}


def read_study(out_dir: str) -> dict | None:
    """A store's study.json, verified against its own checksum (stores
    written before it had one are read as they are); None if there is none.
    A damaged or malformed one is an error naming it, never data."""
    from ..result import read_json

    p = os.path.join(out_dir, STUDY)
    if not os.path.exists(p):
        return None
    doc = read_json(p)
    files.verify_digest(p, doc, STUDY_HINT)
    if not isinstance(doc, dict) or not isinstance(doc.get("parts", []), list) or \
            not isinstance(doc.get("run_ids") or [], list):
        raise UserError(f"{p}: not a sweep's record (expected an object with parts and run_ids); {STUDY_HINT}")
    # a key renamed by a flipped bit (its digest's own name among them, which would leave it unchecked, or a
    # part's grid key, which moves a plot's axis) is damage, not another sweep
    unknown = sorted(set(doc) - STUDY_KEYS) + sorted({k for part in doc.get("parts", []) if isinstance(part, dict)
                                                      for k in part} - PART_KEYS)
    if unknown:
        raise UserError(f"{p}: damaged (unknown key {unknown[0]!r}); {STUDY_HINT}")
    return doc


def write_study(out_dir: str, doc: dict) -> None:
    """Write a store's study.json with its own checksum."""
    _write_json_atomic(os.path.join(out_dir, STUDY), files.with_digest(
        json.loads(json.dumps(doc, default=_json_default, allow_nan=False))))


def _write_json_atomic(path: str, obj) -> None:
    """A store's JSON file (study.json, run.json): strict JSON (no NaN), atomically."""
    atomic.write_json(path, obj, indent=1, default=_json_default, allow_nan=False)


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:
        pass
    return str(o)


# ---------------------------------------------------------------- reading


def is_store(path: str) -> bool:
    return os.path.isdir(os.path.join(path, RUNS))


def is_run(path: str) -> bool:
    return os.path.exists(os.path.join(path, "summary.json"))


def _column_types(df):
    """Parameter columns hold what the experiment file said ("1%", 100, "bbr");
    a column that mixes numbers and strings becomes strings (Parquet needs one
    type per column)."""
    import pandas as pd

    for c in df.columns:
        if df[c].dtype == object:
            vals = [v for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))]
            kinds = {type(v) for v in vals}
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[c] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in df[c]]
            elif kinds <= {int, float} and vals:
                df[c] = pd.to_numeric(df[c])
    return df


class Store:
    """A results directory, read with pandas.

    ``runs``: one row per run (parameters + metrics); ``flows``: one row per
    flow per run; :meth:`series` the time series of any runs with a
    ``run_id`` column; :meth:`result` one run as a :class:`bloatlab.Result`;
    :meth:`query` SQL over all of it (DuckDB).
    """

    def __init__(self, path: str, all_runs: bool = False):
        if not is_store(path):
            raise UserError(f"{path}: not a results directory (no {RUNS}/ in it; make one with bloatlab sweep)")
        self.path = path
        self._runs = self._flows = None
        self._files: dict[str, dict] = {}  # run_id -> {file: sha256} from its run.json
        self._dirs: dict[str, str] = {}  # run_id -> its directory (either layout)
        self._verified: set[str] = set()
        self.study = read_study(path) or {}
        # By default only the runs of the sweep last written here: a changed
        # experiment leaves its old runs on disk, but they are not its results.
        ids = self.study.get("run_ids")
        self._only = None if all_runs or ids is None else set(ids)

    def _docs(self) -> list[dict]:
        from ..result import read_json

        docs = []
        self._dirs = {rid: d for rid, d in run_dirs(self.path).items() if os.path.exists(os.path.join(d, "run.json"))}
        for rid, d in self._dirs.items():
            if self._only is not None and rid not in self._only:
                continue
            p = os.path.join(d, "run.json")
            doc = read_json(p)
            verify_doc(p, doc)
            self._files[rid] = doc.get("files") or {}
            docs.append(doc)
        docs.sort(key=lambda d: (d["row"].get("part") or "", d["row"].get("order", 0), d["run_id"]))
        return docs

    def _load(self):
        import pandas as pd

        docs = self._docs()
        # a store whose every point failed still has the index columns, so that selections on
        # them find nothing instead of failing (a claim is then "not evaluated", not a crash)
        self._runs = _column_types(pd.DataFrame([d["row"] for d in docs], columns=None if docs else
                                                ["run_id", "part", "engine", "seed", "rep", "build"] +
                                                self._asked_keys()))
        if "build" not in self._runs:  # a store written before runs recorded their build: unknown (null)
            cols = list(self._runs.columns)
            self._runs.insert(cols.index("rep") + 1 if "rep" in cols else len(cols), "build", None)
        self._flows = pd.DataFrame([dict(run_id=d["run_id"], **fr) for d in docs for fr in d["flows"]])

    @property
    def runs(self):
        if self._runs is None:
            self._load()
        return self._runs

    @property
    def flows(self):
        if self._flows is None:
            self._load()
        return self._flows

    def subset(self, run_ids) -> "Store":
        """This store seen through a filter: only the given runs in ``runs``
        and ``flows`` (what ``plot --where`` draws from)."""
        import copy

        keep = set(run_ids)
        view = copy.copy(self)
        view._runs = self.runs[self.runs["run_id"].isin(keep)].reset_index(drop=True)
        flows = self.flows
        view._flows = flows[flows["run_id"].isin(keep)].reset_index(drop=True) if "run_id" in flows else flows
        return view

    def _asked_keys(self) -> list[str]:
        """The swept keys the study asked for (study.json), without reading any run."""
        keys: list[str] = []
        for part in self.study.get("parts", []):
            for p in part.get("points", []):
                keys += [k for k in p if k not in keys]
            keys += [k for k in part.get("grid", {}) if k not in keys]
        return keys

    def swept_keys(self) -> list[str]:
        """Swept key paths (the parameter columns), in the order of the sweep."""
        keys = []
        for part in self.study.get("parts", []):
            for p in part.get("points", []):
                keys += [k for k in p if k not in keys]
            keys += [k for k in part.get("grid", {}) if k not in keys]
            keys += [k for k in part.get("set", {}) if k not in keys]
        extra = [c for c in self.runs.columns if "." in c and c not in keys]
        return [k for k in keys + extra if k in self.runs.columns]

    def _check(self, run_id: str, name: str) -> str:
        """The path of a run's stored file, verified against its checksum
        once per Store (a damaged file is an error naming it, never data)."""
        if self._runs is None:
            self._load()
        d = self._dirs.get(run_id) or run_dir(self.path, run_id)
        p = os.path.join(d, name)
        if p not in self._verified:
            verify_file(d, {"files": self._files.get(run_id, {})}, name)
            self._verified.add(p)
        return p

    def result(self, run_id: str):
        from ..result import Result

        for name in STORED_FILES:
            self._check(run_id, name)
        return Result.load(os.path.dirname(self._check(run_id, "summary.json")))

    def series(self, kind: str = "flows", run_ids: Iterable[str] | None = None):
        """Time series (``flows``, ``links`` or ``probes``) of the given runs
        (all by default), one DataFrame with a ``run_id`` column."""
        import pandas as pd

        if kind not in ("flows", "links", "probes"):
            raise UserError(f'series: unknown kind "{kind}" (expected flows, links or probes)')
        ids = list(run_ids) if run_ids is not None else list(self.runs["run_id"])
        frames = []
        for rid in ids:
            p = self._check(rid, f"{kind}.parquet")
            if os.path.exists(p):
                df = pd.read_parquet(p)
                df.insert(0, "run_id", rid)
                frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def write_index(self) -> None:
        """Write index.parquet / index_flows.parquet (for tools that read Parquet directly)."""
        runs, flows = self.runs, self.flows
        atomic.write_with(os.path.join(self.path, INDEX), lambda p: runs.to_parquet(p, index=False))
        atomic.write_with(os.path.join(self.path, INDEX_FLOWS), lambda p: flows.to_parquet(p, index=False))

    def query(self, sql: str):
        """Run SQL (DuckDB) over tables ``runs`` and ``flows`` and views
        ``flow_series``, ``link_series``, ``probe_series``; returns a DataFrame.

        Read-only by construction, not by inspection alone: the connection
        is opened with ``enable_external_access = false`` (no file, directory,
        extension or network can be named in SQL: ``COPY ... TO``, ``ATTACH``,
        ``read_text``/``read_csv``/``read_parquet``/``glob`` of any path,
        ``INSTALL``/``LOAD`` all fail), extension autoload/autoinstall and
        Python replacement scans off, and its configuration locked. The
        store's data reach it only as objects registered beforehand: the
        index tables as DataFrames, each series as a pyarrow dataset over the
        run files verified against their checksums (pyarrow reads them, not
        DuckDB). The statement filter (one SELECT or EXPLAIN) stays as a
        second wall."""
        import duckdb

        runs, flows = self.runs, self.flows
        try:
            con = duckdb.connect(config={"enable_external_access": False, "autoinstall_known_extensions": False,
                                         "autoload_known_extensions": False, "python_enable_replacements": False,
                                         "lock_configuration": True})
        except duckdb.Error as e:  # a DuckDB too old for one of the settings: refuse rather than run unlocked
            raise UserError(f"query: this DuckDB ({duckdb.__version__}) cannot lock a connection to the store: "
                            f"{str(e).strip().splitlines()[0]}") from None
        try:
            con.register("runs", runs)
            con.register("flows", flows)
            for kind, view in (("flows", "flow_series"), ("links", "link_series"), ("probes", "probe_series")):
                rel = self._series_dataset(kind, list(runs.get("run_id", [])))
                if rel is not None:
                    con.register(f"_{view}_data", rel)
                    con.execute(f"CREATE VIEW {view} AS SELECT run_id, * EXCLUDE (run_id) FROM _{view}_data")
            # One SELECT (or EXPLAIN of one): COPY, ATTACH, CREATE, INSERT, SET ... are refused before
            # anything runs (the connection above could not carry them out anyway).
            stmts = con.extract_statements(sql)
            kinds = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
            if len(stmts) != 1 or stmts[0].type not in kinds:
                found = ", ".join(str(s.type).split(".")[-1] for s in stmts) or "nothing"
                raise UserError(f"query: expected one SELECT statement (the store is read-only), got {found}")
            return con.execute(sql).df()
        except duckdb.Error as e:
            msg = str(e).strip().splitlines()[0]
            raise UserError(f"query: {msg}") from None
        finally:
            con.close()

    def _series_dataset(self, kind: str, run_ids: list[str]):
        """One time-series table of the given runs as a pyarrow dataset (read
        lazily, by pyarrow) with a ``run_id`` column, or None without files.
        Every file is verified against its run's checksum first. Files of the
        earlier layout (``runs/<id>/``, not yet migrated) are read whole."""
        import pyarrow as pa
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        files = [self._check(r, f"{kind}.parquet") for r in run_ids]
        files = [f for f in files if os.path.exists(f) and os.path.getsize(f) > 0]
        if not files:
            return None
        hive = [f for f in files if os.path.basename(os.path.dirname(f)).startswith(PARTITION)]
        legacy = [f for f in files if f not in set(hive)]
        # union by name: imported runs may carry other columns
        schema = pa.unify_schemas([pq.read_schema(f) for f in files])
        run_id = pa.field("run_id", pa.string())
        parts = []
        if hive:  # run_id is the Hive partition of each file's directory
            parts.append(ds.dataset(hive, format="parquet", schema=schema.append(run_id),
                                    partitioning=ds.partitioning(pa.schema([run_id]), flavor="hive")))
        for f in legacy:
            t = pq.read_table(f, schema=schema)
            parts.append(ds.dataset(t.append_column(run_id, pa.array([os.path.basename(os.path.dirname(f))] * len(t),
                                                                      pa.string()))))
        return parts[0] if len(parts) == 1 else ds.dataset(parts)


def load(path: str):
    """``bloatlab.load(DIR)``: a results directory as a :class:`Store`
    (``.runs``, ``.flows`` DataFrames, ``.series()``, ``.query()``), or a
    single run directory as a :class:`bloatlab.Result`."""
    from ..result import Result

    path = os.fspath(path)
    if is_store(path):
        return Store(path)
    if is_run(path):
        return Result.load(path)
    raise UserError(f"{path}: neither a results directory (runs/) nor a run (summary.json)")
