"""A run's result: the summary dict and its time series as pandas DataFrames."""

from __future__ import annotations

import json
import os
from typing import Any

from . import atomic

SERIES = ("flows", "links", "probes")
#: a run directory's record of its files' SHA-256 sums, written last by :meth:`Result.save` and verified by
#: :meth:`Result.load` (a store's run also has run.json, which records the same files)
CHECKSUMS = "checksums.json"
#: the files whose sums it records
RUN_FILES = ("summary.json",) + tuple(f"{name}.parquet" for name in SERIES)


class Result:
    """``summary`` is the dict of docs/results.md; ``flows``, ``links`` and
    ``probes`` are the time series (pandas DataFrames, built on first use;
    :meth:`table` gives them as Arrow tables)."""

    def __init__(self, summary: dict, series: dict[str, Any]):
        # series: name -> the engine's Arrow table (an object with
        # __arrow_c_stream__, e.g. _native.ArrowTable), a pyarrow Table, a
        # pandas DataFrame or a dict of columns (lists)
        self.summary = summary
        self._series = series
        self._frames: dict[str, Any] = {}

    def __getstate__(self):
        # the engine's tables live in Rust and do not pickle; pyarrow Tables do (zero-copy here)
        state = dict(self.__dict__)
        state["_series"] = {k: v if isinstance(v, dict) or hasattr(v, "to_parquet") else arrow_table(v)
                            for k, v in self._series.items()}
        return state

    def _frame(self, name: str):
        if name not in self._frames:
            import pandas as pd

            s = self._series.get(name)
            if s is None or isinstance(s, dict):
                df = pd.DataFrame(s or {})
            elif isinstance(s, pd.DataFrame):
                df = s
            else:
                df = arrow_table(s).to_pandas()
            self._frames[name] = df
        return self._frames[name]

    def table(self, name: str):
        """The time series ``name`` (flows, links or probes) as a pyarrow
        Table; for the engine's own tables without copying a sample."""
        if name not in SERIES:
            raise KeyError(f"unknown time series {name!r} (expected one of: {', '.join(SERIES)})")
        import pyarrow as pa

        s = self._series.get(name)
        if name in self._frames or s is None or isinstance(s, dict):
            return pa.Table.from_pandas(self._frame(name), preserve_index=False)
        return arrow_table(s)

    @property
    def flows(self):
        """Per-flow time series: flow, t, cwnd_bytes, inflight_bytes, srtt_ms,
        pacing_rate_bps, delivery_rate_bps, delivered_bytes, sack_delivered_bytes, retransmits."""
        return self._frame("flows")

    @property
    def links(self):
        """Per-direction time series: direction, t, queue_bytes, qdelay_ms."""
        return self._frame("links")

    @property
    def probes(self):
        """Probe samples: probe, t, rtt_ms (NaN for a lost probe)."""
        return self._frame("probes")

    def __repr__(self) -> str:
        s = self.summary
        return f"<Result {s['engine']} {s['scenario'].get('name', '')!r} {s['total_goodput_mbps']:.2f} Mbit/s>"

    def save(self, out_dir: str) -> str:
        """Write summary.json and {flows,links,probes}.parquet into ``out_dir``.
        Files appear atomically (written aside, then renamed): a reader never
        sees a half-written result."""
        from . import files

        os.makedirs(out_dir, exist_ok=True)
        for name in SERIES:
            atomic.write_with(os.path.join(out_dir, f"{name}.parquet"), lambda p, name=name: self._write_parquet(name, p))
        atomic.write_json(os.path.join(out_dir, "summary.json"), self.summary, default=_json_default)
        sums = {n: files.sha256_file(os.path.join(out_dir, n)) for n in RUN_FILES}
        atomic.write_json(os.path.join(out_dir, CHECKSUMS), files.with_digest({"files": sums}), indent=1)
        return out_dir

    def _write_parquet(self, name: str, path: str) -> None:
        """A table still in Arrow form goes to Parquet as it is (no pandas on
        the way); one already read as a DataFrame (maybe changed) from that."""
        s = self._series.get(name)
        if name in self._frames or s is None or isinstance(s, dict):
            self._frame(name).to_parquet(path, index=False)
        else:
            import pyarrow.parquet as pq

            pq.write_table(arrow_table(s), path)

    @classmethod
    def load(cls, out_dir: str) -> "Result":
        import pandas as pd

        verify_run_dir(out_dir)
        summary = read_json(os.path.join(out_dir, "summary.json"))
        if not isinstance(summary, dict) or not isinstance(summary.get("flows"), list):
            from .errors import UserError

            raise UserError(f"{os.path.join(out_dir, 'summary.json')}: not a run's summary (no list of flows)")
        r = cls(summary, {})
        for name in SERIES:
            p = os.path.join(out_dir, f"{name}.parquet")
            r._frames[name] = pd.read_parquet(p) if os.path.exists(p) else pd.DataFrame()
        return r


def arrow_table(obj):
    """``obj`` as a pyarrow Table: a Table as it is; anything implementing the
    Arrow PyCapsule interface (``__arrow_c_stream__``, such as the engine's
    ``_native.ArrowTable``) read without copying its buffers."""
    import pyarrow as pa

    if isinstance(obj, pa.Table):
        return obj
    return pa.RecordBatchReader.from_stream(obj).read_all()


def verify_run_dir(out_dir: str) -> None:
    """A run directory's files against the sums recorded when it was written:
    its checksums.json, or for a store's run its run.json (a run directory
    written before either is read as it is). A damaged file is an error
    naming it, never data."""
    from . import files

    hint = "the run's files changed after it was written (bit rot, an edit); run it again"
    for record, key in ((CHECKSUMS, "files"), ("run.json", "files")):
        p = os.path.join(out_dir, record)
        if os.path.exists(p):
            doc = read_json(p)
            files.verify_digest(p, doc, hint)
            sums = doc.get(key) if isinstance(doc, dict) else None
            if not isinstance(sums, dict):
                from .errors import UserError

                raise UserError(f"{p}: damaged (no record of the run's files); {hint}")
            files.verify_files(out_dir, sums, RUN_FILES, hint)
            return


def read_json(path: str):
    """A stored JSON file, or a UserError naming the file when it is damaged
    (truncated, not JSON), unreadable or beyond :data:`bloatlab.files.STORED_JSON_LIMIT`."""
    from . import files
    from .errors import UserError

    try:
        return json.loads(files.read_bytes(path, files.STORED_JSON_LIMIT, "stored file").decode("utf-8"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: damaged JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                        "bloatlab store check DIR lists damaged runs, a resumed sweep re-runs them") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: damaged JSON (not UTF-8 text)") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None


def _json_default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
    except ImportError:
        pass
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


#: kept for the callers that import it from here (advise.host, commands.measure)
atomic_write_text = atomic.write_text
