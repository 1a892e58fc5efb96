"""The server operator's part (seeds 001, 003, 004): what this host runs, and
the two sysctl lines that change it, applied so they can be taken back.

``--root DIR`` makes every path relative to DIR (``DIR/proc/sys/...``,
``DIR/etc/sysctl.d/...``), so tests exercise the file handling on a tree of
their own without touching the machine. Writes are atomic (a temporary file
renamed into place); what a change replaced is kept in a state file beside
it, and ``revert`` restores exactly that.
"""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import subprocess

from ..errors import UserError
from ..result import atomic_write_text as atomic_write

CONF = "etc/sysctl.d/90-bloatlab.conf"
STATE = "var/lib/bloatlab/host-state.json"
KEYS = ("net.ipv4.tcp_congestion_control", "net.core.default_qdisc")
QDISCS = ("fq", "fq_codel", "cake", "pfifo_fast")
MODULES = {"tcp_bbr": "bbr", "sch_fq": "fq", "sch_fq_codel": "fq_codel", "sch_cake": "cake"}
#: sysctl files in the order systemd-sysctl reads them (later wins; /etc overrides /run overrides /usr/lib by name)
SYSCTL_DIRS = ("usr/lib/sysctl.d", "lib/sysctl.d", "run/sysctl.d", "etc/sysctl.d")


def _p(root: str, rel: str) -> str:
    return os.path.join(root, rel.lstrip("/"))


def _read(root: str, rel: str) -> str | None:
    try:
        with open(_p(root, rel)) as f:
            return f.read().strip()
    except OSError:
        return None


def _read_gz(path: str) -> str | None:
    import gzip

    try:
        with gzip.open(path, "rt") as f:
            return f.read()
    except (OSError, EOFError):
        return None


def _proc_key(key: str) -> str:
    return "proc/sys/" + key.replace(".", "/")


def sysctl_files(root: str) -> list[str]:
    """Effective sysctl files in the order they are applied (later wins)."""
    by_name: dict[str, str] = {}
    for d in SYSCTL_DIRS:
        for f in sorted(glob.glob(os.path.join(_p(root, d), "*.conf"))):
            by_name[os.path.basename(f)] = f  # a later directory overrides the same name
    files = [by_name[n] for n in sorted(by_name)]
    conf = _p(root, "etc/sysctl.conf")
    if os.path.exists(conf):
        files.append(conf)
    return files


def who_sets(root: str, key: str) -> list[dict]:
    """Every file line that sets ``key``; the last one wins at boot."""
    out = []
    for f in sysctl_files(root):
        try:
            lines = open(f).read().splitlines()
        except OSError:
            continue
        for i, line in enumerate(lines, 1):
            m = re.match(r"^\s*-?\s*([\w./-]+)\s*=\s*(.*?)\s*$", line)
            if m and m.group(1).replace("/", ".") == key:
                out.append({"file": os.path.relpath(f, root) if root != "/" else f, "line": i, "value": m.group(2)})
    return out


def module_state(root: str, mod: str) -> str:
    """``built in``, ``loaded``, ``loadable``, ``available`` (a control the
    kernel lists, origin unknown), ``missing``, or ``unknown`` (no module list,
    no kernel config to tell)."""
    rel = platform.release() if root == "/" else (_read(root, "proc/sys/kernel/osrelease") or platform.release())
    if mod.startswith("tcp_") and mod[4:] in (_read(root, "proc/sys/net/ipv4/tcp_available_congestion_control") or "").split():
        avail_here = True
    else:
        avail_here = False
    builtin_txt = _read(root, f"lib/modules/{rel}/modules.builtin")
    builtin = builtin_txt or ""
    if re.search(rf"/{mod}\.ko(\.\w+)?$", builtin, re.M):
        return "built in"
    loaded = _read(root, "proc/modules") or ""
    if re.search(rf"^{mod}\s", loaded, re.M):
        return "loaded"
    if glob.glob(_p(root, f"lib/modules/{rel}/kernel/net/**/{mod}.ko*"), recursive=True):
        return "loadable"
    cfg_txt = _read(root, f"boot/config-{rel}") or _read_gz(_p(root, "proc/config.gz")) or ""
    cfg = cfg_txt
    if mod.startswith("tcp_"):
        sym = "CONFIG_TCP_CONG_" + mod[4:].upper()
    else:
        sym = "CONFIG_NET_SCH_" + mod[4:].upper()
    m = re.search(rf"^{sym}=(\w)", cfg, re.M)
    if m:
        return {"y": "built in", "m": "loadable"}.get(m.group(1), "missing")
    if avail_here:
        return "available"
    if builtin_txt is None and not cfg_txt and not os.path.isdir(_p(root, f"lib/modules/{rel}")):
        return "unknown"  # nothing on this host tells (a container, a custom kernel without modules)
    return "missing"


