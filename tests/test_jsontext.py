"""The native indented JSON (bloatlab.jsontext, crates/py/src/json.rs) is
byte for byte what ``json.dumps(obj, indent=N, default=f)`` writes: floats as
Python reprs them (ties of 17 digits to the even one), strings escaped to
ASCII, json's key and type rules; what it does not take is json's to do,
exceptions included."""

from __future__ import annotations

import collections
import enum
import json
import random
import struct

import pytest

from bloatlab import _native, jsontext


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


class Items(list):
    pass


def _floats(n: int) -> list[float]:
    rnd = random.Random(7)
    xs = [struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0] for _ in range(n)]
    xs += [rnd.random() * 10 ** rnd.randint(-30, 30) for _ in range(n)]
    xs += [rnd.randrange(2**49, 2**60) + rnd.choice([0.25, 0.5, 0.75]) for _ in range(n)]  # 17-digit ties
    return xs + [0.0, -0.0, 1e16, 1e15, 1e-4, 1e-5, 5e-324, float("nan"), float("inf"), -float("inf")]


def test_every_float_is_written_as_pythons_repr():
    xs = _floats(20000)
    assert _native.json_dumps(xs, 2, None) == json.dumps(xs, indent=2)


@pytest.mark.parametrize("indent", [0, 1, 2, 4])
def test_strings_ints_containers_and_keys_follow_jsons_rules(indent):
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    od.move_to_end("b")
    doc = {"s": "a\"b\\c\n\r\t\b\f\x00\x1f\x7f é ☃ 𝄞 ~", "i": [0, -1, 2**63 - 1, 2**63, -(10**40), Level.HIGH, True, None],
           "f": Ratio(1.5), "t": (1, (2,), ()), "l": Items([1, Items()]), "e": {}, "el": [], "od": od,
           1: "int key", 2.5: "float key", True: "bool key", None: "none key", "obj": object(), "set": {1}}
    want = json.dumps(doc, indent=indent, default=str)
    assert _native.json_dumps(doc, indent, str) == want
    assert jsontext.dumps(doc, indent=indent, default=str) == want


def test_what_the_native_encoder_does_not_take_is_left_to_json():
    lone = {"x": "\ud800"}
    assert jsontext.dumps(lone) == json.dumps(lone, indent=2)
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(cycle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        jsontext.dumps({"obj": object()})
    with pytest.raises(TypeError, match="keys must be"):
        jsontext.dumps({(1, 2): 3})
    assert jsontext.dumps({"a": [1]}, indent=None) == json.dumps({"a": [1]})
