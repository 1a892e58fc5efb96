"""`bloatlab host check/apply/revert` on a --root tree (never the machine's own files)."""

import json
import os

from conftest import run_cli


def make_root(tmp_path, cc="cubic", qdisc="pfifo_fast", avail="reno cubic bbr"):
    r = tmp_path / "root"
    (r / "proc/sys/net/ipv4").mkdir(parents=True)
    (r / "proc/sys/net/core").mkdir(parents=True)
    (r / "proc/sys/kernel").mkdir(parents=True)
    (r / "proc/sys/net/ipv4/tcp_congestion_control").write_text(cc + "\n")
    (r / "proc/sys/net/ipv4/tcp_available_congestion_control").write_text(avail + "\n")
    (r / "proc/sys/net/core/default_qdisc").write_text(qdisc + "\n")
    (r / "proc/sys/kernel/osrelease").write_text("6.1.0-test\n")
    (r / "proc/modules").write_text("sch_fq 16384 0 - Live 0x0\n")
    (r / "lib/modules/6.1.0-test").mkdir(parents=True)
    (r / "lib/modules/6.1.0-test/modules.builtin").write_text("kernel/net/ipv4/tcp_bbr.ko\nkernel/net/sched/sch_fq_codel.ko\n")
    (r / "etc/sysctl.d").mkdir(parents=True)
    (r / "usr/lib/sysctl.d").mkdir(parents=True)
    (r / "usr/lib/sysctl.d/50-default.conf").write_text("net.core.default_qdisc = fq_codel\n")
    (r / "etc/sysctl.d/99-local.conf").write_text("# mine\nnet.core.default_qdisc=pfifo_fast\n")
    (r / "etc/os-release").write_text('ID=debian\nPRETTY_NAME="Debian GNU/Linux 12"\n')
    (r / "sys/class/net/eth0/queues/tx-0/byte_queue_limits").mkdir(parents=True)
    return r


def test_check_reports_modules_and_which_file_wins(tmp_path):
    r = make_root(tmp_path)
    out = run_cli("host", "check", "--root", str(r), "--json")
    assert out.returncode == 0, out.stderr
    j = json.loads(out.stdout)
    assert j["kernel"] == "6.1.0-test" and j["tcp_congestion_control"] == "cubic"
    assert j["modules"] == {"tcp_bbr": "built in", "sch_fq": "loaded", "sch_fq_codel": "built in", "sch_cake": "missing"}
    wins = j["set_by"]["net.core.default_qdisc"]
    assert [w["file"] for w in wins] == ["usr/lib/sysctl.d/50-default.conf", "etc/sysctl.d/99-local.conf"]
    assert wins[-1]["value"] == "pfifo_fast"
    assert j["interfaces"] == [{"name": "eth0", "root_qdisc": None, "bql": True}]
    assert any("sch_cake" in h for h in j["hints"])


def test_apply_writes_one_file_sets_verifies_and_revert_restores_exactly(tmp_path):
    r = make_root(tmp_path)
    dry = run_cli("host", "apply", "--cc", "bbr", "--qdisc", "fq", "--root", str(r), "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert not (r / "etc/sysctl.d/90-bloatlab.conf").exists(), "a dry run changes nothing"
    out = run_cli("host", "apply", "--cc", "bbr", "--qdisc", "fq", "--root", str(r), "--json")
    assert out.returncode == 0, out.stderr
    conf = (r / "etc/sysctl.d/90-bloatlab.conf").read_text()
    assert "net.ipv4.tcp_congestion_control = bbr" in conf and "net.core.default_qdisc = fq" in conf
    assert (r / "proc/sys/net/ipv4/tcp_congestion_control").read_text().strip() == "bbr"
    assert json.loads(out.stdout)["verified"] == {"net.ipv4.tcp_congestion_control": "bbr", "net.core.default_qdisc": "fq"}
    assert not [f for f in os.listdir(r / "etc/sysctl.d") if ".tmp" in f], "no half-written file left"
    back = run_cli("host", "revert", "--root", str(r))
    assert back.returncode == 0, back.stderr
    assert (r / "proc/sys/net/ipv4/tcp_congestion_control").read_text().strip() == "cubic"
    assert (r / "proc/sys/net/core/default_qdisc").read_text().strip() == "pfifo_fast"
    assert not (r / "etc/sysctl.d/90-bloatlab.conf").exists()
    again = run_cli("host", "revert", "--root", str(r))
    assert again.returncode == 2 and "nothing to revert" in again.stderr


def test_apply_refuses_what_the_kernel_lacks(tmp_path):
    r = make_root(tmp_path)
    for args, key in ((["--cc", "vegas"], "--cc vegas"), (["--qdisc", "cake"], "--qdisc cake"), (["--qdisc", "sfq"], "--qdisc"), ([], "--cc")):
        out = run_cli("host", "apply", *args, "--root", str(r))
        assert out.returncode == 2 and key in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (r / "etc/sysctl.d/90-bloatlab.conf").exists()
    out = run_cli("host", "check", "--root", str(tmp_path / "nope"))
    assert out.returncode == 2 and "--root" in out.stderr
