"""The simulator engine: bloatlab's Rust discrete-event simulator (crates/sim)."""

from __future__ import annotations

import json


def run(resolved: dict, pcap: str | None = None, **_opts) -> dict:
    """The raw result as Python objects; ``raw["series"]`` holds the time
    series as Arrow tables shared with the engine (``_native.ArrowTable``,
    read through the Arrow PyCapsule interface, see ``result.arrow_table``).
    ``pcap=DIR``: also DIR/down.pcap and DIR/up.pcap, every packet as it
    enters its direction's link (docs/simulator.md, "Packet captures")."""
    from .. import _native

    return _native.run_sim(json.dumps(resolved), pcap)
