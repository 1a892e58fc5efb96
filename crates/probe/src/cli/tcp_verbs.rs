//! The TCP verbs: `tcp client` (bloatlab's protocol or a stock iperf3 server) and `load`.

use super::*;

pub(super) fn tcp_client(a: TcpClientArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if let Some(p) = a.cport {
        if p as u64 + a.parallel - 1 > 65535 {
            return Err((2, format!("--cport {p}: with -P {} the ports run past 65535", a.parallel)));
        }
    }
    let t0 = sys::mono_ns();
    let cfg = tcp::ClientCfg {
        addr,
        cc: a.cc.clone(),
        pacing: a.pacing,
        streams: a.parallel as usize,
        reverse: a.reverse,
        duration_ns: if a.bytes.is_some() { None } else { Some(a.time.unwrap_or(10_000_000_000)) },
        bytes: a.bytes,
        rate_bps: a.bitrate,
        onoff_ticks: match (a.on, a.off) {
            (Some(on), Some(off)) => {
                if on % tcp::APP_TICK_NS != 0 || off % tcp::APP_TICK_NS != 0 {
                    return Err((2, "--on/--off: the application writes every 10 ms; give whole multiples of 10ms".into()));
                }
                Some((on / tcp::APP_TICK_NS, off / tcp::APP_TICK_NS))
            }
            _ => None,
        },
        cport: a.cport,
        info_interval_ns: a.info_interval,
        report_ns: if a.json { 0 } else { a.report },
        t0_mono: t0,
        first_id: 0,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        wait_go: a.wait_go,
        done_file: a.done_file.clone(),
        self_probes: None,
        halt_at_end: false,
        live: None,
        busy_wait_ns: 0,
    };
    if !a.json {
        println!("Connecting to host {}, port {}{}", a.host, addr.port(), if a.reverse { " (reverse: the server sends)" } else { "" });
    }
    if a.iperf3 {
        return iperf3_client(&a, &cfg, None);
    }
    let r = match tcp::run_client_or_iperf3(&cfg).map_err(|e| (e.status, e.msg))? {
        tcp::Answer::Iperf3(opened) => {
            eprintln!("{}: the server speaks iperf3's protocol (a stock iperf3 -s); running the test in it (--iperf3)", addr);
            return iperf3_client(&a, &cfg, Some(opened));
        }
        tcp::Answer::Bloatlab(r) => *r,
    };
    if a.json {
        print_json(&tcp::output(&cfg, &r, scenario("tcp", &a.host)));
    } else {
        tcp::print_summary(&r, a.reverse);
    }
    if let Some(p) = &r.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}

/// `tcp client --iperf3`: a test against a stock iperf3 server. `opened`:
/// the control connection of bloatlab's client, whose opening the iperf3
/// server took for this test (`tcp::Answer::Iperf3`).
pub(super) fn iperf3_client(a: &TcpClientArgs, cfg: &tcp::ClientCfg, opened: Option<iperf3::Opened>) -> R {
    let run = match opened {
        Some(o) => iperf3::run_opened(o, cfg, a.report, !a.json),
        None => iperf3::run_client(cfg, a.report, !a.json),
    }
    .map_err(|e| (e.status, e.msg))?;
    if a.json {
        let o = tcp::output(cfg, &run.result, scenario("tcp", &a.host));
        println!("{}", serde_json::to_string_pretty(&iperf3::json_output(cfg, &run, &a.host, cfg.addr.port(), &o)).unwrap());
    } else {
        iperf3::print_summary(&run, a.reverse);
    }
    if let Some(p) = &run.result.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}

pub(super) fn load_cmd(a: LoadArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if a.down + a.up == 0 {
        return Err((2, "--down/--up: at least one flow is needed".into()));
    }
    let t0 = sys::mono_ns();
    let cfg = load::LoadCfg {
        addr,
        down: a.down as usize,
        up: a.up as usize,
        cc: a.cc.clone(),
        duration_ns: a.time,
        idle_ns: a.idle,
        probe_interval_ns: a.probe_interval,
        sample_interval_ns: a.sample_interval,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        t0_mono: t0,
        verbose: a.verbose,
        self_probes: !a.no_self_probes,
        foreign_probes: !a.no_foreign_probes,
        sequential: a.sequential,
        halt_at_end: a.halt_at_end,
        until: a
            .until_stable
            .map(|floor_ns| live::Until {
                floor_ns,
                floor_bytes: a.floor_packets.unwrap_or(0).saturating_mul(live::SEGMENT_PAYLOAD),
                loss_ends: !a.queue_only,
                at_loss: false,
            })
            .or(a.until_loss.then_some(live::Until { loss_ends: true, at_loss: true, ..live::Until::default() })),
        halt: a.halt_rtts.map(|rtts| live::Halt { rtts, packets: a.halt_packets.unwrap_or(0) }),
    };
    if !a.json {
        println!("latency under load against {addr}: {:.1} s idle, then {} down + {} up flows for {:.1} s", a.idle as f64 / 1e9, a.down, a.up, a.time as f64 / 1e9);
    }
    let mut r = load::run(&cfg).map_err(|e| (e.status, e.msg))?;
    r.output.scenario = scenario("load", &a.host);
    if a.json {
        print_json(&r.output);
    } else {
        print!("{}", r.text);
    }
    if let Some(p) = &r.problem {
        eprintln!("bloatlab-probe: {p}");
        return Ok(if sys::stopped() { 0 } else { 1 });
    }
    Ok(0)
}
