"""The native module is built with its profile (scripts/pgo.sh): setup falls back to a plain build where a step fails
and goes on, so this says it where that happened on a machine that has the LLVM tools (CI's, and every developer's
with rustup)."""

import os
import subprocess

import pytest

from conftest import ROOT

PROFILE = os.path.join(ROOT, "target", "pgo", "bloatlab.profdata")


def _llvm_profdata() -> str | None:
    """scripts/pgo.sh's own answer: llvm-profdata of this rustc's LLVM (added with rustup where it can be)."""
    r = subprocess.run(["bash", "-c", "source scripts/pgo.sh && _llvm_profdata"], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    return r.stdout.strip() or None


@pytest.mark.skipif(os.environ.get("BLOATLAB_PGO") == "0", reason="BLOATLAB_PGO=0: setup built the module without a profile")
def test_the_installed_native_module_is_the_profile_guided_build():
    if _llvm_profdata() is None:
        pytest.skip("no llvm-profdata for this rustc (rustup component add llvm-tools): setup builds without PGO")
    assert os.path.exists(PROFILE) and os.path.getsize(PROFILE) > 0, "setup made no PGO profile: its log says which step failed (scripts/pgo.sh)"
    built = os.path.join(ROOT, "target", "pgo-use", "release", "lib_native.so")
    installed = os.path.join(ROOT, "python", "bloatlab", "_native.abi3.so")
    with open(built, "rb") as a, open(installed, "rb") as b:
        assert a.read() == b.read(), "the installed module is not the one built with the profile (target/pgo-use)"
