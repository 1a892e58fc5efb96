"""The simulator engine: bloatlab's Rust discrete-event simulator (crates/sim)."""

from __future__ import annotations

import json


def run(resolved: dict, **_opts) -> dict:
    from .. import _native
    from ..errors import ScenarioError

    for d, link in resolved["links"].items():
        if link and link.get("trace_ms"):
            raise ScenarioError(f"link.{d}.rate", "trace rates run on --engine emu only; the simulator needs a constant rate")

    return json.loads(_native.run_sim(json.dumps(resolved)))
