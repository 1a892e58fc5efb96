"""A measurement's probes, recorded and replayed: ``bloatlab measure --record DIR`` and ``--replay DIR``.

``measure`` talks to the path only through runs of ``bloatlab-probe`` (``measure._probe``: echo probes, loads,
packet trains), each one set of arguments in and one JSON object (or an error) out, and reads the time only to
space its trains and to report where its time went. A *recording* keeps exactly that: every run's arguments, its
result or its error, and when it started and ended (seconds since the measurement began). *Replaying* it runs
``measure``'s whole analysis again — the same code path, today's code — with each run served from the recording
instead of the network, and the clock read from the recorded times, so:

- a user's measurement can be looked at again, by anyone, without the path: attach the directory to a bug report;
- a change to the classifier is checked against measurements nobody looked at while writing it, offline (the
  advisor's campaign records every path's measurement: ``DIR/NNNN/probes/``), and exactly, from the raw series
  rather than from a stored summary of them.

The file, ``DIR/probes.jsonl`` (or ``probes.jsonl.gz``, gzip's: read as well): one JSON object a line, written as each run ends (a measurement that failed half way
keeps what it ran). The first is the header: the format's version, bloatlab's, the host, port and options measured
with. Then one a run: ``args`` (the probe's arguments, the host, port and secret replaced by ``{host}``,
``{port}`` and ``{secret}``: the secret is never written), ``start_s``, ``end_s``, and ``result`` or ``error``;
between them each read of measure's clock, ``{"now_s": ...}`` (seconds since the measurement began).

Replay serves a run with the recorded one of the same arguments, the first not served yet (the idle probes and the
loss stream run at the same time, so the order of two concurrent runs is not the key). A run whose arguments the
recording does not have, but one with the same command and flags whose values differ only in what measure derives
from its readings (:data:`DERIVED_FLAGS`: a phase's length, a train's count and pace), is served that one, and the
substitution is named in the report's ``replay.substituted``: today's code asked for something a little different.
A run with no such counterpart is an error naming it. The clock: a read after the k-th run ended gets the recorded
reads after the k-th run, in their order, so the replayed report is the recorded one but for its wall times; where
changed code reads it more often than that, each run moves it to the recorded start and then end and each sleep by
its length (the analysis time between two runs is then not in it: milliseconds, where a train's refill check
compares seconds).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Callable

from .._version import __version__
from ..errors import UserError
from ..files import IMPORT_INFLATED, IMPORT_LIMIT, inflate, read_bytes

#: the recording's format: a reader refuses another
FORMAT = 1

FILE = "probes.jsonl"

#: flags whose values measure derives from what it read earlier (a phase's length and sample spacing, the idle
#: gap before it, a train's count and pace, the loss stream's spacing): a replay of changed code may ask for other
#: values, and is then served the recorded run with that command and those flags (named in ``replay.substituted``)
DERIVED_FLAGS = frozenset({"-t", "--idle", "--sample-interval", "--until-stable", "--count", "--rate", "--send-interval"})


def normalized(args: list[str], host: str, port: int) -> list[str]:
    """``args`` with the host, the port and the secret replaced by ``{host}``, ``{port}``, ``{secret}``."""
    out = []
    for i, a in enumerate(args):
        prev = args[i - 1] if i else None
        if prev == "--secret":
            out.append("{secret}")
        elif prev == "-p" and a == str(port):
            out.append("{port}")
        elif a == host and prev not in DERIVED_FLAGS:
            out.append("{host}")
        else:
            out.append(a)
    return out


def shape(args: list[str], derived: frozenset = DERIVED_FLAGS) -> tuple:
    """What a substitute must share with ``args``: every token but the values of the ``derived`` flags
    (:data:`DERIVED_FLAGS`). A packet train's count is derived whether or not it is asked for (none asks for the
    probe's default, 1000: measure sizes trains to the rate since 2026-12-04, and a recording made before holds the
    default where today's code asks for fewer), so ``udp train`` has one whatever ``args`` say."""
    out = tuple("*" if i and args[i - 1] in derived else a for i, a in enumerate(args))
    if args[:2] == ["udp", "train"] and "--count" not in args:
        # where measure puts it (measure._train): after the host, the port and an up train's --up
        at = 5 + (args[5:6] == ["--up"])
        out = out[:at] + ("--count", "*") + out[at:]
    return out


class Live:
    """No recording: each run goes to the network, the clock is the machine's."""

    def run(self, args: list[str], fn: Callable[[], dict]) -> dict:
        return fn()

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, s: float) -> None:
        time.sleep(s)

    def close(self) -> dict | None:
        return None


