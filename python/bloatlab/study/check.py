"""Claims: a published statement, what we measured, and whether it holds.

Every built-in experiment states its claims as :class:`Claim` objects. A
claim has the published number or statement (with its source), the rule by
which we call it reproduced (written out, so a reader can disagree with the
rule instead of trusting a verdict), the measured value, and one of three
verdicts: ``holds``, ``fails``, or ``not evaluated`` with the reason (a key
the engine lacks, a point missing from the store). A number is never made up
to fill a claim.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

HOLDS, FAILS, NOT_EVALUATED = "holds", "fails", "not evaluated"


@dataclass
class Claim:
    id: str
    published: str            # what the source says, with its number
    rule: str                 # how we decide that our run reproduces it
    verdict: str = NOT_EVALUATED
    measured: str = ""        # what we measured, in words and numbers
    reason: str = ""          # why not evaluated
    values: dict = field(default_factory=dict)

    def judge(self, ok: bool, measured: str, **values) -> "Claim":
        self.verdict = HOLDS if ok else FAILS
        self.measured = measured
        self.values.update(values)
        return self

    def skip(self, reason: str) -> "Claim":
        self.verdict = NOT_EVALUATED
        self.reason = reason
        return self


def print_claims(name: str, claims: list[Claim], file=None) -> None:
    import sys

    file = file or sys.stdout
    mark = {HOLDS: "HOLDS", FAILS: "FAILS", NOT_EVALUATED: "NOT EVALUATED"}
    print(f"== check: {name} ==", file=file)
    for c in claims:
        print(f"[{mark[c.verdict]}] {c.id}", file=file)
        print(f"    published: {c.published}", file=file)
        print(f"    rule:      {c.rule}", file=file)
        if c.verdict == NOT_EVALUATED:
            print(f"    why not:   {c.reason}", file=file)
        else:
            print(f"    measured:  {c.measured}", file=file)
    n = {v: sum(c.verdict == v for c in claims) for v in mark}
    print(f"{n[HOLDS]} hold, {n[FAILS]} fail, {n[NOT_EVALUATED]} not evaluated", file=file)


def to_json(claims: list[Claim]) -> list[dict]:
    return [asdict(c) for c in claims]


def write(path: str, name: str, claims: list[Claim], meta: dict | None = None) -> None:
    from .. import files
    from .store import _json_default, _write_json_atomic

    doc = json.loads(json.dumps({"experiment": name, "meta": meta or {}, "claims": to_json(claims)},
                                default=_json_default, allow_nan=False))
    _write_json_atomic(path, files.with_digest(doc))


def read(path: str) -> dict:
    """A check.json, verified against its own checksum (older ones have none); a damaged or malformed one is
    an error naming it."""
    from .. import files
    from ..errors import UserError
    from ..result import read_json

    doc = read_json(path)
    files.verify_digest(path, doc, "run bloatlab reproduce NAME --check again to write it anew")
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise UserError(f"{path}: not a reproduced experiment's checks (no list of claims)")
    return doc


def load(path: str) -> list[Claim]:
    from ..errors import UserError

    try:
        return [Claim(**c) for c in read(path)["claims"]]
    except TypeError:
        raise UserError(f"{path}: a claim of an unknown shape (written by another version?)") from None
