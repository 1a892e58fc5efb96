"""``measure --record DIR`` and ``--replay DIR`` (advise/recording.py): every probe run kept, and measure's analysis
run again from the runs offline. Exact values of the recorder and the replayer; the bad recordings a user may hand
``--replay``; one emulated path recorded and replayed (root: tests/test_advise.py)."""

import json
import os
import re
import threading

import pytest

from bloatlab.advise import measure as M
from bloatlab.advise import recording as R
from bloatlab.errors import UserError

from conftest import run_cli

HOST, PORT, SECRET = "10.77.0.2", 5301, "s3cret"


def lines(d):
    return [json.loads(x) for x in (d / R.FILE).read_text().splitlines()]


def record(d, runs):
    """A recording of ``runs`` (args, result-or-error) made through the Recorder as measure makes one."""
    r = R.Recorder(str(d), HOST, PORT, {"quick": True, "flows": 4, "up": True, "secret": True})
    for args, out in runs:
        def fn(out=out):
            if isinstance(out, Exception):
                raise out
            return out
        try:
            r.run(args, fn)
        except UserError:
            pass
    r.close()


def test_a_recording_keeps_each_run_in_order_its_error_too_and_never_the_secret(tmp_path):
    d = tmp_path / "rec"
    record(d, [(["udp", "client", HOST, "-p", str(PORT), "--count", "100", "--secret", SECRET], {"probes": [1]}),
               (["udp", "train", HOST, "-p", str(PORT), "--up"], UserError("measure (up packet train): no answer"))])
    head, one, two = lines(d)
    assert head["format"] == R.FORMAT and (head["host"], head["port"]) == (HOST, PORT) and head["options"]["secret"]
    assert one["args"] == ["udp", "client", "{host}", "-p", "{port}", "--count", "100", "--secret", "{secret}"]
    assert one["result"] == {"probes": [1]} and 0 <= one["start_s"] <= one["end_s"] <= two["start_s"] <= two["end_s"]
    assert two["error"] == "measure (up packet train): no answer" and "result" not in two
    assert SECRET not in (d / R.FILE).read_text()
    # a second recording into the same directory would lose the first: refused, the first left whole
    with pytest.raises(UserError, match="exists"):
        R.Recorder(str(d), HOST, PORT, {})
    assert len(lines(d)) == 3


def test_the_host_is_replaced_only_as_itself_and_a_derived_value_that_equals_it_stays():
    # a host that is a number ("--count 5301" is not the port: only the value after -p is)
    assert R.normalized(["load", "5301", "-p", "5301", "--count", "5301"], "5301", 5301) == [
        "load", "{host}", "-p", "{port}", "--count", "5301"]
    assert R.shape(["load", "{host}", "-t", "7.4", "-C", "cubic"]) == ("load", "{host}", "-t", "*", "-C", "cubic")
    # a packet train's count is derived even where the probe's default was asked for (none): a recording made
    # before trains were sized to the rate serves today's smaller one
    old = ["udp", "train", "{host}", "-p", "{port}", "--secret", "{secret}"]
    assert R.shape(old) == R.shape(["udp", "train", "{host}", "-p", "{port}", "--count", "333", "--secret", "{secret}"])
    assert R.shape(["udp", "train", "{host}", "-p", "{port}", "--up"]) == R.shape(
        ["udp", "train", "{host}", "-p", "{port}", "--up", "--count", "40"])


def test_a_replay_serves_each_run_by_its_arguments_whatever_the_order_and_moves_the_clock_with_them(tmp_path):
    d = tmp_path / "rec"
    a = ["udp", "client", HOST, "-p", str(PORT), "--count", "200", "--secret", SECRET]
    b = ["udp", "client", HOST, "-p", str(PORT), "--count", "3000", "--send-interval", "500us", "--secret", SECRET]
    record(d, [(a, {"n": "a"}), (b, {"n": "b"})])
    starts = [x["start_s"] for x in lines(d)[1:]]
    ends = [x["end_s"] for x in lines(d)[1:]]
    s = R.Replayer(str(d))
    assert s.now() == 0.0
    # asked the other way round (the idle probes and the loss stream run at the same time), each gets its own
    assert s.run(b, None) == {"n": "b"} and s.now() == ends[1]
    assert s.run(a, None) == {"n": "a"} and s.now() == ends[1]  # the clock never goes back
    s.sleep(1.5)
    assert s.now() == ends[1] + 1.5 and starts[0] <= ends[0]
    assert s.close() == {"dir": str(d), "runs": 2, "substituted": [], "unused": []}


