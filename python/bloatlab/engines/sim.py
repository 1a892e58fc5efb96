"""The simulator engine: bloatlab's Rust discrete-event simulator (crates/sim)."""

from __future__ import annotations

import json


def run(resolved: dict, **_opts) -> dict:
    from .. import _native

    return json.loads(_native.run_sim(json.dumps(resolved)))