def interfaces(root: str) -> list[dict]:
    out = []
    for dev in sorted(glob.glob(_p(root, "sys/class/net/*"))):
        name = os.path.basename(dev)
        bql = glob.glob(os.path.join(dev, "queues/tx-*/byte_queue_limits"))
        qdisc = None
        if root == "/":
            try:
                j = json.loads(subprocess.run(["tc", "-j", "qdisc", "show", "dev", name, "root"], capture_output=True, text=True, timeout=5).stdout or "[]")
                qdisc = j[0]["kind"] if j else None
            except (OSError, ValueError, subprocess.TimeoutExpired, KeyError, IndexError):
                qdisc = None
        out.append({"name": name, "root_qdisc": qdisc, "bql": bool(bql)})
    return out


def distro(root: str) -> dict:
    txt = _read(root, "etc/os-release") or ""
    d = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', txt, re.M))
    return {"id": d.get("ID", "unknown"), "name": d.get("PRETTY_NAME", d.get("NAME", "unknown"))}


HINTS = {
    "openwrt": {"tcp_bbr": "opkg install kmod-tcp-bbr", "sch_cake": "opkg install kmod-sched-cake (or the sqm-scripts package)",
                "sch_fq": "opkg install kmod-sched", "sch_fq_codel": "built into OpenWrt kernels"},
    "debian": {"tcp_bbr": "modprobe tcp_bbr (in linux-image since 4.9)", "sch_cake": "modprobe sch_cake (kernel >= 4.19)"},
    "ubuntu": {"tcp_bbr": "modprobe tcp_bbr (in linux-modules since 4.9)", "sch_cake": "modprobe sch_cake (kernel >= 4.19)"},
}


def check(root: str = "/") -> dict:
    rel = _read(root, "proc/sys/kernel/osrelease") or platform.release()
    avail = (_read(root, "proc/sys/net/ipv4/tcp_available_congestion_control") or "").split()
    dist = distro(root)
    mods = {m: module_state(root, m) for m in MODULES}
    hints = []
    for m, st in mods.items():
        if st == "missing":
            h = HINTS.get(dist["id"], {}).get(m)
            hints.append(f"{m} is not available" + (f": {h}" if h else ""))
        elif st == "loadable" and m == "tcp_bbr" and "bbr" not in avail:
            hints.append("tcp_bbr is loadable: `modprobe tcp_bbr` (applying bbr loads it too)")
    return {
        "kernel": rel,
        "distro": dist,
        "tcp_available_congestion_control": avail,
        "tcp_congestion_control": _read(root, _proc_key(KEYS[0])),
        "default_qdisc": _read(root, _proc_key(KEYS[1])),
        "modules": mods,
        "interfaces": interfaces(root),
        "set_by": {k: who_sets(root, k) for k in KEYS},
        "hints": hints,
    }


def _is_root() -> bool:
    return os.geteuid() == 0


