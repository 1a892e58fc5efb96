"""Atomic file writes: a file that must never be seen half-written (a result,
a store's run.json and Parquet files, study.json, a report, a measured twin)
is written aside in its own directory, flushed to disk, and renamed over its
name. ``rename(2)`` within one file system is atomic, so a reader (or a
resumed sweep, or a crash in the middle) sees the old file or the new one,
never a mix; ``fsync`` before the rename makes the new content durable
before its name points at it (without it ext4/xfs may show a renamed but
empty file after a power loss). Every such write in bloatlab goes through
:func:`write_with`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a rename into it) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_with(path: str, write: Callable[[str], Any], makedirs: bool = False) -> str:
    """Atomically create or replace ``path`` with what ``write(tmp_path)``
    writes into a temporary file beside it (same directory, hence same file
    system). On any error, including KeyboardInterrupt, the temporary file is
    removed and ``path`` is untouched. Returns ``path``."""
    import tempfile  # here, not at import: `bloatlab run` without --out never needs it

    d, name = os.path.split(os.path.abspath(path))
    try:
        if makedirs:
            os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=d)
    except OSError as e:
        raise _named(e, path) from None
    os.close(fd)
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644 & ~_umask())  # mkstemp makes 0600; a result is as readable as any file
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError):  # a full disk inside a library's writer (pyarrow names no file)
            raise _named(e, path) from None
        raise
    return path


def _named(e: OSError, path: str) -> OSError:
    """The error with the path it was about (the CLI turns it into exit 2 naming both)."""
    import errno as _errno

    if e.filename is not None and e.strerror:
        return e
    code = e.errno if e.errno is not None else _errno.EIO
    msg = e.strerror or os.strerror(code)
    if e.errno is None:  # pyarrow's "Error writing bytes ... [errno 28] No space left on device"
        import re

        m = re.search(r"\[errno (\d+)\]", str(e))
        if m:
            code = int(m.group(1))
            msg = os.strerror(code)
    return OSError(code, msg, path)


def write_text(path: str, text: str, makedirs: bool = True) -> str:
    """Atomically write ``text`` (UTF-8) to ``path``, creating its directory."""

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    return write_with(path, write, makedirs=makedirs)


def write_json(path: str, obj, indent: int = 2, default: Callable | None = None, allow_nan: bool = True) -> str:
    """Atomically write ``obj`` as JSON (with a final newline) to ``path``.
    The text is made first, so an object that cannot be serialized leaves
    no file behind. Indented by 2 with NaN allowed (a run's summary.json),
    the text is orjson's (:mod:`bloatlab.jsontext`: a NaN is written null)."""
    if indent == 2 and allow_nan:
        from .jsontext import indented

        data = indented(obj, default=default)

        def write(tmp):
            with open(tmp, "wb") as f:
                f.write(data)

        return write_with(path, write)
    text = json.dumps(obj, indent=indent, default=default, allow_nan=allow_nan) + "\n"
    return write_text(path, text, makedirs=False)


_UMASK: int | None = None


def _umask() -> int:
    """The process's umask, read without changing it (os.umask would, for a
    moment, in every thread)."""
    global _UMASK
    if _UMASK is None:
        try:
            with open("/proc/self/status") as f:
                _UMASK = next(int(line.split()[1], 8) for line in f if line.startswith("Umask:"))
        except (OSError, StopIteration, ValueError):
            _UMASK = 0o022
    return _UMASK
