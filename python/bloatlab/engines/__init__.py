"""Engines: each takes a resolved scenario (docs/engine-interface.md) and
returns a raw result. ``sim`` runs bloatlab's own TCP model in virtual time;
``emu`` runs the real kernel's TCP through the userspace link emulator."""

from __future__ import annotations

from ..errors import UserError

ENGINES = ("sim", "emu")


def run_raw(resolved: dict, engine: str = "sim", **opts) -> dict:
    if engine == "sim":
        from . import sim

        return sim.run(resolved, **opts)
    if engine == "emu":
        from . import emu

        return emu.run(resolved, **opts)
    raise UserError(f'--engine: unknown engine "{engine}" (expected one of: {", ".join(ENGINES)})')