def plan(root: str, cc: str | None, qdisc: str | None) -> dict:
    """The change as values: {key: (now, new)}; refuses what this host lacks."""
    if cc is None and qdisc is None:
        raise UserError("host apply: give --cc and/or --qdisc")
    changes = {}
    if cc is not None:
        avail = (_read(root, "proc/sys/net/ipv4/tcp_available_congestion_control") or "").split()
        if cc not in avail and module_state(root, f"tcp_{cc}") not in ("loadable", "loaded", "built in", "available"):
            raise UserError(f"--cc {cc}: this kernel offers {' '.join(avail) or 'nothing readable'} and has no tcp_{cc} module")
        changes[KEYS[0]] = (_read(root, _proc_key(KEYS[0])), cc)
    if qdisc is not None:
        if qdisc not in QDISCS:
            raise UserError(f"--qdisc: expected one of {', '.join(QDISCS)}, got {qdisc!r}")
        mod = f"sch_{qdisc}"
        if module_state(root, mod) == "missing":
            raise UserError(f"--qdisc {qdisc}: this kernel has no {mod} (built in, loaded or loadable)")
        changes[KEYS[1]] = (_read(root, _proc_key(KEYS[1])), qdisc)
    return changes


def conf_text(changes: dict) -> str:
    lines = ["# written by `bloatlab host apply`; `bloatlab host revert` takes it back", ""]
    lines += [f"{k} = {new}" for k, (_, new) in changes.items()]
    return "\n".join(lines) + "\n"


def apply(root: str, cc: str | None, qdisc: str | None, dry_run: bool = False) -> dict:
    changes = plan(root, cc, qdisc)
    conf = _p(root, CONF)
    result = {"file": conf, "text": conf_text(changes), "changes": {k: {"was": a, "now": b} for k, (a, b) in changes.items()}}
    if dry_run:
        result["dry_run"] = True
        return result
    if root == "/" and not _is_root():
        raise UserError("host apply: needs root (try sudo, or --dry-run to see the change)")
    state_path = _p(root, STATE)
    if os.path.exists(state_path):
        prev = json.load(open(state_path))
    else:
        prev = {"conf_before": _read(root, CONF), "values_before": {}}
    for k, (was, _) in changes.items():
        prev["values_before"].setdefault(k, was)
    atomic_write(state_path, json.dumps(prev, indent=2))
    atomic_write(conf, result["text"])
    for k, (_, new) in changes.items():
        _set_running(root, k, new)
    got = {k: _read(root, _proc_key(k)) for k in changes}
    bad = {k: v for k, v in got.items() if v != changes[k][1]}
    if bad:
        raise UserError(f"host apply: the running values did not take: {bad} (the file {conf} is written; `bloatlab host revert` undoes it)")
    result["verified"] = got
    return result


def _set_running(root: str, key: str, value: str) -> None:
    path = _p(root, _proc_key(key))
    if root == "/" and key == KEYS[0]:
        subprocess.run(["modprobe", f"tcp_{value}"], capture_output=True)  # harmless when built in
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as e:
        hint = ""
        if key == KEYS[0] and e.errno == 1:
            allowed = (_read(root, "proc/sys/net/ipv4/tcp_allowed_congestion_control") or "").split()
            hint = (f" (in a network namespace other than the host's the kernel only allows "
                    f"net.ipv4.tcp_allowed_congestion_control = {' '.join(allowed) or '?'})")
        raise UserError(f"host apply: cannot set {key} = {value}: {e.strerror}{hint}") from None


def revert(root: str, dry_run: bool = False) -> dict:
    state_path = _p(root, STATE)
    if not os.path.exists(state_path):
        raise UserError("host revert: nothing to revert (no change by `bloatlab host apply` is recorded)")
    st = json.load(open(state_path))
    out = {"restore": st["values_before"], "conf_before": st["conf_before"]}
    if dry_run:
        out["dry_run"] = True
        return out
    if root == "/" and not _is_root():
        raise UserError("host revert: needs root")
    conf = _p(root, CONF)
    if st["conf_before"] is None:
        if os.path.exists(conf):
            os.remove(conf)
    else:
        atomic_write(conf, st["conf_before"] + "\n")
    for k, v in st["values_before"].items():
        if v is not None:
            _set_running(root, k, v)
    os.remove(state_path)
    return out


# ---------------------------------------------------------------- before/after (seed 004's experiment)

