"""The emulator engine: the real kernel's TCP in network namespaces, through
bloatlab's userspace link emulator (``crates/emu``, binary ``bloatlab-emu``).

Python stays thin: it checks that the machine can run the emulator, writes
the resolved scenario to a temporary file, runs ``bloatlab-emu run`` and reads
the raw result back (docs/engine-interface.md). Everything else (namespaces,
TUN devices, the link, the kernel's senders, teardown) happens in Rust.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

from .. import _bin
from ..errors import EngineFailed, EngineUnavailable, UserError

TUN = "/dev/net/tun"


def unavailable_reason() -> str | None:
    """Why the emulator cannot run here (None if it can): root and /dev/net/tun."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (it creates network namespaces and TUN devices: run with sudo)")
    if not os.path.exists(TUN):
        missing.append(f"{TUN} (in a container: --device /dev/net/tun)")
    elif not os.access(TUN, os.R_OK | os.W_OK):
        missing.append(f"read/write access to {TUN}")
    if not missing:
        return None
    return "the emulator needs " + " and ".join(missing)


def check() -> None:
    """Raise EngineUnavailable naming what is missing."""
    why = unavailable_reason()
    if why:
        raise EngineUnavailable(why)


def _run_binary(argv: list[str]) -> int:
    """Run bloatlab-emu, passing its stderr through; on Ctrl-C/SIGTERM wait for
    its teardown. Raise UserError with its message when it rejects its input
    (exit 2), EngineFailed when it died or failed otherwise.

    bloatlab-emu dies with us: it asks the kernel for SIGTERM when its parent
    dies (PR_SET_PDEATHSIG, crates/emu/src/sys.rs), tears down and removes our
    temporary directory too (named after our pid, ``temp_dir``)."""
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    err_lines: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("error: "):
                err_lines.append(line[len("error: "):].rstrip("\n"))
            else:
                sys.stderr.write(line)
        rc = proc.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached the emulator too; SIGTERM (errors.Interrupted) only us: pass it on,
        # and let the emulator remove its namespaces before we go.
        try:
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=15)
            for line in (err or "").splitlines():
                sys.stderr.write(line.removeprefix("error: ") + "\n")
        except Exception:
            proc.kill()
        raise
    if rc == 0:
        return rc
    msg = "\n".join(err_lines)
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else f"signal {-rc}"
        raise EngineFailed(
            f"bloatlab-emu was killed by {name}; what it left behind (namespaces, temporary files) is removed "
            "by the next emulator run or by `bloatlab emu cleanup`", 128 - rc)
    if rc == 130:
        # The emulator stopped on SIGINT before we did (ours ignored, or not yet delivered):
        # its account of what it stopped is in msg.
        if msg:
            sys.stderr.write(msg + "\n")
        raise KeyboardInterrupt
    if rc == 2:
        raise UserError(msg or "bloatlab-emu rejected its input (exit status 2)")
    raise EngineFailed(f"bloatlab-emu failed with exit status {rc}" + (f": {msg}" if msg else ""), rc)


def temp_dir(kind: str) -> tempfile.TemporaryDirectory:
    """Our temporary directory, named ``bloatlab-cli-PID-KIND-...``: if we are
    killed, the emulator (and ``bloatlab emu cleanup``) see that PID is dead
    and remove it (crates/emu/src/ns.rs, remove_stale_temp_dirs)."""
    return tempfile.TemporaryDirectory(prefix=f"bloatlab-cli-{os.getpid()}-{kind}-")


def timing_flagged(summary: dict) -> bool:
    """Was an emulator run's timing flagged (p99 lateness over the threshold,
    or a stall of a link thread as long as the scenario's shortest time scale:
    docs/emulator.md "Timing quality")? Its figures are then not truth: sweeps
    and fidelity tables re-run or mark it. False for other engines' results."""
    return bool(((summary.get("meta") or {}).get("lateness") or {}).get("flagged"))


def timing_reason(summary: dict) -> str | None:
    """Why a run's timing was flagged, in a sentence (``meta.lateness.reason``;
    a result written before the stall verdict names its p99); None if not flagged."""
    late = (summary.get("meta") or {}).get("lateness") or {}
    if not late.get("flagged"):
        return None
    return late.get("reason") or f"p99 lateness {late.get('p99_us')} µs exceeds {late.get('threshold_p99_us')} µs"


def emu_args(opts: dict) -> list[str]:
    a = []
    if opts.get("pcap"):
        a += ["--pcap", str(opts["pcap"])]
    if opts.get("no_rt"):
        a.append("--no-rt")
    if opts.get("margin_us") is not None:
        a += ["--margin-us", str(int(opts["margin_us"]))]
    return a