class Recorder(Live):
    """Live, and each run appended to ``DIR/probes.jsonl`` as it ends."""

    def __init__(self, path: str, host: str, port: int, options: dict):
        self.dir, self.host, self.port = path, host, port
        f = os.path.join(path, FILE)
        if os.path.exists(f):
            raise UserError(f"--record {path}: {f} exists (a recording already): choose another directory")
        try:
            os.makedirs(path, exist_ok=True)
            self.f = open(f, "x", encoding="utf-8")
        except OSError as e:
            raise UserError(f"--record {path}: {e.strerror or e}") from None
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self._write({"format": FORMAT, "bloatlab": __version__, "host": host, "port": port,
                     "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "options": options})

    def _write(self, obj: dict) -> None:
        with self.lock:
            self.f.write(json.dumps(obj, separators=(",", ":")) + "\n")
            self.f.flush()

    def now(self) -> float:
        t = time.monotonic()
        self._write({"now_s": round(t - self.t0, 6)})
        return t

    def run(self, args: list[str], fn: Callable[[], dict]) -> dict:
        start = time.monotonic() - self.t0
        rec: dict[str, Any] = {"args": normalized(args, self.host, self.port), "start_s": round(start, 6)}
        try:
            j = fn()
        except UserError as e:
            self._write(dict(rec, end_s=round(time.monotonic() - self.t0, 6), error=str(e)))
            raise
        self._write(dict(rec, end_s=round(time.monotonic() - self.t0, 6), result=j))
        return j

    def close(self) -> dict | None:
        self.f.close()
        return None


def _copy(result: dict) -> dict:
    """A run's JSON result, copied (a served one is the analysis's to change)."""
    return json.loads(json.dumps(result))


def file_of(path: str) -> str | None:
    """The recording's file in directory ``path``: ``probes.jsonl``, or its gzip (a recording compressed to attach
    or to keep); None where there is neither."""
    f = os.path.join(path, FILE)
    return next((x for x in (f, f + ".gz") if os.path.exists(x)), None)


def read(path: str) -> tuple[dict, list[dict], dict[int, list[float]]]:
    """A recording's header, its runs, and its clock reads by the number of runs that had ended before each; a
    clear error naming the file (and line) where it is not one."""
    f = file_of(path)
    if f is None:
        raise UserError(f"--replay {path}: no recording there ({FILE} not found; `bloatlab measure --record DIR` "
                        f"writes one)")
    # bounded as any file a user names (files.py: a regular file, at most IMPORT_LIMIT read and IMPORT_INFLATED
    # inflated; a recording is ~0.5 MB)
    data = read_bytes(f, IMPORT_LIMIT, "--replay")
    if f.endswith(".gz"):
        data = inflate(data, IMPORT_INFLATED, "--replay", f)
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise UserError(f"--replay {path}: {f}: not UTF-8 text") from None
    objs = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except ValueError as e:
            raise UserError(f"--replay {path}: {f} line {n}: not JSON ({e})") from None
        if not isinstance(o, dict):
            raise UserError(f"--replay {path}: {f} line {n}: expected an object")
        objs.append((n, o))
    if not objs or objs[0][1].get("format") != FORMAT:
        got = objs[0][1].get("format") if objs else None
        raise UserError(f"--replay {path}: {f}: not a recording of format {FORMAT} (its header's format: {got!r})")
    head = objs[0][1]
    for key, kind in (("host", str), ("port", int), ("options", dict)):
        if not isinstance(head.get(key), kind):
            raise UserError(f"--replay {path}: {f} line 1: header key {key!r} missing or not a {kind.__name__}")
    runs, reads = [], {}
    for n, o in objs[1:]:
        if set(o) == {"now_s"} and isinstance(o["now_s"], (int, float)):
            reads.setdefault(len(runs), []).append(float(o["now_s"]))
            continue
        ok = (isinstance(o.get("args"), list) and all(isinstance(a, str) for a in o["args"])
              and isinstance(o.get("start_s"), (int, float)) and isinstance(o.get("end_s"), (int, float))
              and (isinstance(o.get("result"), dict) or isinstance(o.get("error"), str)))
        if not ok:
            raise UserError(f"--replay {path}: {f} line {n}: a run needs args (strings), start_s, end_s, and a result "
                            f"object or an error string (or the line is a clock read, {{\"now_s\": seconds}})")
        runs.append(o)
    return head, runs, reads


class Replayer(Live):
    """Each run served from a recording (module docstring), the clock the recorded one."""

    def __init__(self, path: str):
        self.dir = path
        self.head, self.runs, self.reads = read(path)
        self.ended = 0  # runs served so far: the clock reads after as many recorded runs are the next ones
        self.host, self.port = self.head["host"], self.head["port"]
        self.served = [False] * len(self.runs)
        self.substituted: list[str] = []
        self.clock = 0.0
        self.lock = threading.Lock()

    def _pick(self, want: list[str]) -> dict:
        with self.lock:
            free = [i for i, s in enumerate(self.served) if not s]
            i = next((i for i in free if self.runs[i]["args"] == want), None)
            if i is None:
                i = next((i for i in free if shape(self.runs[i]["args"]) == shape(want)), None)
                if i is not None:
                    self.substituted.append(f"asked `{' '.join(want)}`, served `{' '.join(self.runs[i]['args'])}`")
            if i is None:
                raise UserError(f"--replay {self.dir}: the measurement asks for a run the recording does not have: "
                                f"`bloatlab-probe {' '.join(want)}` (today's code takes another path than the "
                                f"recording's, or the recording stopped before it)")
            self.served[i] = True
            r = self.runs[i]
            self.clock = max(self.clock, float(r["start_s"]))
            return r

    def run(self, args: list[str], fn: Callable[[], dict]) -> dict:
        r = self._pick(normalized(args, self.host, self.port))
        with self.lock:
            self.clock = max(self.clock, float(r["end_s"]))
            self.ended += 1
        if "error" in r:
            raise UserError(r["error"])
        return _copy(r["result"])  # the analysis may change what it is given

    def now(self) -> float:
        with self.lock:
            left = self.reads.get(self.ended)
            if left:
                self.clock = max(self.clock, left.pop(0))
            return self.clock

    def sleep(self, s: float) -> None:
        with self.lock:
            self.clock += max(s, 0.0)

    def close(self) -> dict:
        unused = [" ".join(r["args"]) for r, s in zip(self.runs, self.served) if not s]
        return {"dir": self.dir, "runs": len(self.runs), "substituted": self.substituted, "unused": unused}


class Tape(Live):
    """Through ``outer`` (the session in force) as it is, each run's answer (or error) and each clock read kept in
    their order, so that an analysis can be run again on what they answered (:class:`Rewind`): measure's policer
    trains sent before the rate phase, read again at the direction's final rate (``measure._policer_trains_first``)."""

    def __init__(self, outer: Live):
        self.outer = outer
        self.runs: list[tuple[list[str], dict | None, str | None]] = []
        self.reads: list[float] = []

    def run(self, args: list[str], fn: Callable[[], dict]) -> dict:
        try:
            j = self.outer.run(args, fn)
        except UserError as e:
            self.runs.append((list(args), None, str(e)))
            raise
        self.runs.append((list(args), _copy(j), None))
        return j

    def now(self) -> float:
        t = self.outer.now()
        self.reads.append(t)
        return t

    def sleep(self, s: float) -> None:
        self.outer.sleep(s)


#: what :class:`Rewind` lets differ between the run asked and the run taped: a train's count
COUNT_ONLY = frozenset({"--count"})


class Rewind(Live):
    """A :class:`Tape`'s runs served again in their order, each where it was run with the arguments asked but for
    its ``--count`` (an analysis that sizes a train from another reading is served the train the path answered,
    which it reads as sent; a pace, ``--rate``, it reads its train's timing by), its clock reads in theirs, and no
    sleep while any run is left (the time passed already). From the first run asked otherwise, or past the tape's
    end, runs, reads and sleeps go through ``outer`` (the tape's rest is dropped)."""

    def __init__(self, tape: Tape, outer: Live):
        self.runs, self.reads, self.outer = list(tape.runs), list(tape.reads), outer

    def run(self, args: list[str], fn: Callable[[], dict]) -> dict:
        if self.runs and shape(self.runs[0][0], COUNT_ONLY) != shape(args, COUNT_ONLY):
            self.runs.clear()
            self.reads.clear()
        if not self.runs:
            return self.outer.run(args, fn)
        _, j, err = self.runs.pop(0)
        if err is not None:
            raise UserError(err)
        return _copy(j)

    def now(self) -> float:
        return self.reads.pop(0) if self.reads else self.outer.now()

    def sleep(self, s: float) -> None:
        if not self.runs:
            self.outer.sleep(s)


_active: Live = Live()


def active() -> Live:
    """The session measure's runs and clock go through (:class:`Live` outside :func:`session`)."""
    return _active


class session:
    """``with session(s):`` measure's runs and clock go through ``s`` (one measurement at a time: a process
    measures one path at once)."""

    def __init__(self, s: Live):
        self.s = s

    def __enter__(self) -> Live:
        global _active
        self.prev, _active = _active, self.s
        return self.s

    def __exit__(self, *exc) -> None:
        global _active
        _active = self.prev
