"""Reading a file a user names, with bounds (issue 36 §3).

Every file bloatlab reads because a user named it (a scenario, a trace, an
experiment, a file to import, a stored run's JSON) goes through here, so that
no such file can take unbounded memory or time:

- only a regular file is read: a FIFO, a device (``/dev/zero``), a socket or
  a directory is refused before any read (the file is opened non-blocking, so
  opening a FIFO with no writer does not hang, and checked with ``fstat``);
- at most ``limit`` bytes are read: a larger file is refused, naming the
  bound, after reading ``limit + 1`` bytes;
- a gzip file is inflated to at most ``inflated`` bytes (a 3 MB file that
  inflates to 3 GB is refused when the bound is passed, not after).

Each refusal is a :class:`~bloatlab.errors.UserError` (exit 2) whose message
names the file, what was expected and the bound.

Bounds, each far above a real file of its kind:

- :data:`TEXT_LIMIT` = 32 MiB: a scenario or an experiment file (the gallery's
  largest is ~2 KB, an experiment listing 10 000 points ~1 MB; a 10 MB value
  must still get its key-path error, tests/test_hostile_input.py; tomllib
  holds a 32 MiB file in ~0.3 GB);
- :data:`TRACE_LIMIT` = 16 MiB: a Mahimahi trace is one line of a few digits
  per 1500-byte delivery opportunity, so 16 MiB is ~2 M opportunities: 24 s
  at 1 Gbit/s or 4 min at 100 Mbit/s before it repeats (Mahimahi's own
  cellular traces are 0.1-2 MB);
- :data:`IMPORT_LIMIT` = 64 MiB read and :data:`IMPORT_INFLATED` = 128 MiB
  inflated: a flent data file (60 s of RRUL at 50 ms steps is ~1 MB inflated)
  or iperf3 ``-J`` output; JSON parsing costs a few times its text in memory;
- :data:`STORED_JSON_LIMIT` = 64 MiB: a stored run's ``summary.json`` /
  ``run.json`` or a store's ``study.json`` (a 1000-flow run's summary is
  ~1 MB).
"""

from __future__ import annotations

import fcntl
import os
import stat
import zlib

from .errors import UserError

MiB = 1 << 20
TEXT_LIMIT = 32 * MiB
TRACE_LIMIT = 16 * MiB
IMPORT_LIMIT = 64 * MiB
IMPORT_INFLATED = 128 * MiB
STORED_JSON_LIMIT = 64 * MiB


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(p: str, what: str) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file ``p`` (blocking reads) and its
    stat. Opened non-blocking so that a FIFO with no writer does not hang
    the open; anything but a regular file is refused before any read."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UserError(f"cannot read {what} {p}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{what} {p}: {_kind(st.st_mode)}, not a regular file; only files are read")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_bytes(path: "str | os.PathLike", limit: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.
    ``what`` names the file in a refusal (e.g. ``"trace"``, ``"--import"``)."""
    p = os.fspath(path)
    fd, st = _open_regular(p, what)
    try:
        if st.st_size > limit:
            raise UserError(f"{what} {p}: {st.st_size:,} bytes, more than the {_size(limit)} bound for this file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)  # a file that grew since fstat is still bounded
    except OSError as e:
        raise UserError(f"cannot read {what} {p}: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UserError(f"{what} {p}: more than the {_size(limit)} bound for this file")
    return data


def read_text(path: "str | os.PathLike", limit: int, what: str) -> str:
    """:func:`read_bytes` as UTF-8 text."""
    data = read_bytes(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{what} {os.fspath(path)}: not UTF-8 text") from None


def inflate(data: bytes, limit: int, what: str, path: str) -> bytes:
    """A gzip stream inflated to at most ``limit`` bytes (refused as soon as
    it would pass the bound: memory stays bounded by ``limit``)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    chunk = 1 << 16
    pos = 0
    try:
        while True:
            if d.unconsumed_tail:
                piece = d.decompress(d.unconsumed_tail, limit + 1 - len(out))
            elif pos < len(data) and not d.eof:
                piece = d.decompress(data[pos:pos + chunk], limit + 1 - len(out))
                pos += chunk
            else:
                break
            out += piece
            if len(out) > limit:
                raise UserError(f"{what} {path}: inflates to more than the {_size(limit)} bound for this file")
            if d.eof:
                break
    except zlib.error:
        raise UserError(f"{what} {path}: a broken gzip file") from None
    if not d.eof:
        raise UserError(f"{what} {path}: a broken gzip file (truncated)")
    return bytes(out)


# ---------------------------------------------------------------- checksums
# What a stored file's integrity rests on: the SHA-256 of each file, recorded
# when it is written (a store's run.json, a run directory's checksums.json),
# and a document's own digest over its canonical JSON (run.json, study.json,
# checksums.json), verified on every read.


def sha256_file(path: str) -> str:
    """SHA-256 of the regular file ``path``. A stored file that is something
    else (a FIFO would hang the read, a link to ``/dev/zero`` never end) is
    refused before any read, as :func:`read_bytes` refuses it."""
    import hashlib

    h = hashlib.sha256()
    fd, _ = _open_regular(path, "stored file")
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise UserError(f"cannot read stored file {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    return h.hexdigest()


def doc_digest(doc: dict) -> str:
    """SHA-256 of a JSON document's content without its own ``digest`` key (canonical JSON)."""
    import hashlib
    import json

    body = {k: v for k, v in doc.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def with_digest(doc: dict) -> dict:
    """``doc`` with its own digest (its JSON round trip first, so that the digest is of what a reader parses)."""
    import json

    d = json.loads(json.dumps({k: v for k, v in doc.items() if k != "digest"}, allow_nan=False))
    d["digest"] = doc_digest(d)
    return d


def verify_digest(path: str, doc, hint: str) -> None:
    """A document's own digest (documents written before digests have none and are read as they are)."""
    if isinstance(doc, dict) and "digest" in doc and doc["digest"] != doc_digest(doc):
        raise UserError(f"{path}: damaged (its checksum does not match its content); {hint}")


def verify_files(directory: str, sums: dict, names, hint: str) -> None:
    """The files ``names`` of ``directory`` against the SHA-256 sums recorded for them (a name without one is
    not checked)."""
    for name in names:
        want = sums.get(name)
        if want is None:
            continue
        p = os.path.join(directory, name)
        if not os.path.exists(p):
            raise UserError(f"{p}: missing (its checksum is recorded); {hint}")
        if sha256_file(p) != want:
            raise UserError(f"{p}: damaged (checksum mismatch); {hint}")
