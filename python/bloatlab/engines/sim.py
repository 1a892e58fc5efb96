"""The simulator engine: bloatlab's Rust discrete-event simulator (crates/sim)."""

from __future__ import annotations

import json


def run(resolved: dict, pcap: str | None = None, resolved_json: str | None = None, flow_series: bool = True,
        **_opts) -> dict:
    """The raw result as Python objects; ``raw["series"]`` holds the time
    series as Arrow tables shared with the engine (``_native.ArrowTable``,
    read through the Arrow PyCapsule interface, see ``result.arrow_table``).
    ``pcap=DIR``: also DIR/down.pcap and DIR/up.pcap, every packet as it
    enters its direction's link (docs/simulator.md, "Packet captures").
    ``resolved_json``: ``resolved`` as JSON text, when the caller has it.
    ``flow_series=False``: the flows' samples are not stored (an empty
    ``flows`` table; the summary and every other output the same), for a
    caller that reads only the summary."""
    from .. import _native

    text = json.dumps(resolved) if resolved_json is None else resolved_json
    if pcap is None:
        return _native.run_sim(text, pcap, flow_series)
    import os

    names = [os.path.join(os.fspath(pcap), f"{d}.pcap") for d in ("down", "up")]
    existed = {n for n in names if os.path.exists(n)}
    try:
        return _native.run_sim(text, pcap, flow_series)
    except ValueError as e:
        if not str(e).startswith("--pcap"):
            raise
        # a capture that could not be written whole (a full disk): no partial file left behind
        for n in names:
            if n not in existed:
                try:
                    os.remove(n)
                except OSError:
                    pass
        from ..errors import UserError

        raise UserError(f"--pcap {pcap}: {str(e).removeprefix('--pcap').lstrip(': ')}") from None
