"""Every filesystem error is an exit 2 naming the path and the cause, leaving
no partial file; `run --out` does not overwrite a run without `--force`
(issue 36 §5). Before: read-only directories, a full disk, a dangling link or
a loop of links as --out, --out /proc/self and a `.lock` that is a directory
ended in `internal error` (exit 1), and `run --out` into a run directory
silently replaced its summary.json."""

from __future__ import annotations

import os
import subprocess

import pytest

from bloatlab.cli import main as cli

SCEN = """
name = "fs"
duration = "1s"
[link.down]
rate = "10Mbit"
buffer = "50pkt"
[[flow]]
cc = "cubic"
rtt = "20ms"
"""

root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root only; CI runs as root)")


@pytest.fixture()
def scen(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SCEN)
    return str(p)


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    return err


@pytest.fixture()
def tiny_fs(tmp_path):
    """A 256-KiB tmpfs (a disk that fills), and a read-only one."""
    full, ro = tmp_path / "full", tmp_path / "ro"
    full.mkdir()
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], check=True)
    yield full, ro
    subprocess.run(["umount", "-l", str(full)], check=False)
    subprocess.run(["umount", "-l", str(ro)], check=False)


@root
def test_a_full_disk_or_a_read_only_one_is_exit_2_naming_the_path(scen, tiny_fs, tiny_sweep, capsys):
    full, ro = tiny_fs
    # the series of a 20-s run at 1-ms samples do not fit in 256 KiB
    big = scen.replace("s.toml", "big.toml")
    with open(big, "w") as f:
        f.write(SCEN.replace('duration = "1s"', 'duration = "20s"\nsample_interval = "1ms"'))
    assert cli(["run", big, "--out", str(full / "r")]) == 2
    err = _err(capsys)
    assert str(full / "r") in err and "No space left" in err, err
    # nothing half-written under a final name
    left = os.listdir(full / "r") if (full / "r").exists() else []
    assert "summary.json" not in left and "checksums.json" not in left, left
    assert cli(["run", scen, "--out", str(ro / "r")]) == 2
    err = _err(capsys)
    assert str(ro / "r") in err and "Read-only" in err, err
    exp = os.path.join(os.path.dirname(tiny_sweep), "exp.toml")
    assert cli(["sweep", exp, "--out", str(ro / "s"), "-q"]) == 2
    assert str(ro) in _err(capsys)


def test_links_to_nothing_loops_and_proc_as_out_are_exit_2(scen, tmp_path, capsys):
    dangling, loop = tmp_path / "dangling", tmp_path / "loop"
    os.symlink(tmp_path / "nowhere" / "x", dangling)
    os.symlink(loop, loop)
    for out in (dangling, loop, "/proc/self", "/proc/self/fd/0"):
        assert cli(["run", scen, "--out", str(out)]) == 2, out
        err = _err(capsys)
        assert str(out) in err, err


def test_a_lock_that_is_a_directory_is_exit_2(tiny_sweep, tmp_path, capsys):
    import shutil

    out = tmp_path / "store"
    shutil.copytree(tiny_sweep, out)
    lock = out / ".lock"
    if lock.exists():
        lock.unlink()
    lock.mkdir()
    exp = os.path.join(os.path.dirname(tiny_sweep), "exp.toml")
    assert cli(["sweep", exp, "--out", str(out), "-q"]) == 2
    err = _err(capsys)
    assert ".lock" in err, err


def test_run_out_into_a_run_is_refused_without_force(scen, tmp_path, capsys):
    out = tmp_path / "r"
    assert cli(["run", scen, "--out", str(out)]) == 0
    before = (out / "summary.json").read_bytes()
    capsys.readouterr()
    assert cli(["run", scen, "--out", str(out), "--set", "link.down.rate=5Mbit"]) == 2
    err = _err(capsys)
    assert "holds a run already" in err and "--force" in err, err
    assert (out / "summary.json").read_bytes() == before
    assert cli(["run", scen, "--out", str(out), "--set", "link.down.rate=5Mbit", "--force"]) == 0
    assert (out / "summary.json").read_bytes() != before


@root
def test_a_capture_that_fills_the_disk_is_exit_2_and_leaves_no_partial_pcap(tiny_fs, tmp_path, capsys):
    full, _ = tiny_fs
    big = tmp_path / "big.toml"
    big.write_text(SCEN.replace('duration = "1s"', 'duration = "10s"'))
    assert cli(["run", str(big), "--pcap", str(full)]) == 2
    err = _err(capsys)
    assert "--pcap" in err and str(full) in err and "No space left" in err, err
    assert not (full / "down.pcap").exists() and not (full / "up.pcap").exists()
