"""The store lock (filelock) and forked workers (issue 9 §4): a worker forked
while the sweep holds the lock inherits its descriptor, and flock(2) holds
while any descriptor is open. A sweep that exits releases the lock for all of
them (LOCK_UN), but a killed one releases nothing: then only the workers'
dropping their copy first thing keeps the store free for a resume (the
sweep's pool workers call store.drop_inherited_locks; filelock 4 also closes
inherited lock descriptors in a fork child by itself)."""

from __future__ import annotations

import os
import time

from bloatlab.study import store


def _sweep_that_dies(out: str, drop: bool, r, w) -> int:
    """Fork a 'sweep' that takes the lock, forks a worker (which maybe drops
    the inherited lock, then lives 3 s) and dies without releasing anything,
    as a SIGKILLed sweep does. Returns the worker's pid (sent over a pipe)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the sweep
        try:
            held = store.Lock(out).__enter__()  # noqa: F841 (kept: filelock releases on garbage collection)
            worker = os.fork()
            if worker == 0:
                if drop:
                    store.drop_inherited_locks()
                os.write(w, b"%d\n" % os.getpid())
                time.sleep(3)
                os._exit(0)
        finally:
            os._exit(0)  # no __exit__: the lock is never released by the sweep
    os.waitpid(pid, 0)
    return int(os.read(r, 64).split()[0])


def test_a_forked_worker_never_keeps_the_store_locked_after_its_sweep_died(tmp_path):
    out = str(tmp_path)
    r, w = os.pipe()
    worker = _sweep_that_dies(out, True, r, w)
    try:
        with store.Lock(out):  # free while the worker still lives: a resume can start
            pass
    finally:
        os.kill(worker, 9)
        time.sleep(0.2)  # the worker is reparented: not ours to wait for


def test_the_lock_is_taken_by_path_and_released_on_exit(tmp_path):
    out = str(tmp_path)
    with store.Lock(out) as lk:
        assert os.path.abspath(lk.path) in store.LOCK_PATHS
    assert not store.LOCK_PATHS
