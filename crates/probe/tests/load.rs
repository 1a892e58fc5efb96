//! `load` against a server on loopback: the responsiveness probes of
//! draft-ietf-ippm-responsiveness over bloatlab's own protocol are answered
//! (foreign: handshake + request; self: framed loaded connections), the
//! sequential mode runs its three phases, and `--no-self-probes` falls back to
//! the loaded connections' smoothed RTT, as the draft allows.

mod common;
use common::*;
use std::sync::Mutex;
use std::time::Duration;

/// One load at a time: each saturates loopback in both directions, and two at
/// once on a 2-CPU machine stall the probes' threads for hundreds of ms.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn load(port: &str, extra: &[&str]) -> serde_json::Value {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = vec!["load", "127.0.0.1", "-p", port, "--idle", "0.5", "--json"];
    args.extend_from_slice(extra);
    // stdout to a file: the JSON (TCP_INFO series of 4 flows) outgrows a pipe that
    // wait_output reads only after the exit
    let path = std::env::temp_dir().join(format!("bloatlab-load-test-{}-{}.json", std::process::id(), extra.join("")));
    let out = std::fs::File::create(&path).unwrap();
    let child = std::process::Command::new(bin()).args(&args).stdout(out).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let o = wait_output(child, Duration::from_secs(60));
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn foreign_and_self_probes_are_answered_on_loopback_in_each_sequential_phase() {
    let srv = Server::start(&["server"]);
    let j = load(&srv.port, &["--down", "1", "--up", "1", "-t", "2", "--sequential"]);
    let phases = j["load"]["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["down", "up", "both"]);
    for p in phases {
        // 10 self probes a second for 2 s: 20 slots, at 50, 150, ... 1950 ms. A slot is
        // issued once a loaded connection is up (framed), or counted late when the probe
        // thread did not run for a whole period after it (load.rs `self_probes`: sent late
        // it would measure the scheduler, not the network). How many are late measures
        // the machine, not the code: with two CPU-bound jobs beside the test on 2 cores,
        // 7 of 20 in one run of 7. So the count is checked, not a minimum answered:
        // issued + late covers the slots after the loaded connections were framed, which
        // on loopback takes two handshakes and a thread start, < 1 ms idle; 500 ms (5
        // slots) leaves room for a timeslice or two on a loaded machine and a ~60-ms VM
        // pause. One issued in the sender's last moments may stay unanswered, one more on
        // a busy machine.
        let sp = &p["self_probes"];
        let (issued, late, answered) = (sp["issued"].as_u64().unwrap(), sp["late"].as_u64().unwrap(), sp["answered"].as_u64().unwrap());
        assert!((15..=20).contains(&(issued + late)), "{p}");
        assert!(answered >= 1 && answered <= issued && answered + 2 >= issued, "{p}");
        assert!(sp["unanswered"].as_u64().unwrap() <= 2, "{p}");
        assert_eq!(p["self_probe_source"], "bloatlab frames on the loaded connections", "{p}");
        let fp = &p["foreign_probes"];
        assert_eq!(fp["answered"], fp["connected"], "{p}");
        assert!(fp["connected"].as_u64().unwrap() >= 18, "{p}");
        assert!(p["problem"].is_null(), "{p}");
        assert!(p["rpm"].as_f64().unwrap() > 0.0 && p["tm_ms"]["http_l"].as_f64().unwrap() > 0.0, "{p}");
        // 2 s is fewer than the draft's 4 intervals: low confidence
        assert_eq!(p["confidence"], "low", "{p}");
    }
    // the frames cost the load nothing it can see: both directions move data
    assert!(phases[2]["goodput_mbps"]["down"].as_f64().unwrap() > 10.0, "{}", phases[2]);
    assert!(phases[2]["goodput_mbps"]["up"].as_f64().unwrap() > 10.0, "{}", phases[2]);
    // the existing fields stay where they were; RPM and bufferbloat grades are added
    let l = &j["load"];
    for k in ["idle", "loaded", "latency_increase_ms", "goodput_mbps", "responsiveness", "bufferbloat"] {
        assert!(l.get(k).is_some(), "{k} missing");
    }
    assert_eq!(l["loaded"]["rpm"], l["responsiveness"]["rpm"]);
    assert_eq!(l["responsiveness"]["rpm"], phases[2]["rpm"]);
    assert_eq!(j["flows"].as_array().unwrap().len(), 4, "one flow per phase and direction");
}

#[test]
fn without_self_probes_the_loaded_part_comes_from_the_stacks_smoothed_rtt() {
    let srv = Server::start(&["server"]);
    let j = load(&srv.port, &["--down", "1", "--up", "0", "-t", "1.5", "--no-self-probes"]);
    let p = &j["load"]["phases"][0];
    assert_eq!(p["name"], "down");
    assert_eq!(p["self_probes"]["issued"], 0);
    assert!(p["self_probe_source"].as_str().unwrap().starts_with("tcp_info srtt"), "{p}");
    assert!(p["tm_ms"]["http_l"].as_f64().unwrap() > 0.0, "{p}");
}

#[test]
fn the_sample_interval_sets_how_many_tcp_info_samples_come_back() {
    // 2 s of 1 flow: 10-ms samples ~200, 100-ms samples ~20. A slow path must carry the
    // result back (measure asks for ~150 samples a flow per phase, docs/advise.md)
    let srv = Server::start(&["server"]);
    let count = |extra: &[&str]| {
        let mut a = vec!["--down", "1", "--up", "0", "-t", "2", "--no-self-probes"];
        a.extend_from_slice(extra);
        let j = load(&srv.port, &a);
        j["raw"]["series"]["flows"]["t"].as_array().map(|v| v.len()).unwrap_or(0)
    };
    // a flow is sampled from its start through its sender's wait for the last ACKs (up to 2 s after -t,
    // TIMED_ACK_GRACE_NS): 2-4 s of samples, 20-40 at 100 ms (and a first and a last one), 200-400 at 10 ms
    let fine = count(&[]);
    let coarse = count(&["--sample-interval", "100ms"]);
    assert!((15..=42).contains(&coarse), "{coarse} samples at 100 ms");
    assert!(fine >= 5 * coarse && fine <= 402, "{fine} samples at 10 ms against {coarse} at 100 ms");
}

/// A phase whose server still holds the slot of an earlier test asks again
/// instead of failing: the phases follow one another, and a server frees a
/// test's slot only once its thread has returned, after the client read the
/// results (a `--sequential` "both" phase, two tests from one address, was
/// refused by its own server on a loaded machine). Here a server with one
/// test per address (`--max-tests 4`) runs a 1.5-s test when the load's
/// download phase begins (~0.7 s in): the load waits for the slot — up to
/// 2 s (load.rs `BUSY_WAIT_NS`) — and runs; a plain `tcp client`, which
/// gives up at once as iperf3 does, is refused (hostile.rs
/// `one_address_cannot_take_every_test_slot`).
#[test]
fn a_phase_waits_for_a_slot_its_server_is_still_freeing() {
    let srv = Server::start(&["server", "--max-tests", "4"]);
    let mut long = std::process::Command::new(bin())
        .args(["tcp", "client", "127.0.0.1", "-p", &srv.port, "-t", "1.5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let t = std::time::Instant::now();
    let j = load(&srv.port, &["--down", "1", "--up", "0", "-t", "1", "--no-self-probes"]);
    let _ = long.wait();
    let phases = j["load"]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1, "{j}");
    assert!(phases[0]["problem"].is_null(), "{}", phases[0]);
    assert!(phases[0]["goodput_mbps"]["down"].as_f64().unwrap_or(0.0) > 0.0, "{}", phases[0]);
    // it waited: the long test ended ~1.3 s after the load began, then its 1-s phase ran
    // (unwaited, the idle 0.5 s and the phase take ~1.6 s)
    assert!(t.elapsed() > Duration::from_millis(2200), "{:?}", t.elapsed());
}

/// `--no-foreign-probes` (bloatlab's `measure`, which reads the UDP probes
/// alone): no separate connections in any phase, the UDP probes as ever.
#[test]
fn without_foreign_probes_no_connection_is_opened_and_the_udp_probes_run() {
    let srv = Server::start(&["server"]);
    let j = load(&srv.port, &["--down", "1", "--up", "0", "-t", "1", "--no-self-probes", "--no-foreign-probes"]);
    let p = &j["load"]["phases"][0];
    assert_eq!(p["foreign_probes"]["connected"], 0, "{p}");
    assert!(p["problem"].is_null(), "{p}");
    // 10-ms probes over the 1-s phase (its idle 0.5 s apart): most answered on loopback
    assert!(p["udp_rtt_ms"]["n"].as_u64().unwrap() >= 50, "{p}");
    assert!(p["foreign_rpm"].is_null(), "{p}");
}

/// `--until-loss` (bloatlab's `measure`, its deep step) on loopback: a phase
/// that met no loss ends at -t (its flows may run past -t only for the round
/// trip after a loss seen before it), `lost_at_s` null; one that met a loss
/// (loopback at tens of Gbit/s drops now and then: a fresh clone's run saw
/// one 0.6 s in) ends an interval (100 ms here) after the one that saw it.
/// With `--until-stable` it is refused (docs/probe.md).
#[test]
fn until_loss_ends_a_round_trip_after_a_loss_or_at_its_ceiling() {
    let srv = Server::start(&["server"]);
    let j = load(&srv.port, &["--down", "1", "--up", "0", "-t", "1", "--no-self-probes", "--no-foreign-probes", "--until-loss", "-C", "reno"]);
    let p = &j["load"]["phases"][0];
    assert!(p["problem"].is_null() && p["saturated_at_s"].is_null(), "{p}");
    let ran = p["to_s"].as_f64().unwrap() - p["from_s"].as_f64().unwrap();
    match p["lost_at_s"].as_f64() {
        None => assert!((0.95..1.2).contains(&ran), "the phase ran {ran} s: {p}"),
        Some(at) => assert!(at < 1.0 && (at + 0.09..at + 0.35).contains(&ran), "lost at {at} s, ran {ran} s: {p}"),
    }
    let o = run(&["load", "127.0.0.1", "-p", &srv.port, "--until-loss", "--until-stable", "1s"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--until-loss"), "{}", stderr(&o));
}
