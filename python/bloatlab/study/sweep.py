"""Running a sweep: every point of a :class:`~.spec.Sweep` into a store.

Executors:

- ``local`` (default): a process pool on all cores (``jobs``), for ``sim``.
- ``dask``: the same points as tasks on a Dask cluster (``scheduler`` is its
  address, e.g. ``tcp://10.0.0.1:8786``); workers need bloatlab installed.
- ``emu`` runs always go one at a time (a pool of one worker, so that
  ``timeout`` can stop one): the emulator needs the machine's real time and
  network namespaces to itself. A point whose emulator timing was flagged
  (docs/emulator.md "Timing quality": a p99 lateness over 1 ms or a stall
  as long as the scenario's shortest time scale) is not stored as truth: it
  runs again, up to ``retry_flagged`` times; if every attempt is flagged the
  last one is stored, marked (the store's ``timing_flagged`` and
  ``timing_reasons`` columns), and the report names it.

Simulator points are handed out heaviest first (:func:`.spec.work`, the
bits the links can carry in the run), so that a pool's workers end together;
the store keeps the sweep's order whatever order the runs finish in.

A local worker (a process of a pebble ``ProcessPool``, which kills a point
that overruns ``--timeout``) writes its run's files (summary.json and the
time series' Parquet, straight from the engine's Arrow tables) into a
staging directory of its own (``runs/.tmp-RUN_ID-...``) and sends back only
the summary. A Dask worker does the same when it sees the store (a local
cluster, a shared file system: a token file the sweep leaves in the store
tells); one on a machine that does not sends the summary and the Arrow
tables (pickled as Arrow buffers, no per-sample Python object). This
process alone makes a run part of the store, one at a time, as soon as it is
finished (``store.write_run``: run.json with the files' checksums written
last, then renamed into place). So
an interrupted sweep loses only the runs that were still computing, and a
resumed sweep skips every point whose ``run_id`` is already stored: no point
lost, none run twice.

Skips it, that is, when the stored run was made by this build (study/build.py:
the native module, the Python sources that shape a run, the version; for
``emu`` also the emulator's binaries and the kernel release). A stored run
of another build, or of an unknown one (stored before runs recorded their
build), is not this code's result: by default the point runs again, the
sweep says how many ("12 of 40 stored runs came from another build (it
differs in native): running them again ..."), and the new run replaces the
old one once it is whole (``store.write_run(replace=True)``; a point that
fails keeps its old run).
``reuse_any_build`` (``--reuse-any-build``) keeps every stored run, for
someone who knows the change does not touch the model. The build is computed
once per process (forked workers inherit it); each run is stored with the
build of the process that ran it (a Dask worker's own).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass, field

from .. import result as _result
from ..engines import emu as _emu
from ..errors import UserError
from . import build as _build
from . import spec as _spec
from . import store as _store


@dataclass
class SweepReport:
    total: int
    already: int
    ran: int
    failed: list
    wall_s: float
    out: str
    #: emulator points re-run because their timing was flagged
    reran: int = 0
    #: (point, reason) stored although every attempt's timing was flagged
    flagged: list = field(default_factory=list)
    #: points whose stored run another (or an unknown) build made: run again, or kept with reuse_any_build
    other_build: int = 0
    reused_other_build: bool = False
    #: of those run again, the ones that failed: the store keeps their run of the other build
    kept_other_build: int = 0


def _execute(payload: dict):
    """Run one point (in a worker). Returns its Result or raises."""
    import bloatlab

    sets = dict(payload["params"])
    sets["seed"] = payload["seed"]
    if payload.get("start_jitter") and "start_jitter" not in sets:
        sets["start_jitter"] = payload["start_jitter"]
    return bloatlab.run(payload["base"], engine=payload["engine"], set=sets)


def point_payloads(sweep: _spec.Sweep, points: list, engine: str) -> list[dict]:
    """What :func:`_execute` runs for each of ``points`` (``spec.validate``'s, of ``sweep``): its part's base
    scenario, its keys, its seed and its part's start jitter."""
    parts = {p.name: p for p in sweep.parts}
    return [{"base": parts[p.part].base, "params": p.params, "seed": p.seed, "engine": engine,
             "start_jitter": parts[p.part].start_jitter} for p in points]


def _execute_safe(payload: dict, stage: str | None = None, token: str | None = None):
    """("ok", (summary, series)) or ("error", message). With ``stage`` (a
    directory only this worker writes) the run's files are written there and
    ``series`` is that directory; without, ``series`` are pyarrow Tables.
    With ``token`` (a Dask worker, maybe on another machine) ``stage`` is
    used only if that file is visible here: the store is then on a file
    system this worker shares with the sweep (the same path on a machine that
    does not share it has no token)."""
    try:
        res = _execute(payload)
        if stage is None or (token is not None and not os.path.exists(token)):
            return ("ok", (res.summary, {n: res.table(n) for n in _result.SERIES}))
        res.save(stage)
        return ("ok", (res.summary, stage))
    except Exception as e:  # reported per point, the sweep goes on
        return ("error", f"{type(e).__name__}: {e}")


def _execute_built(payload: dict, stage: str | None = None, token: str | None = None):
    """:func:`_execute_safe` in a worker, its result carrying the build that
    made it: ("ok", (summary, series, build)) or ("error", message)."""
    status, value = _execute_safe(payload, stage, token)
    if status == "ok":
        value = (*value, _build.identity(payload["engine"]))
    return status, value


def _info(pt: _spec.Point, engine: str, name: str, build: str) -> dict:
    info = {"run_id": pt.run_id, "experiment": name, "part": pt.part, "order": pt.order, "engine": engine,
            "seed": pt.seed, "rep": pt.rep, "build": build}
    info.update(pt.params)
    return info


def other_builds(points, whole: dict[str, "_store.Stored"],
                 current: "_build.Build") -> tuple[list[str], int, list[str]]:
    """Of the points stored in the store (``whole``: store.check_runs), those
    whose run another build made: (their run ids, how many of them have no
    recorded build, the build parts in which the recorded ones differ)."""
    stale, unknown, parts = [], 0, set()
    for p in points:
        st = whole.get(p.run_id)
        if st is None or st.build == current.id:
            continue
        stale.append(p.run_id)
        unknown += st.build is None
        parts.update(_build.differs(st.parts, current.parts))
    return stale, unknown, sorted(parts)


def other_build_line(n: int, stored: int, unknown: int, parts: list[str], reuse: bool) -> str:
    """What a resume says of the stored runs another build made (one line)."""
    why = []
    if parts:
        why.append("it differs in " + ", ".join(parts))
    if unknown:
        why.append(f"{unknown} stored before runs recorded their build")
    what = f"{n} of {stored} stored runs came from another build" + (f" ({'; '.join(why)})" if why else "")
    return what + (": kept (--reuse-any-build)" if reuse else ": running them again (--reuse-any-build keeps them)")


def run(sweep: _spec.Sweep, out: str, engine: str | None = None, executor: str = "local",
        scheduler: str | None = None, jobs: int | None = None, progress: bool = True,
        limit: int | None = None, timeout: float | None = None, other: str = "replace",
        retry_flagged: int = 1, reuse_any_build: bool = False) -> SweepReport:
    """Run ``sweep`` into the store ``out``; skip the points already there
    (made by this build; ``reuse_any_build``: by any, module doc).
    ``limit`` stops after that many new runs (for tests and partial runs);
    ``timeout`` kills a point (local executor, and every emulator point) that
    runs longer (seconds); ``retry_flagged``: times an emulator point whose
    timing was flagged runs again (module doc);
    ``other`` says what to do when ``out`` holds another sweep (store.init)."""
    engine = engine or sweep.engine or "sim"
    if engine not in ("sim", "emu"):
        raise UserError(f'--engine: unknown engine "{engine}" (expected sim or emu)')
    if executor not in ("local", "dask"):
        raise UserError(f'--executor: unknown executor "{executor}" (expected local or dask)')
    if executor == "dask" and not scheduler:
        raise UserError("--executor dask needs --scheduler ADDRESS (e.g. tcp://127.0.0.1:8786)")
    points = _spec.validate(sweep, engine=engine)
    t0 = time.perf_counter()
    current = _build.identity(engine)  # once, before the pool forks: its workers inherit it
    check_out(out)
    os.makedirs(out, exist_ok=True)
    with _store.Lock(out):
        _store.init(out, dict(sweep.to_json(), run_ids=[p.run_id for p in points]), other)
        _store.clean_partial(out)
        _store.migrate(out)
        whole, bad = _store.remove_damaged(out)
        for rid, why in bad.items():
            print(f"damaged run {rid} removed, computed again if it is a point of this sweep: {why}", file=sys.stderr)
        stale, unknown, parts = other_builds(points, whole, current)
        if stale:
            print(other_build_line(len(stale), sum(p.run_id in whole for p in points), unknown, parts,
                                   reuse_any_build), file=sys.stderr)
        again_ids = set() if reuse_any_build else set(stale)
        todo = [p for p in points if p.run_id not in whole or p.run_id in again_ids]
        already = len(points) - len(todo)
        if limit is not None:
            todo = todo[:limit]
        if engine != "emu":
            # the heaviest points first (longest processing time first): the pool's workers take the points in
            # this order, so the last ones running are small and no worker idles long while another finishes a
            # heavy one (a grid in its own order ends on its heaviest). The store's order is the sweep's either way.
            todo = sorted(todo, key=lambda p: (-p.work, p.order))
        payloads = point_payloads(sweep, todo, engine)
        failed: list = []
        flagged: list = []
        again: list = []  # emulator points to run once more (flagged timing)
        retries: dict[str, int] = {}  # run_id -> re-runs done
        ran = 0

        def store_one(pt, status, value):
            nonlocal ran
            if status == "ok":
                summary, series, built = value
                if engine == "emu" and _emu.timing_flagged(summary):
                    if retries.get(pt.run_id, 0) < retry_flagged:
                        retries[pt.run_id] = retries.get(pt.run_id, 0) + 1
                        again.append(pt)
                        if isinstance(series, str):
                            shutil.rmtree(series, ignore_errors=True)
                        return
                    flagged.append((pt, _emu.timing_reason(summary)))
                info = _info(pt, engine, sweep.name, built.id)
                replace = pt.run_id in again_ids
                if isinstance(series, str):
                    _store.write_run(out, pt.run_id, info, summary, staged=series, build=built, replace=replace)
                else:
                    _store.write_run(out, pt.run_id, info, summary, series, build=built, replace=replace)
                ran += 1
            else:
                failed.append((pt, value))

        with _Progress(progress, len(points), already, sweep.name) as bar:
            if not todo:
                pass
            elif engine == "emu":
                # one point at a time (the emulator runs in real time and owns the
                # machine), each in a worker so that --timeout can stop it: the
                # worker's bloatlab-emu dies with it and removes its namespaces
                by_id = {p.run_id: pl for p, pl in zip(todo, payloads)}
                pending = todo
                while pending:
                    _run_local(pending, [by_id[p.run_id] for p in pending], 1, store_one, bar, timeout, out)
                    pending, again[:] = list(again), []
                    bar.grow(len(pending))
            elif executor == "dask":
                _run_dask(todo, payloads, scheduler, store_one, bar, out)
            else:
                _run_local(todo, payloads, jobs, store_one, bar, timeout, out)
        st = _store.Store(out)
        if ran or not os.path.exists(os.path.join(out, _store.INDEX)):
            st.write_index()
    return SweepReport(len(points), already, ran, failed, time.perf_counter() - t0, out,
                       sum(retries.values()), flagged, len(stale), reuse_any_build,
                       sum(pt.run_id in again_ids for pt, _ in failed))


def check_out(out: str) -> None:
    """``--out`` of a sweep: a results directory, an empty directory or a new
    one; never a file, a single run, or a directory holding other things."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError(f"--out: {out} is a file, not a directory")
    if os.path.isdir(out) and not _store.is_store(out):
        if _store.is_run(out):
            raise UserError(f"--out: {out} holds a single run (summary.json), not a results directory")
        if os.listdir(out):
            raise UserError(f"--out: {out} is not empty and not a results directory; choose a new or empty directory")


def _worker_init(parent: int) -> None:
    """A pool worker (forked) never outlives the sweep: the kernel kills it
    when its parent dies (PR_SET_PDEATHSIG; a parent already gone is checked
    after), and it drops the store lock its fork inherited. Without this a
    SIGKILL of the sweep alone left its workers computing, holding the lock:
    resume then refused until someone found the orphans. SIGTERM (how the pool
    stops a worker: a timeout, Ctrl-C) kills at once, also inside the engine's
    native code, where a Python handler would wait for it to return (pebble
    then waits 3 s before SIGKILL)."""
    import ctypes
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _store.drop_inherited_locks()
    _keep_heap()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


#: glibc's mallopt(3) parameters: M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX = -1, -2, -4


def _keep_heap() -> None:
    """A worker keeps the memory its runs free, for its next run (glibc only; elsewhere nothing changes). By
    default glibc gives an allocation of 32 MiB or more (a 1-Gbit/s run's per-packet samples) a mapping of its
    own, unmapped at free, returns a heap's free top over 128 KiB to the kernel, and deletes a thread's heap (the
    simulator runs on a thread of its own each run) once it is empty: every run of a worker faulted its pages in
    afresh (the imc2019 grid's 1000-Mbit/s points: 1.30 M page faults in 80 runs, 63 000 with this; BENCHMARKS.md
    "The imc2019 grid"). Here: no mapping of its own for any allocation (M_MMAP_MAX 0), no trim below 2 GiB of
    free top (M_TRIM_THRESHOLD), and a 64-MiB pad (M_TOP_PAD, a thread heap's most) that keeps glibc's heap_trim
    from deleting an emptied thread heap (8 runs at 1 Gbit/s on 2 workers: 126 000 faults by default, 43 000 so,
    most of them each worker's first run). A worker then holds its largest run's memory (peak RSS +5-10 %);
    nothing a run computes changes."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    for param, value in ((_M_TRIM_THRESHOLD, 2**31 - 1), (_M_TOP_PAD, 64 << 20), (_M_MMAP_MAX, 0)):
        mallopt(param, value)


def _failure(exc: BaseException, timeout: float | None) -> str:
    """Why a point failed, from the exception its pool future holds."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from pebble import ProcessExpired

    if isinstance(exc, FutureTimeout):
        return f"timeout: still running after {timeout:g} s (killed)"
    if isinstance(exc, ProcessExpired):
        return f"worker died (exit status {exc.exitcode})"
    return f"{type(exc).__name__}: {exc}"


def _run_local(todo, payloads, jobs, store_one, bar, timeout=None, out=None):
    """The points on a process pool (pebble's ProcessPool: ``jobs`` forked
    workers, each reused for many points, a per-point timeout that kills the
    worker running it and starts another). With ``out`` (the store) a worker
    writes its run's files into a staging directory there and returns only
    the summary. A point that runs longer than ``timeout`` seconds, raises,
    or whose worker dies is reported as failed with the reason (it is not
    stored, so the next attempt tries it again) and its staging directory is
    removed; the sweep goes on. On any exit (an error, Ctrl-C) the pool is
    stopped (workers terminated, then killed) before this returns; on SIGKILL
    of the sweep the kernel kills them (:func:`_worker_init`)."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, wait

    from pebble import ProcessPool

    jobs = min(jobs or os.cpu_count() or 1, len(todo))
    # fork: a worker starts in a few ms with bloatlab already imported (and
    # sees what the parent set up, e.g. a test's patched _execute)
    pool = ProcessPool(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),),
                       context=mp.get_context("fork"))
    running = {}  # future -> (point, staging directory)

    def drop_stage(stage):
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)

    try:
        for pt, pl in zip(todo, payloads):
            stage = None if out is None else _store.staging_dir(out, pt.run_id)
            running[pool.schedule(_execute_built, args=(pl, stage), timeout=timeout)] = (pt, stage)
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                pt, stage = running.pop(fut)
                exc = fut.exception()
                status, value = ("error", _failure(exc, timeout)) if exc is not None else fut.result()
                if status != "ok":
                    drop_stage(stage)
                store_one(pt, status, value)
                bar.advance()
    finally:
        pool.stop()
        pool.join(timeout=10)
        for pt, stage in running.values():
            drop_stage(stage)


def _run_dask(todo, payloads, scheduler, store_one, bar, out=None):
    """The points as tasks on a Dask cluster. A worker that sees the store
    (a shared file system, or a local cluster) writes its run's files into a
    staging directory there and returns only the summary, as a local worker
    does; one that does not returns the summary and the Arrow tables."""
    import uuid

    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise UserError("--executor dask: dask[distributed] is not installed (pip install 'dask[distributed]')") from None
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise UserError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({e})") from None
    token = None
    if out is not None:  # its absolute path: a worker's working directory is not ours
        token = os.path.join(os.path.abspath(out), _store.RUNS, f".dask-{uuid.uuid4().hex}")
        open(token, "w").close()
    futs = {}
    try:
        for pt, pl in zip(todo, payloads):
            stage = None if token is None else os.path.abspath(_store.staging_dir(out, pt.run_id))
            fut = client.submit(_execute_built, pl, stage, token, key=f"bloatlab-{pt.run_id}", pure=False)
            futs[fut] = (pt, stage)
        for fut in as_completed(list(futs)):
            pt, stage = futs.pop(fut)
            status, value = fut.result()
            if status != "ok" and stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
            store_one(pt, status, value)
            bar.advance()
    finally:
        for fut, (_, stage) in futs.items():  # not finished (an error, Ctrl-C): nothing of theirs stays
            fut.cancel()
        client.close()
        for _, stage in futs.values():
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
        if token is not None and os.path.exists(token):
            os.unlink(token)


class _Progress:
    """A rich progress bar: points done / total, elapsed, ETA (silent when off)."""

    def __init__(self, enabled: bool, total: int, already: int, name: str):
        self.enabled = enabled
        self.total, self.already, self.name = total, already, name

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.p = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                              console=Console(stderr=True), transient=False)
            self.p.__enter__()
            self.task = self.p.add_task(f"{self.name} points", total=self.total, completed=self.already)
        return self

    def advance(self):
        if self.enabled:
            self.p.advance(self.task)

    def grow(self, n: int):
        """``n`` more attempts to run (points run again)."""
        if self.enabled and n:
            self.total += n
            self.p.update(self.task, total=self.total)

    def __exit__(self, *exc):
        if self.enabled:
            self.p.__exit__(*exc)


def print_report(rep: SweepReport, file=None) -> None:
    msg = f"{rep.ran} runs in {rep.wall_s:.1f} s"
    if rep.already:
        msg += f" ({rep.already} of {rep.total} points were already in the store)"
    print(f"{msg}; {rep.total - rep.already - rep.ran - len(rep.failed)} left. Results: {rep.out}/", file=file)
    if rep.reran:
        print(f"  {rep.reran} emulator run(s) repeated because their timing was flagged", file=file)
    for pt, why in rep.flagged[:10]:
        print(f"  stored with flagged timing (every attempt): {pt.part} {pt.params} seed {pt.seed}: {why}", file=file)
    if len(rep.flagged) > 10:
        print(f"  ... and {len(rep.flagged) - 10} more stored with flagged timing", file=file)
    for pt, err in rep.failed[:10]:
        print(f"  failed: {pt.part} {pt.params} seed {pt.seed}: {err}", file=file)
    if rep.kept_other_build:
        print(f"  {rep.kept_other_build} of the failed points keep their stored run of another build "
              "(column build)", file=file)
    if len(rep.failed) > 10:
        print(f"  ... and {len(rep.failed) - 10} more failures", file=file)
