"""Engines: each takes a resolved scenario (docs/engine-interface.md) and
returns a raw result. ``sim`` runs bloatlab's own TCP model in virtual time;
``emu`` runs the real kernel's TCP through the userspace link emulator."""

from __future__ import annotations

from ..errors import UserError

ENGINES = ("sim", "emu")


def check_pcap_dir(pcap) -> str:
    """``--pcap DIR``: created if missing, and writable; the path as a string,
    or UserError naming ``--pcap`` (exit 2)."""
    import os

    d = os.fspath(pcap)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise UserError(f"--pcap {d}: cannot create the directory: {e.strerror or e}") from None
    if not os.path.isdir(d):
        raise UserError(f"--pcap {d}: exists and is not a directory")
    if not os.access(d, os.W_OK | os.X_OK):
        raise UserError(f"--pcap {d}: the directory is not writable")
    return d


def run_raw(resolved: dict, engine: str = "sim", **opts) -> dict:
    """Run ``resolved`` on ``engine``; the raw result. Options: ``pcap=DIR``
    (both engines: DIR/down.pcap and DIR/up.pcap), and the emulator's own
    (``engines.emu.run``)."""
    if opts.get("pcap") is not None:
        opts["pcap"] = check_pcap_dir(opts["pcap"])
    if engine == "sim":
        from . import sim

        return sim.run(resolved, **opts)
    if engine == "emu":
        from . import emu

        return emu.run(resolved, **opts)
    raise UserError(f'--engine: unknown engine "{engine}" (expected one of: {", ".join(ENGINES)})')
