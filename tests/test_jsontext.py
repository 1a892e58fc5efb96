"""The indented JSON of results (bloatlab.jsontext, orjson): the text json.dumps(indent=2) gives for what a
summary holds, and valid JSON where json's is not."""

import json
import math

import numpy as np

from bloatlab.jsontext import indented


def test_a_summary_like_document_is_written_as_json_dumps_with_indent_2_writes_it():
    doc = {
        "engine": "sim",
        "seed": 1,
        "duration_s": 10.0,
        "flows": [
            {"id": 0, "goodput_mbps": 95.33066666666667, "rtt_ms": {"p50": 100.012, "p99": 1e-05}, "fct_s": None,
             "completed": False, "retrans_rate": 0.0, "big": 2**63 - 1},
            {"id": 1, "goodput_mbps": 1.5e16, "rtt_ms": {}, "tags": [], "neg": -0.0, "tiny": 5e-324},
        ],
        "links": {"down": {"drops": {"queue_full": 0}}},
    }
    text = indented(doc)
    assert json.loads(text) == doc
    # the same layout and numbers as Python's json: every line but the float spellings json writes otherwise
    ours, theirs = text.decode().splitlines(), json.dumps(doc, indent=2).splitlines()
    assert len(ours) == len(theirs)
    differ = [(a, b) for a, b in zip(ours, theirs) if a != b]
    # json writes 1e-05 / 1.5e+16, orjson 1e-5 / 1.5e16: the same numbers
    assert all(float(a.split(": ")[1].rstrip(",")) == float(b.split(": ")[1].rstrip(",")) for a, b in differ), differ
    assert text.endswith(b"}\n")


def test_nan_is_null_text_stays_utf8_and_numpy_scalars_are_numbers():
    text = indented({"x": math.nan, "name": "Zürich ✓", "n": np.int64(7), "f": np.float64(0.25)}, default=str)
    assert json.loads(text) == {"x": None, "name": "Zürich ✓", "n": 7, "f": 0.25}
    assert "Zürich ✓".encode() in text


def test_what_json_has_no_type_for_goes_through_default():
    class Odd:
        def __str__(self):
            return "odd"

    assert json.loads(indented({"o": Odd()}, default=str)) == {"o": "odd"}
