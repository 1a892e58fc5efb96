"""A sweep's workers never outlive it nor hold its store (issue 16 §3): SIGKILL
of the sweep's main process alone used to leave a worker blocked on its pipe,
holding the lock, and a resume refused until someone found the orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import ROOT


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _long_sweep(tmp_path, name: str, ccs: str):
    """A sweep of 600-s simulations (never finishes in a test); its results directory."""
    (tmp_path / "s.toml").write_text(textwrap.dedent("""
        name = "long"
        duration = "600s"
        [link.down]
        rate = "1Gbit"
        [[flow]]
        cc = "cubic"
        rtt = "20ms"
        count = 4
    """))
    (tmp_path / "exp.toml").write_text(f'name = "{name}"\nbase = "s.toml"\n[grid]\n"flow.0.cc" = [{ccs}]\n')
    return tmp_path / "out"


def test_sigkill_of_the_sweep_takes_its_workers_and_the_lock_with_it(tmp_path):
    out = _long_sweep(tmp_path, "kill", '"cubic", "reno"')
    p = subprocess.Popen([sys.executable, "-m", "bloatlab", "sweep", str(tmp_path / "exp.toml"), "--out", str(out), "-q", "-j", "2"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    for _ in range(200):  # the workers start within a second or two
        workers = _children(p.pid)
        if len(workers) >= 2:
            break
        time.sleep(0.05)
    assert workers, "the sweep started no worker"
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    orphans = [w for w in workers if _alive(w)]
    for w in orphans:  # a failing run must not leave 600-s simulations behind
        os.kill(w, signal.SIGKILL)
    assert not orphans, "a worker outlived its sweep"
    # the lock is free: a resume can start (checked by taking it ourselves)
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from bloatlab.study.store import Lock

    with Lock(str(out)):
        pass


#: the Ctrl-C test's bound on the stop (s): pebble's stop waits 3 s for each worker that outlives its SIGTERM, the
#: behaviour the test excludes; a sound stop takes 0.12-0.26 s here (five runs, 2026-12-02)
CTRL_C_STOP_S = 2.5


def _ctrl_c_once(tmp_path, tag: str):
    """One sweep of 600-s runs stopped by SIGINT half a second after both its workers started: (its exit status,
    its standard error, seconds from the signal to its exit, its workers' pids, its results directory)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = _long_sweep(tmp_path, tag, '"cubic", "reno", "bbr"')
    p = subprocess.Popen([sys.executable, "-m", "bloatlab", "sweep", str(tmp_path / "exp.toml"), "--out", str(out), "-q", "-j", "2"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers: list[int] = []
    try:
        for _ in range(400):  # both workers started (pebble may fork them from one of its threads)
            workers = [c for t in os.listdir(f"/proc/{p.pid}/task") for c in _children(int(t))]
            if len(workers) >= 2:
                break
            time.sleep(0.05)
        assert len(workers) >= 2, "the sweep started no pool"
        time.sleep(0.5)  # computing
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return p.returncode, err, took, workers, out


def test_ctrl_c_stops_the_sweep_and_its_workers_at_once_and_leaves_nothing_half_built(tmp_path):
    # the pool's workers ignore SIGINT; the sweep stops them (SIGTERM, which kills at once even inside the
    # engine's native code) and removes any staging directory before it exits 130. One slow stop is tried again
    # on a fresh sweep (a clean clone's make test once took 2.50 s, 2026-12-02, where runs here take 0.12-0.26 s):
    # the wait the test excludes is pebble's, which every stop would show
    rc, err, took, workers, out = _ctrl_c_once(tmp_path / "a", "int")
    if rc == 130 and took >= CTRL_C_STOP_S:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        first = took
        rc, err, took, workers, out = _ctrl_c_once(tmp_path / "b", "int")
        print(f"the first stop took {first:.2f} s; again: {took:.2f} s")
    assert rc == 130 and "Traceback" not in err, err
    assert took < CTRL_C_STOP_S, took  # not pebble's 3 s SIGTERM-then-SIGKILL wait per worker
    orphans = [w for w in workers if _alive(w)]
    for w in orphans:
        os.kill(w, signal.SIGKILL)
    assert not orphans, "a worker outlived its sweep"
    assert not [d for d in os.listdir(out / "runs") if d.startswith(".")]
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from bloatlab.study.store import Lock

    with Lock(str(out)):
        pass


import pytest  # noqa: E402


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/net/tun"), reason="emulator sweeps need root and /dev/net/tun")
def test_timeout_stops_an_emulator_point_and_leaves_no_namespace(tmp_path):
    # emulator points used to run in the sweep's own process and ignore --timeout
    (tmp_path / "s.toml").write_text(textwrap.dedent("""
        name = "slow"
        duration = "30s"
        [link.down]
        rate = "10Mbit"
        [[flow]]
        cc = "cubic"
        rtt = "20ms"
    """))
    (tmp_path / "exp.toml").write_text('name = "t"\nbase = "s.toml"\nengine = "emu"\n[grid]\n"flow.0.cc" = ["cubic"]\n')
    def namespaces():
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return {l.split()[0] for l in out.splitlines() if l.startswith("bloatlab-emu")}

    before = namespaces()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "bloatlab", "sweep", str(tmp_path / "exp.toml"), "--out", str(tmp_path / "out"),
                        "-q", "--timeout", "4"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    took = time.monotonic() - t0
    assert "timeout: still running after 4 s" in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert took < 20, took  # not the scenario's 30 s
    deadline = time.monotonic() + 5  # the killed worker's bloatlab-emu tears down on its PDEATHSIG
    while namespaces() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not namespaces() - before, namespaces()