def run(resolved: dict, **opts) -> dict:
    """Run a resolved scenario on the emulator; the raw result.

    Options: ``pcap=DIR`` (a pcap per direction), ``no_rt=True`` (no
    SCHED_FIFO / cpu_dma_latency), ``margin_us=N`` (early-wake margin)."""
    check()
    emu = _bin.find("bloatlab-emu")
    probe = _bin.find("bloatlab-probe")
    if resolved.get("rx_jitter_ns"):
        print("bloatlab: emulator: rx_jitter is the simulator's model of a receiving host's timing; the kernel's own "
              "receive path runs here (ignored)", file=sys.stderr)
    for attempt in range(1 + NO_RESULT_RETRIES):
        with temp_dir("emu") as d:
            sc_path = os.path.join(d, "scenario.json")
            out_path = os.path.join(d, "raw.json")
            with open(sc_path, "w") as f:
                json.dump(resolved, f)
            _run_binary([emu, "run", "--scenario", sc_path, "--out", out_path, "--probe", probe] + emu_args(opts))
            raw = read_raw(out_path)
        missing = missing_results(raw)
        if not missing:
            return raw
        if attempt < NO_RESULT_RETRIES:
            print(f"bloatlab: emulator: {len(missing)} traffic generator(s) gave no result ({missing[0]}); "
                  "running the scenario once more", file=sys.stderr)
    raise EngineFailed(
        f"emulator: {len(missing)} traffic generator(s) gave no result in {1 + NO_RESULT_RETRIES} runs "
        f"({missing[0]}); their flows would read 0 goodput, so there is no result. The machine is probably "
        "too busy for the emulator (see docs/emulator.md, timing quality)", 1)


def read_raw(path: str) -> dict:
    """The emulator's raw result: ``path`` (JSON) and the Arrow IPC files its
    ``"series"`` names (relative to ``path``), read into memory as pyarrow
    Tables; a series given inline as columns of lists is kept as it is."""
    with open(path) as f:
        raw = json.load(f)
    series = raw.get("series") or {}
    for name, v in series.items():
        if isinstance(v, str):
            import pyarrow as pa

            with pa.OSFile(os.path.join(os.path.dirname(path), v)) as src:
                series[name] = pa.ipc.open_file(src).read_all()
    return raw


#: A run in which a traffic generator gave no result is run once more (it
#: happens when the machine is overloaded: a generator starved beside the
#: emulator's real-time threads misses its deadline); a second failure is an error.
NO_RESULT_RETRIES = 1


def missing_results(raw: dict) -> list[str]:
    """The emulator's messages about flows or probes that gave no result
    (a page object that never started is expected and not among them)."""
    return [e for e in (raw.get("meta") or {}).get("errors") or [] if "no result from bloatlab-probe" in e]


def tools_on_path(environ) -> dict:
    """``environ`` with bloatlab's own programs first on ``PATH`` (this Python's directory, where the venv keeps
    ``bloatlab``, and the directory of the ``bloatlab-probe`` that runs): the shell's ``--server "bloatlab-probe
    server"`` and its command's ``bloatlab measure ...`` find them whether or not the venv is activated (without
    it they failed with "bloatlab-probe: not found")."""
    dirs = [os.path.dirname(sys.executable)]
    try:
        dirs.insert(0, os.path.dirname(_bin.find("bloatlab-probe")))
    except EngineUnavailable:  # (a checkout without its build: the command says what it misses)
        pass
    path = [d for d in dirs if d] + [d for d in environ.get("PATH", "").split(os.pathsep) if d]
    return dict(environ, PATH=os.pathsep.join(dict.fromkeys(path)))


def shell(resolved: dict, command: list[str], server: str | None = None, raw_out: str | None = None, **opts) -> int:
    """Run ``command`` in the client namespace behind the emulated link; its exit status."""
    check()
    emu = _bin.find("bloatlab-emu")
    probe = _bin.find("bloatlab-probe") if resolved.get("flows") or resolved.get("probes") else "/bin/true"
    with temp_dir("shell") as d:
        sc_path = os.path.join(d, "scenario.json")
        with open(sc_path, "w") as f:
            json.dump(resolved, f)
        argv = [emu, "shell", "--scenario", sc_path, "--probe", probe] + emu_args(opts)
        if server:
            argv += ["--server", server]
        if raw_out:
            argv += ["--out", raw_out]
        argv += ["--"] + list(command)
        # The command owns the terminal: no stderr capture here.
        proc = subprocess.Popen(argv, env=tools_on_path(os.environ))
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)  # SIGTERM (errors.Interrupted) reached only us
            proc.wait(timeout=15)
            raise
        return rc


def cleanup(all_: bool = False) -> str:
    """Remove stale emulator namespaces (``all_``: also those of running emulators)."""
    check()
    emu = _bin.find("bloatlab-emu")
    p = subprocess.run([emu, "cleanup"] + (["--all"] if all_ else []), capture_output=True, text=True)
    if p.returncode != 0:
        raise UserError(p.stderr.strip().removeprefix("error: "))
    return p.stdout


def load_trace(path: str) -> list[int]:
    """A Mahimahi trace file: one delivery opportunity (1500 bytes) per line, in ms."""
    try:
        with open(path) as f:
            lines = f.read().split()
    except OSError as e:
        raise UserError(f"trace {path}: {e.strerror}") from None
    out = []
    for i, l in enumerate(lines):
        if not l.isdigit():
            raise UserError(f'trace {path}: line {i + 1}: expected milliseconds, got "{l}"')
        out.append(int(l))
    if not out or out[-1] <= 0:
        raise UserError(f"trace {path}: empty, or its last time (the repeat period) is 0 ms")
    if any(b < a for a, b in zip(out, out[1:])):
        raise UserError(f"trace {path}: times must not decrease")
    return out


def trace_rate_bps(ms: list[int]) -> float:
    """Mean capacity of a trace in bit/s."""
    return len(ms) * 1500 * 8 * 1000 / ms[-1]