def test_the_clock_gives_back_its_recorded_reads_between_the_same_runs(tmp_path):
    # a train's refill check reads the time between two trains: replayed, the same seconds as recorded
    d = tmp_path / "rec"
    r = R.Recorder(str(d), HOST, PORT, {})
    a = ["udp", "train", HOST, "-p", str(PORT)]
    r.now()
    r.run(a, lambda: {"train": {}})
    r.now(), r.now()
    r.close()
    got = lines(d)
    assert [sorted(x) for x in got[1:]] == [["now_s"], ["args", "end_s", "result", "start_s"], ["now_s"], ["now_s"]]
    rel = [x["now_s"] for x in got if "now_s" in x]
    s = R.Replayer(str(d))
    assert s.now() == rel[0]
    s.run(a, None)
    assert (s.now(), s.now()) == (rel[1], rel[2])
    # read more often than recorded (changed code): the clock as the runs and the sleeps move it
    s.sleep(2.0)
    assert s.now() == rel[2] + 2.0


def test_a_run_asked_with_another_derived_value_is_served_its_counterpart_and_named_a_missing_one_is_an_error(tmp_path):
    d = tmp_path / "rec"
    load = ["load", HOST, "-p", str(PORT), "--down", "4", "--up", "0", "-t", "7.43", "-C", "cubic"]
    record(d, [(load, {"flows": [1]}), (load[:-1] + ["bbr"], {"flows": [2]}),
               (["udp", "train", HOST, "-p", str(PORT)], UserError("measure (packet train): gone"))])
    s = R.Replayer(str(d))
    # today's code asks a longer fill: the recorded fill is served, and said
    asked = load[:9] + ["9.1"] + load[10:]
    assert s.run(asked, None) == {"flows": [1]}
    assert s.substituted == ["asked `load {host} -p {port} --down 4 --up 0 -t 9.1 -C cubic`, "
                             "served `load {host} -p {port} --down 4 --up 0 -t 7.43 -C cubic`"]
    # an up load is no counterpart of a down one: --down and --up are not derived values
    with pytest.raises(UserError, match="does not have: `bloatlab-probe load {host} -p {port} --down 0 --up 4"):
        s.run(load[:5] + ["0", "--up", "4"] + load[8:], None)
    # a recorded error is raised again, as the live run raised it
    with pytest.raises(UserError, match=r"^measure \(packet train\): gone$"):
        s.run(["udp", "train", HOST, "-p", str(PORT)], None)
    assert s.close()["unused"] == ["load {host} -p {port} --down 4 --up 0 -t 7.43 -C bbr"]


def test_a_replay_serves_a_copy_the_analysis_may_change(tmp_path):
    d = tmp_path / "rec"
    record(d, [(["udp", "train", HOST, "-p", str(PORT)], {"train": {"lost_seq": [3]}})])
    s = R.Replayer(str(d))
    s.run(["udp", "train", HOST, "-p", str(PORT)], None)["train"]["lost_seq"].append(4)
    assert lines(d)[1]["result"] == {"train": {"lost_seq": [3]}}


def test_measure_goes_through_the_session_and_back_to_the_network_after_it(tmp_path, monkeypatch):
    # measure's _probe, clock and sleeps all pass through the active session; outside one they are live
    d = tmp_path / "rec"
    record(d, [(["udp", "train", HOST, "-p", str(PORT)], {"train": {"k": 1}})])
    monkeypatch.setattr(M, "_run_probe", lambda *a: pytest.fail("a replay went to the network"))
    s = R.Replayer(str(d))
    with R.session(s):
        assert M._probe(["udp", "train", HOST, "-p", str(PORT)], timeout=1) == {"train": {"k": 1}}
        M._sleep(100.0)  # a refill wait: the recorded clock moves, no time passes
        assert M._now() == lines(d)[1]["end_s"] + 100.0
    assert isinstance(R.active(), R.Live) and not isinstance(R.active(), R.Replayer)
    monkeypatch.setattr(M, "_run_probe", lambda *a: {"live": True})
    assert M._probe(["x"], timeout=1) == {"live": True}