def throughput_test(server: str, secs: float, parallel: int = 1, interval_s: float = 1.0, show: bool = True) -> dict:
    """One upload from this host to ``server`` (a ``bloatlab-probe server``) with
    the host's *default* congestion control (no ``-C``: the sysctl decides, as
    for any program), reported as iperf-like interval lines computed from the
    sender's TCP_INFO series (delivered bytes and retransmits per interval)."""
    import numpy as np

    from .measure import _probe, _split_host

    h, port = _split_host(server)
    j = _probe(["tcp", "client", h, "-p", str(port), "-t", f"{secs:g}", "-P", str(parallel), "-i", "0"], timeout=secs + 60, who="host before-after")
    s = j["raw"]["series"]["flows"]
    t = np.asarray(s.get("t", []), float)
    fid = np.asarray(s.get("flow", []))
    dl = np.asarray(s.get("delivered_bytes", []), float)
    rx = np.asarray(s.get("retransmits", []), float)
    lines = []
    end = float(j.get("duration_s") or secs)
    edges = np.arange(0.0, end + 1e-9, interval_s)
    for a, b in zip(edges[:-1], edges[1:]):
        byt = ret = 0.0
        for f in np.unique(fid):
            m = fid == f
            tf, df, rf = t[m], dl[m], rx[m]
            if tf.size == 0:
                continue
            # cumulative counters: the value at the interval's end minus at its start
            at = lambda arr, x: float(arr[tf <= x][-1]) if np.any(tf <= x) else 0.0  # noqa: E731
            byt += at(df, b) - at(df, a)
            ret += at(rf, b) - at(rf, a)
        lines.append({"from_s": float(a), "to_s": float(b), "mbps": byt * 8 / (b - a) / 1e6, "retransmits": int(ret)})
        if show:
            print(f"  [{a:5.1f}-{b:5.1f} s] {byt / 1e6:8.2f} MB {lines[-1]['mbps']:8.2f} Mbit/s  retr {int(ret)}", flush=True)
    flows = j.get("flows", [])
    cc = (j.get("raw", {}).get("meta", {}) or {}).get("cc")
    return {"cc": cc if isinstance(cc, str) else (flows[0].get("cc") if flows else None),
            "goodput_mbps": float(j.get("total_goodput_mbps") or 0.0),
            "retransmits": int(sum(f.get("retransmits", 0) for f in flows)),
            "retrans_rate": float(np.mean([f["retrans_rate"] for f in flows if f.get("retrans_rate") is not None] or [0.0])),
            "rtt_p50_ms": float(np.median([f["rtt_ms"]["p50"] for f in flows if f.get("rtt_ms")] or [float("nan")])),
            "intervals": lines}


def before_after(server: str, cc: str | None, qdisc: str | None, secs: float = 10.0, parallel: int = 1,
                 keep: bool = False, root: str = "/", show: bool = True) -> dict:
    """Seed 004 in one command: a throughput test, ``apply``, the same test, the
    comparison, and ``revert`` unless ``keep``. A failure after ``apply`` still
    reverts (the host is left as it was found)."""
    from .measure import _split_host

    _split_host(server)  # a bad HOST[:PORT] is refused before anything else
    if cc is None and qdisc is None:
        cc, qdisc = "bbr", "fq"
    plan(root, cc, qdisc)  # refuse before measuring anything
    if root == "/" and not _is_root():
        raise UserError("host before-after: needs root to apply the change (try sudo)")
    if show:
        print(f"before: {_read(root, _proc_key(KEYS[0]))} / {_read(root, _proc_key(KEYS[1]))}", flush=True)
    before = throughput_test(server, secs, parallel, show=show)
    applied = apply(root, cc, qdisc)
    try:
        if show:
            print("after: " + ", ".join(f"{k} = {c['now']}" for k, c in applied["changes"].items()), flush=True)
        after = throughput_test(server, secs, parallel, show=show)
    finally:
        if not keep:
            revert(root)
    notes = []
    if qdisc is not None:
        notes.append("net.core.default_qdisc applies to qdiscs created after the change (an interface brought up again, "
                     "or `tc qdisc replace dev IFACE root fq`); BBR paces by itself since Linux 4.13, so the control's "
                     "change shows at once")
    ratio = after["goodput_mbps"] / before["goodput_mbps"] if before["goodput_mbps"] > 0 else None
    return {"server": server, "before": before, "after": after, "ratio": ratio, "applied": applied["changes"],
            "kept": keep, "notes": notes}
