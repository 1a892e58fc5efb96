"""The training workload of the native module's profile-guided build (scripts/pgo.sh): what the profile learns
which branches are hot from.

Every ready scenario (the gallery's and the checkout's ``scenarios/``: FIFO, fq_codel, CAKE, policers, shapers, WiFi,
autorate, BBR, CUBIC, Reno, DCTCP, ...) and every point of the ``--quick`` reproductions but imc2019, each saved as a
sweep's worker saves it (the series through Arrow), all in this one process: the instrumented module writes its
counts when the process exits normally, and a sweep's pool workers are killed at its end. The imc2019 grid is left
out on purpose: it is the benchmark the build is judged on (BENCHMARKS.md, "The imc2019 grid"), so its figure is one
the profile never saw. Exit status 1 where a run failed (setup then builds without the profile and says so).

    LLVM_PROFILE_FILE=DIR/%m_%p.profraw PYTHONPATH=INSTRUMENTED python scripts/pgo_train.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

#: the reproductions run with --quick (``bloatlab reproduce --list``), imc2019 left out (above)
REPRODUCTIONS = ("bbr-vs-cubic-loss", "bufferbloat", "janog-policer-shaper", "janog-lossy-download", "multi-bbr",
                 "google-nsperf", "make-wifi-fast")


def main() -> int:
    import bloatlab
    from bloatlab import ready
    from bloatlab.study import spec, sweep
    from bloatlab.study.experiments import get

    t0 = time.perf_counter()
    failed: list[str] = []
    runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        # the package's gallery (the instrumented copy's) and the checkout's scenarios (beside this script)
        checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios")
        for i, path in enumerate(ready.toml_files(ready.GALLERY) + ready.toml_files(checkout)):
            try:
                bloatlab.run(path).save(f"{tmp}/{i}")
                runs += 1
            except Exception as e:  # noqa: BLE001 - reported, and the build goes on without the profile
                failed.append(f"{path}: {type(e).__name__}: {e}")
        for exp in REPRODUCTIONS:
            s = get(exp).sweep(quick=True)
            points = spec.validate(s, engine="sim")
            for p, payload in zip(points, sweep.point_payloads(s, points, "sim")):
                try:
                    sweep._execute(payload).save(f"{tmp}/{p.run_id}")
                    runs += 1
                except Exception as e:  # noqa: BLE001
                    failed.append(f"{exp} {p.run_id}: {type(e).__name__}: {e}")
    print(f"pgo_train: {runs} runs in {time.perf_counter() - t0:.1f} s" + (f", {len(failed)} failed" if failed else ""))
    for f in failed:
        print(f"pgo_train: failed: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