@pytest.mark.parametrize("text, key", [
    ("", "not a recording of format 1"),
    ('{"format": 2, "host": "h", "port": 1, "options": {}}\n', "its header's format: 2"),
    ('{"format": 1, "port": 1, "options": {}}\n', "line 1: header key 'host'"),
    ('{"format": 1, "host": "h", "port": 1, "options": {}}\n{"args": ["x"]\n', "line 2: not JSON"),
    ('{"format": 1, "host": "h", "port": 1, "options": {}}\n[1]\n', "line 2: expected an object"),
    ('{"format": 1, "host": "h", "port": 1, "options": {}}\n{"args": ["x"], "start_s": 0, "end_s": 1}\n',
     "line 2: a run needs args"),
])
def test_a_bad_recording_is_a_clear_error_naming_the_file_and_line(tmp_path, text, key):
    (tmp_path / R.FILE).write_text(text)
    r = run_cli("measure", "--replay", str(tmp_path), "--json")
    assert r.returncode == 2 and key in r.stderr and R.FILE in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_replay_and_record_refuse_what_does_not_go_with_them(tmp_path):
    for args, key in ((["measure", "--replay", str(tmp_path)], "no recording there"),
                      (["measure", "h", "--replay", str(tmp_path)], "no HOST and no --record"),
                      (["measure"], "HOST is needed")):
        r = run_cli(*args)
        assert r.returncode == 2 and key in r.stderr and "Traceback" not in r.stderr, r.stderr
    (tmp_path / R.FILE).write_text("kept\n")
    r = run_cli("measure", "127.0.0.1:1", "--record", str(tmp_path))
    assert r.returncode == 2 and "exists" in r.stderr and (tmp_path / R.FILE).read_text() == "kept\n", r.stderr


