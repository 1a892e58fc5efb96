"""Nothing left behind after a kill (issue 16 §4): the CLI, the emulator and
every process it starts, their namespaces, devices (inside the namespaces) and
temporary directories.

Root and /dev/net/tun needed; elsewhere skipped with the reason. Each test
runs a 20 s scenario for about 2 s and then kills something, so the whole file
takes ~15 s. Namespaces are told apart from those of other emulator runs on
the machine by appearing after the test started its own run.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from bloatlab.engines import emu as emu_engine

REASON = emu_engine.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"emulator unavailable: {REASON}")

PY = sys.executable
TMP = tempfile.gettempdir()

LONG = """
name = "emu-kill-test"
duration = "20s"
[link.down]
rate = "20Mbit"
buffer = "1bdp"
[[flow]]
cc = "cubic"
rtt = "20ms"
[[probe]]
interval = "10ms"
"""


def namespaces() -> set[str]:
    try:
        return {n for n in os.listdir("/run/netns") if n.startswith("bloatlab-emu")}
    except FileNotFoundError:
        return set()


def _ns_inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def own_namespaces(names: set[str], pids: list[int]) -> dict[str, int]:
    """Of ``names``, the namespaces the processes ``pids`` run in, by the namespace's inode: a name alone is not
    this run's (another emulator run on the machine — a campaign beside the tests — may take the same slot's
    names the moment this run frees them, or create its own while this one starts)."""
    nets = {_ns_inode(f"/proc/{p}/ns/net") for p in pids} - {None}
    return {n: ino for n in names if (ino := _ns_inode(f"/run/netns/{n}")) in nets}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it is dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def children(pid: int) -> list[int]:
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(task) as f:
                out += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            pass
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except FileNotFoundError:
        return ""


def start_run(tmp_path):
    """A 20 s emulator run through the CLI; (cli, emulator pid, its namespaces, the emulator's children)."""
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    before = namespaces()
    cli = subprocess.Popen([PY, "-m", "bloatlab", "run", str(sc), "--engine", "emu"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 15
    emu_pid, mine, gens = None, set(), []
    while time.time() < deadline:
        mine = namespaces() - before
        emus = [c for c in children(cli.pid) if comm(c) == "bloatlab-emu"]
        if emus and len(mine) >= 2:
            emu_pid = emus[0]
            gens = children(emu_pid)
            if gens:
                break
        time.sleep(0.05)
    assert emu_pid and len(mine) >= 2 and gens, "the run never got going"
    time.sleep(1.0)  # traffic flowing
    gens = descendants(emu_pid)
    mine = own_namespaces(mine, gens)
    assert len(mine) == 2, mine
    return cli, emu_pid, mine, gens


def cli_dirs(pid: int) -> list[str]:
    return glob.glob(os.path.join(TMP, f"bloatlab-cli-{pid}-*"))


def emu_dir(pid: int) -> str:
    return os.path.join(TMP, f"bloatlab-emu-{pid}")


def leftovers(cli_pid, emu_pid, mine, gens) -> list[str]:
    # ``mine``: this run's namespaces with their inodes (own_namespaces): a name counts while it is still that namespace
    left = sorted(n for n, ino in mine.items() if _ns_inode(f"/run/netns/{n}") == ino)
    left += [f"process {p} ({comm(p)})" for p in [emu_pid] + gens if alive(p)]
    left += cli_dirs(cli_pid) + [d for d in [emu_dir(emu_pid)] if os.path.exists(d)]
    return left


def test_sigkill_of_the_cli_leaves_nothing_behind_within_2_s(tmp_path):
    cli, emu_pid, mine, gens = start_run(tmp_path)
    # What would be left behind exists now (so this test can fail).
    assert cli_dirs(cli.pid) and os.path.isdir(emu_dir(emu_pid))
    cli.kill()
    cli.wait()
    t0 = time.time()
    while time.time() - t0 < 2.0 and leftovers(cli.pid, emu_pid, mine, gens):
        time.sleep(0.05)
    assert leftovers(cli.pid, emu_pid, mine, gens) == []


def _gone_within(seconds, cli_pid, emu_pid, mine, gens) -> list[str]:
    t0 = time.time()
    while time.time() - t0 < seconds and leftovers(cli_pid, emu_pid, mine, gens):
        time.sleep(0.05)
    return leftovers(cli_pid, emu_pid, mine, gens)


def test_sigkill_of_the_emulator_is_reported_and_leaves_nothing_within_2_s(tmp_path):
    """Issue 36 §5: a kill -9 of bloatlab-emu itself left its namespaces and
    /tmp/bloatlab-emu-PID until the next run; its reaper (a process of its own
    session, waiting on a pidfd) removes them."""
    cli, emu_pid, mine, gens = start_run(tmp_path)
    os.kill(emu_pid, signal.SIGKILL)
    t0 = time.time()
    _, err = cli.communicate(timeout=20)
    # Not bad input (2): the engine's own fate, as a shell reports a SIGKILL.
    assert cli.returncode == 128 + signal.SIGKILL, err
    assert "bloatlab-emu was killed by SIGKILL" in err and "Traceback" not in err
    assert cli_dirs(cli.pid) == []  # the CLI removed its own
    assert _gone_within(max(0.1, 2.0 - (time.time() - t0)), cli.pid, emu_pid, mine, gens) == []
    # and cleanup finds nothing of this run's (another run on the machine may have left something)
    r = subprocess.run([PY, "-m", "bloatlab", "emu", "cleanup"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not any(n in r.stdout for n in mine), r.stdout


def test_sigkill_of_the_whole_process_group_leaves_nothing_within_2_s(tmp_path):
    """kill -9 -PGID: the CLI, the emulator and the generators at once; nothing of ours is left to clean
    up the rest but the reaper, which is in a session of its own."""
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    before = namespaces()
    cli = subprocess.Popen([PY, "-m", "bloatlab", "run", str(sc), "--engine", "emu"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 15
    emu_pid, mine, gens = None, set(), []
    while time.time() < deadline:
        mine = namespaces() - before
        emus = [c for c in children(cli.pid) if comm(c) == "bloatlab-emu"]
        if emus and len(mine) >= 2 and children(emus[0]):
            emu_pid = emus[0]
            break
        time.sleep(0.05)
    assert emu_pid, "the run never got going"
    time.sleep(1.0)
    gens = [p for p in descendants(emu_pid) if os.getpgid(p) == cli.pid]  # the reaper is not in the group
    mine = own_namespaces(mine, gens)
    assert len(mine) == 2, mine
    assert cli_dirs(cli.pid) and os.path.isdir(emu_dir(emu_pid))
    os.killpg(cli.pid, signal.SIGKILL)
    cli.communicate()
    assert _gone_within(2.0, cli.pid, emu_pid, mine, gens) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_of_the_cli_stops_cleanly_and_says_what_was_interrupted(tmp_path, sig):
    cli, emu_pid, mine, gens = start_run(tmp_path)
    cli.send_signal(sig)
    if sig == signal.SIGINT:  # Ctrl-C reaches the whole foreground process group
        os.kill(emu_pid, signal.SIGINT)
    _, err = cli.communicate(timeout=20)
    assert cli.returncode == 128 + sig, err
    assert f"interrupted by {signal.Signals(sig).name}: bloatlab run stopped" in err, err
    assert "s of a 20.0 s run" in err and "removed" in err, err  # the emulator's account of what it stopped
    assert "Traceback" not in err
    # gone when the CLI returns: the generators, the namespaces, the directories; the emulator's reaper (a
    # bloatlab-emu of its own session, crates/emu/src/ns.rs) outlives the emulator by design, takes one look
    # for what a dead run left and exits: within 2 s, as after a kill
    reaper = [p for p in gens if comm(p) == "bloatlab-emu"]
    assert leftovers(cli.pid, emu_pid, mine, [p for p in gens if p not in reaper]) == []
    assert _gone_within(2.0, cli.pid, emu_pid, mine, gens) == []
