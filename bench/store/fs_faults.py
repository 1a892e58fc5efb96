"""A campaign of filesystem faults against every verb that writes (issue 36 §5): each verb's output path is
made, in turn, a read-only file system, a full one, a link to nothing, a loop of links, a path through a
regular file, /proc/self, a directory where a file must go, and (for a store) a `.lock` that is a directory.
Each (verb, fault) must end in exit 2 with an `error:` line naming the path, never `internal error` (exit 1)
or a traceback, and leave no partial file under a final name. Root (it mounts two small tmpfs). Prints one
line per verb and the totals (BENCHMARKS.md).

    sudo .venv/bin/python bench/store/fs_faults.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = sys.executable

SCEN = 'name = "f"\nduration = "{d}"\nsample_interval = "{si}"\n[link.down]\nrate = "10Mbit"\n[[flow]]\ncc = "cubic"\nrtt = "20ms"\n'


def cli(*argv, timeout=120):
    p = subprocess.run([PY, "-m", "bloatlab", *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return p.returncode, p.stderr


def main() -> int:
    if os.geteuid() != 0:
        print("skipped: needs root (mounts a small tmpfs)")
        return 0
    d = tempfile.mkdtemp(prefix="fs-faults-")
    full, ro = os.path.join(d, "full"), os.path.join(d, "ro")
    os.makedirs(full)
    os.makedirs(ro)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", ro], check=True)
    try:
        small = os.path.join(d, "s.toml")
        open(small, "w").write(SCEN.format(d="1s", si="10ms"))
        big = os.path.join(d, "big.toml")  # series larger than the 256-KiB disk
        open(big, "w").write(SCEN.format(d="20s", si="1ms"))
        exp = os.path.join(d, "exp.toml")
        open(exp, "w").write('name = "f"\nbase = "s.toml"\n[grid]\n"flow.0.cc" = ["cubic", "bbr"]\n')
        store = os.path.join(d, "store")
        assert cli("sweep", exp, "--out", store, "-q")[0] == 0
        run_dir = os.path.join(d, "run")
        assert cli("run", small, "--out", run_dir)[0] == 0
        afile = os.path.join(d, "afile")
        open(afile, "w").write("x")
        dangling, loop = os.path.join(d, "dangling"), os.path.join(d, "loop")
        os.symlink(os.path.join(d, "nowhere", "x"), dangling)
        os.symlink(loop, loop)
        adir = os.path.join(d, "adir")
        os.makedirs(adir)
        faults = {
            "read-only fs": os.path.join(ro, "x"),
            "full disk": os.path.join(full, "x"),
            "link to nothing": dangling,
            "loop of links": loop,
            "through a file": os.path.join(afile, "x"),
            "/proc/self": "/proc/self",
        }
        verbs = {
            "run --out": lambda p: ("run", big if "full" in p else small, "--out", p),
            "sweep --out": lambda p: ("sweep", exp, "--out", p, "-q"),
            "report --out": lambda p: ("report", run_dir, "--out", p if p != "/proc/self" else "/proc/self/x.html"),
            "plot --out": lambda p: ("plot", run_dir, "--kind", "timeseries", "--out",
                                     p if p != "/proc/self" else "/proc/self/x.png"),
            "run --pcap": lambda p: ("run", big if "full" in p else small, "--pcap", p),
        }
        total = {"exit 2 naming the path": 0, "other": 0}
        for vname, argv in verbs.items():
            cases = dict(faults)
            if vname.startswith("report") or vname.startswith("plot"):
                cases["a directory as the file"] = adir
            outcomes = []
            for fname, path in cases.items():
                rc, err = cli(*argv(path))
                named = any(x in err for x in (path, os.path.dirname(path), os.path.realpath(path)))
                ok = rc == 2 and err.startswith("error:") and named and "internal error" not in err \
                    and "Traceback" not in err
                total["exit 2 naming the path" if ok else "other"] += 1
                if not ok:
                    outcomes.append(f"{fname}: rc {rc} {err.strip().splitlines()[-1][:120] if err.strip() else ''}")
            print(f"{vname}: {len(cases) - len(outcomes)} of {len(cases)} faults exit 2 naming the path"
                  + ("" if not outcomes else "; " + "; ".join(outcomes)))
        lock = os.path.join(store, ".lock")
        if os.path.exists(lock):
            os.remove(lock)
        os.makedirs(lock)
        rc, err = cli("sweep", exp, "--out", store, "-q")
        ok = rc == 2 and ".lock" in err and "internal error" not in err
        total["exit 2 naming the path" if ok else "other"] += 1
        print(f"sweep into a store whose .lock is a directory: {'exit 2 naming it' if ok else f'rc {rc}: {err.strip()[:160]}'}")
        print(f"total: {total['exit 2 naming the path']} of {sum(total.values())} faults exit 2 naming the path; "
              f"{total['other']} otherwise")
        return 0 if total["other"] == 0 else 1
    finally:
        subprocess.run(["umount", "-l", full], check=False)
        subprocess.run(["umount", "-l", ro], check=False)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