def test_concurrent_runs_are_recorded_whole(tmp_path):
    # the idle probes' rest and the loss stream record from two threads: each line whole
    r = R.Recorder(str(tmp_path / "rec"), HOST, PORT, {})
    big = {"raw": list(range(20000))}
    ts = [threading.Thread(target=lambda i=i: r.run(["udp", "client", HOST, "--count", str(i)], lambda: big)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    r.close()
    got = lines(tmp_path / "rec")[1:]
    assert sorted(int(x["args"][-1]) for x in got) == list(range(8)) and all(x["result"] == big for x in got)


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "recordings")


def test_a_campaigns_recorded_path_replays_with_todays_reading():
    """Campaign seed 79 path 31 (a CoDel at 136 Mbit/s and 382 ms, through the emulator, 2026-11-29), its recording
    gzipped: the code of its day read the down direction a FIFO (the train could not show the AQM's burst, and the
    fill's window contradicted nothing); today's reads what BBR's standing queue says against the slow start
    (classify.bbr_stood_deeper), and the train the recording holds for the FIFO reading is not asked for."""
    m = M.measure(None, show=False, replay=os.path.join(DATA, "seed79-path31"))
    d = m.report["down"]
    assert (d["limiter"], d["aqm_qdisc"], d["fifo_check"]["rule"]) == ("aqm", "codel", "bbr")
    assert d["fifo_check"]["slow_start_ms"] == pytest.approx(70.07, abs=0.01)
    assert d["rate_mbps"] == pytest.approx(136.1, abs=0.05) and m.report["base_rtt_ms"]["p50"] == pytest.approx(382.0, abs=1)
    # the up direction (CoDel at 36.0 Mbit/s) too, since its fill's own window is no longer counted twice against its
    # ramp's 12 retransmissions (buffer.slow_start_depth's ``own_window``): its slow start overflowed at 93.9 ms, BBR
    # stood at 270, so no up AQM train is asked for either; the rate is BBR's busy windows', 35.0 for the truth's
    # 36.007 (the train's drained tail read 36.007)
    u = m.report["up"]
    assert (u["limiter"], u["aqm_qdisc"], u["fifo_check"]["rule"]) == ("aqm", "codel", "bbr")
    assert u["fifo_check"]["slow_start_ms"] == pytest.approx(93.9, abs=0.05)
    assert u["rate_mbps"] == pytest.approx(35.01, abs=0.01)
    assert m.report["replay"]["unused"] == ["udp train {host} -p {port} --count 1000",
                                            "udp train {host} -p {port} --up --count 1000"]
    # the fills' flows' p95 weighted by the bytes each delivered (evidence.flows_rtt: down 5.06 ms where the plain
    # median over the flows read 9.02) put the quiet gap before each BBR phase a few ms short of the recorded one:
    # those runs are served for them, nothing else
    subs = m.report["replay"]["substituted"]
    assert len(subs) == 2 and all("-C bbr" in x for x in subs)
    for x in subs:
        asked, served = x.removeprefix("asked `").rstrip("`").split("`, served `")
        idle = [int(re.search(r"--idle (\d+)ms", y).group(1)) for y in (asked, served)]
        assert re.sub(r"--idle \d+ms", "", asked) == re.sub(r"--idle \d+ms", "", served) and 0 < idle[1] - idle[0] <= 5


def test_a_gzipped_recording_that_is_not_gzip_is_a_clear_error(tmp_path):
    (tmp_path / (R.FILE + ".gz")).write_bytes(b"not gzip at all")
    r = run_cli("measure", "--replay", str(tmp_path), "--json")
    assert r.returncode == 2 and "probes.jsonl.gz" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_tape_keeps_the_runs_and_reads_and_a_rewind_serves_them_again_in_order():
    """recording.Tape passes every run, read and sleep through the session in force and keeps the runs' answers
    (an error too) and the reads; recording.Rewind serves them again in their order where a run is asked as it was
    run but for its --count, with the taped clock and no sleep while runs are left; from a run asked otherwise it
    goes through the session it was given (the tape's rest dropped)."""
    calls, clock, slept = [], [100.0], []

    class Outer(R.Live):
        def run(self, args, fn):
            calls.append(args)
            return fn()

        def now(self):
            clock[0] += 1.0
            return clock[0]

        def sleep(self, s):
            slept.append(s)

    outer = Outer()
    tape = R.Tape(outer)
    with R.session(tape):
        assert R.active().run(["udp", "train", "h", "--count", "716"], lambda: {"n": 1}) == {"n": 1}
        t1 = R.active().now()
        with pytest.raises(UserError, match="refused"):
            R.active().run(["udp", "train", "h", "--rate", "5bit"], lambda: (_ for _ in ()).throw(UserError("refused")))
        R.active().sleep(0.5)
        t2 = R.active().now()
    assert (t1, t2, slept, len(calls)) == (101.0, 102.0, [0.5], 2)
    got = {"n": 1}
    rw = R.Rewind(tape, outer)
    # the same train with another count: served as it was answered (a copy), with the taped clock; no sleep
    served = rw.run(["udp", "train", "h", "--count", "1000"], lambda: pytest.fail("sent again"))
    assert served == got and served is not tape.runs[0][1]
    assert rw.now() == 101.0
    rw.sleep(3.0)
    with pytest.raises(UserError, match="refused"):
        rw.run(["udp", "train", "h", "--rate", "5bit"], lambda: pytest.fail("sent again"))
    assert (rw.now(), slept, len(calls)) == (102.0, [0.5], 2)
    # past the tape: through the outer session
    assert rw.run(["udp", "train", "h", "--rate", "6bit"], lambda: {"n": 2}) == {"n": 2}
    assert (rw.now(), len(calls)) == (103.0, 3)
    rw.sleep(1.0)
    assert slept == [0.5, 1.0]
    # a run asked otherwise than taped (another pace): sent, and the tape's rest is not served after it
    rw2 = R.Rewind(tape, outer)
    assert rw2.run(["udp", "train", "h", "--rate", "7bit"], lambda: {"n": 3}) == {"n": 3}
    assert rw2.run(["udp", "train", "h", "--count", "1000"], lambda: {"n": 4}) == {"n": 4}
    assert rw2.now() == 104.0 and len(calls) == 5


def test_a_policers_recorded_path_reads_alike_without_its_rate_phases():
    """Campaign seed 146 path 30 (a policer at 5.15 Mbit/s down, 2.14 up, on ports of 9.88 and 4.10 Mbit/s, a
    38.2-ms bucket, over 2.43 ms; through the emulator, 2026-12-04; its recording gzipped). Each fill read a
    policer, so its trains go before the rate phase (measure._policer_trains_first); their paced trains read the
    policed rates, so neither BBR phase is asked (the two recorded ones are unused: 5.2 s of its 20.2). Every
    figure is the one the code of its day (980efe7) read with them: the rates 5.150 and 2.135 Mbit/s (the paced
    trains'; BBR had read 5.172 and 2.103), the buckets 24 452 and 9 556 B, the ports 9.883 and 4.098 Mbit/s, the
    port buffers 8 075 and 3 710 B."""
    m = M.measure(None, show=False, replay=os.path.join(DATA, "seed146-path30"))
    r = m.report
    assert sorted(r["replay"]["unused"]) == sorted(
        f"load {{host}} -p {{port}} --down {dn} --up {up} -t 3 --idle 250ms --probe-interval 10ms -C bbr "
        f"--no-self-probes --no-foreign-probes --sample-interval 20ms --halt-rtts 20 --halt-packets 200"
        for dn, up in ((4, 0), (0, 4)))
    want = {"down": (5.1502, 24452, 9.8833, 8075), "up": (2.1346, 9556, 4.0975, 3710)}
    for d, (rate, bucket, port, fifo) in want.items():
        x = r[d]
        assert x["limiter"] == "policer" and not x["rate_phase"]["ran"]
        assert x["rate_phase"]["why"].startswith("the policer's trains first: the paced train's tail read the policed rate")
        assert "bbr" not in x["rate_by_cc"] and x["rate_from"]["paced_train"] == "tail"
        assert x["rate_mbps"] == pytest.approx(rate, abs=1e-4) and x["bucket_bytes"] == bucket
        assert x["port_mbps"] == pytest.approx(port, abs=1e-4) and x["port_buffer_bytes"] == fifo
        assert "_early_trains" not in x and x["phases_s"]["early_trains"] > 0
    json.dumps(r, default=float)  # nothing of the tape left in the report
