//! The UDP verbs: `udp server`, `udp client` (and `--echo`, `--compare-sched`), `udp train`.

use super::*;

pub(super) fn udp_server(bind: SocketAddr, o: &UdpServerOpts, what: Option<&str>) -> R {
    let sock = UdpSocket::bind(bind).map_err(|e| (1, format!("--bind {bind}: {e}")))?;
    // the UDP server's own thread (`server` runs the TCP server in another, unpinned)
    o.sched.apply()?;
    eprintln!(
        "bloatlab-probe {} server listening on {}{}",
        what.unwrap_or("udp"),
        sock.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        if o.secret.is_some() { " (HMAC required)" } else { "" }
    );
    let cfg = udp::ServerCfg {
        secret: o.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        max_pps: o.max_pps,
        max_duration_ns: o.max_duration,
        verbose: o.verbose,
        busy_poll: o.sched.busy_poll,
    };
    let st = udp::serve(&sock, &cfg, &|| false).map_err(|e| (1, e.to_string()))?;
    eprintln!(
        "udp server: replied {}, ignored {} {:?}, rate-limited {}, duration-limited {}, trains {} (refused {}), up trains {} ({} packets)",
        st.replied, st.ignored, st.ignored_by, st.rate_limited, st.duration_limited, st.trains, st.trains_refused, st.up_trains, st.up_packets
    );
    Ok(0)
}

/// `udp train`: ask for a train, receive it, print what it tells; `--up`:
/// send it, fetch the server's records of its arrivals, the same print.
pub(super) fn udp_train(a: UdpTrainArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    let pace_bps = a.rate.unwrap_or(0);
    let wire_bytes = (a.size as usize + train::ip_overhead(&addr)) as u64;
    let gap_ns = train::pace_gap_ns(wire_bytes, pace_bps);
    if gap_ns > 0 && train::paced_span_ns(a.count, gap_ns) > train::MAX_PACED_NS {
        let most = (train::MAX_PACED_NS / gap_ns + 1).min(train::MAX_COUNT as u64);
        return Err((
            2,
            format!(
                "--count {} --rate {} Mbit/s: {} packets of {} B at that rate take {:.3} s; a paced train may last at most {} s at the server (at most {most} packets at that rate)",
                a.count,
                train::sig(pace_bps as f64 / 1e6),
                a.count,
                wire_bytes,
                train::paced_span_ns(a.count, gap_ns) as f64 / 1e9,
                train::MAX_PACED_NS as f64 / 1e9
            ),
        ));
    }
    let cfg = train::TrainCfg {
        addr,
        count: a.count,
        size: a.size as usize,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        timeout_ns: a.timeout,
        pace_bps,
        wait_go: a.wait_go,
    };
    let r = if a.up { train_up::run_up_train(&cfg) } else { train::run_train(&cfg) }.map_err(|e| (1, e))?;
    print_train(&a, addr, &r)
}

/// What a train tells, either way it went (`r.direction`): `--json`'s object or the text.
fn print_train(a: &UdpTrainArgs, addr: SocketAddr, r: &train::TrainRun) -> R {
    let dir = r.direction;
    let mut an = train::analyse_with(dir, a.count, r.wire_bytes, &r.arrivals, a.rate.map(|p| p as f64 / 1e6));
    if let Some(d) = r.local_drops.filter(|&d| d > 0) {
        an.notes.push(match dir {
            train::Direction::Down => format!("this client's socket dropped {d} packets (its receive buffer was full): those losses are not the path's"),
            train::Direction::Up => format!(
                "the server's socket dropped {d} packets while the train arrived (its receive buffer was full; its other clients' packets count too): those losses are not the path's"
            ),
        });
    }
    let (server_sent, span_ns, errors) = match r.done {
        Some((n, s, e)) => (Some(n), Some(s), Some(e)),
        None => {
            // the DONE answer was lost: the span from the received packets' send times
            let lo = r.arrivals.iter().map(|x| x.tx_ns).min();
            let hi = r.arrivals.iter().map(|x| x.tx_ns).max();
            (None, lo.zip(hi).map(|(l, h)| h - l), None)
        }
    };
    let send_mbps = match (span_ns, server_sent.unwrap_or(a.count)) {
        (Some(s), n) if s > 0 && n > 1 => Some((n as u64 - 1) as f64 * r.wire_bytes as f64 * 8e3 / s as f64),
        _ => None,
    };
    if a.json {
        let mut t = an.to_json();
        let o = t.as_object_mut().unwrap();
        o.insert("direction".into(), json!(dir.name()));
        o.insert("size".into(), json!(a.size));
        o.insert("wire_bytes".into(), json!(r.wire_bytes));
        // the sender's figures (down: the server's DONE; up: the client's own send loop)
        o.insert("server_sent".into(), json!(server_sent));
        o.insert("server_send_errors".into(), json!(errors));
        o.insert("send_ms".into(), json!(span_ns.map(|s| s as f64 / 1e6)));
        o.insert("send_from".into(), json!(if r.done.is_some() { dir.sender() } else { "received packets' send times" }));
        o.insert("send_mbps".into(), json!(send_mbps));
        o.insert("pace_mbps".into(), json!(a.rate.map(|p| p as f64 / 1e6)));
        // a paced train's send times, ms after its first packet's (null: lost): the refill while any run of it
        // reached the policer (a sender short of CPU paces unevenly)
        if a.rate.is_some() {
            let t0 = r.arrivals.iter().map(|x| x.tx_ns).min().unwrap_or(0);
            let mut tx: Vec<Option<f64>> = vec![None; a.count as usize];
            for x in &r.arrivals {
                if let Some(v) = tx.get_mut(x.seq as usize) {
                    *v = Some((x.tx_ns - t0) as f64 / 1e6);
                }
            }
            o.insert("tx_ms".into(), json!(tx));
        }
        // each packet's one-way delay beyond the least of the train's, ms to the µs (null: lost): the queue it met
        // on the way, the two hosts' clock offset cancelled (it does not move over a train of milliseconds). The
        // packets a full FIFO admitted met its depth less their own (advise/trains.py, port_fifo_by_delay)
        if r.arrivals.iter().any(|x| x.tx_ns != 0) {
            let owd = |x: &train::Arrival| x.rx_ns as i128 - x.tx_ns as i128;
            let least = r.arrivals.iter().map(owd).min().unwrap_or(0);
            let mut d: Vec<Option<f64>> = vec![None; a.count as usize];
            for x in &r.arrivals {
                if let Some(v) = d.get_mut(x.seq as usize) {
                    *v = Some(((owd(x) - least) as f64 / 1e3).round() / 1e3);
                }
            }
            o.insert("delay_ms".into(), json!(d));
            // the least one-way delay itself, ms to the ns: the receiver's clock less the sender's, so a
            // path's delay only where the two clocks agree (one host: the emulator's namespaces); delay_ms
            // plus it is each packet's one-way delay
            o.insert("owd_least_ms".into(), json!(least as f64 / 1e6));
        }
        // each packet's arrival, ms to the µs after the first arrival (null: lost), and the first's
        // CLOCK_REALTIME ns at the receiver (null: nothing arrived): the arrivals on the receiver's clock
        let rx0 = r.arrivals.iter().map(|x| x.rx_ns).min();
        let mut rx: Vec<Option<f64>> = vec![None; a.count as usize];
        for x in &r.arrivals {
            if let Some(v) = rx.get_mut(x.seq as usize) {
                *v = Some(((x.rx_ns - rx0.unwrap_or(0)) as f64 / 1e3).round() / 1e3);
            }
        }
        o.insert("rx_ms".into(), json!(rx));
        o.insert("rx_first_real_ns".into(), json!(rx0));
        o.insert("local_drops".into(), json!(r.local_drops));
        o.insert("duplicates".into(), json!(r.duplicates));
        o.insert("foreign".into(), json!(r.foreign));
        o.insert("handshake_rtt_ms".into(), json!(r.handshake_rtt_ns as f64 / 1e6));
        // the receiver's quiet when the train ended (null: nothing arrived): a bucket before it refilled that long
        o.insert("quiet_ms".into(), json!(r.quiet_ns.map(|q| q as f64 / 1e6)));
        o.insert("timestamps".into(), json!(if r.kernel_ts { "kernel rx (SO_TIMESTAMPNS)" } else { "user" }));
        o.insert("rates".into(), json!("Mbit/s of IP packets (UDP payload + 28 B over IPv4, + 48 B over IPv6)"));
        let out = json!({"test": "udp-train", "host": a.host, "server": addr.to_string(), "version": env!("CARGO_PKG_VERSION"), "train": t});
        println!("{out}");
        return Ok(0);
    }
    let f = |v: Option<f64>| v.map(|x| format!("{} Mbit/s", train::sig(x))).unwrap_or_else(|| "-".into());
    println!(
        "{}: {} packets of {} B ({} B on the wire), {}",
        match dir {
            train::Direction::Down => format!("UDP train from {addr}"),
            train::Direction::Up => format!("UDP train to {addr} (up)"),
        },
        a.count,
        a.size,
        r.wire_bytes,
        a.rate.map(|p| format!("paced at {}", f(Some(p as f64 / 1e6)))).unwrap_or_else(|| "back to back".into())
    );
    println!(
        "received {} of {}, lost {}{}",
        an.received,
        an.sent,
        an.lost.len(),
        an.first_loss.map(|i| format!(" (first at #{i})")).unwrap_or_default()
    );
    println!(
        "head: {} packets, {} B in {:.3} ms: leading rate {} (the port's, if the bucket let the head through)",
        an.head_packets,
        an.head_bytes,
        an.head_span_ns as f64 / 1e6,
        f(an.leading_mbps)
    );
    println!(
        "tail: {} packets after the first loss: {} (the policed rate; over their arrivals {}, over their send times {})",
        an.tail_packets,
        f(an.tail_mbps),
        f(an.tail_arrival_mbps),
        f(an.tail_send_mbps)
    );
    if let Some(b) = an.bucket_bytes {
        println!(
            "bucket ~{:.0} B (the head's bytes and half a packet, less what the policed rate refilled while it passed; {} B if the policer sat behind the port)",
            b,
            an.bucket_min_bytes.map(|x| format!("{x:.0}")).unwrap_or_else(|| "?".into())
        );
    }
    println!(
        "the {} sent it in {} ({}){}",
        dir.sender(),
        span_ns.map(|s| format!("{:.3} ms", s as f64 / 1e6)).unwrap_or_else(|| "?".into()),
        f(send_mbps),
        if r.done.is_none() { ", from the received packets' send times (its DONE was lost)" } else { "" }
    );
    for n in &an.notes {
        println!("note: {n}");
    }
    Ok(0)
}

/// The UDP client's configuration from its arguments (`count` None: `-t`).
pub(super) fn udp_cfg(a: &UdpClientArgs, addr: SocketAddr, count: Option<u64>, report_ns: u64, t0: u64) -> udp::ClientCfg {
    udp::ClientCfg {
        addr,
        count,
        duration_ns: a.time,
        interval_ns: a.interval,
        size: a.size as usize,
        busy_poll: a.sched.busy_poll,
        secret: a.secret.as_ref().map(|s| s.as_bytes().to_vec()),
        timeout_ns: a.timeout.max(1_000_000),
        give_up_ns: a.give_up.max(a.timeout),
        report_ns,
        t0_mono: t0,
        stop_at_mono: None,
        live: None,
    }
}

pub(super) fn udp_client(mut a: UdpClientArgs) -> R {
    let addr = resolve(&a.host, a.port).map_err(|e| (2, e))?;
    if a.echo {
        return echo_client(a, addr);
    }
    udp::flags_for(a.size as usize, a.secret.is_some()).map_err(|e| (2, e))?;
    if a.compare_sched {
        return compare_sched(a, addr);
    }
    a.sched.apply()?;
    let t0 = sys::mono_ns();
    // neither -t nor --count: a test of DEFAULT_UDP_TIME_NS, as iperf3's 10 s (500 000 requests
    // were ~14 hours of ping-pong on a 100-ms path)
    if a.time.is_none() && a.count.is_none() {
        a.time = Some(DEFAULT_UDP_TIME_NS);
    }
    let count = a.count;
    let cfg = udp_cfg(&a, addr, count, if a.json { 0 } else { a.report }, t0);
    if !a.json {
        println!(
            "UDP {} to {addr}, {} B requests, {}",
            if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) },
            a.size,
            match (cfg.count, cfg.duration_ns) {
                (Some(n), _) => format!("{n} requests"),
                (_, Some(d)) => format!("{:.3} s", d as f64 / 1e9),
                _ => String::new(),
            }
        );
    }
    let r = udp::run_client(&cfg).map_err(|e| (1, e))?;
    if r.received == 0 && r.echoed >= udp::ECHO_DETECT && !a.echo && a.secret.is_none() {
        // detected: a plain echo server answers (seed 002's board); measure it as one
        eprintln!("{addr} echoes the requests verbatim: a plain UDP echo server, not bloatlab-probe server; measuring it with --echo");
        let a = UdpClientArgs { echo: true, size: a.size.max(echo::MIN_SIZE as _), ..a };
        return echo_client(a, addr);
    }
    let mut rtt = r.rtt_us.clone();
    let lat = Latency::of(&mut rtt);
    let mut u = r.user_rtt_us.clone();
    let ulat = Latency::of(&mut u);
    let mut s = r.server_us.clone();
    let slat = Latency::of(&mut s);
    let mut ip = r.ipdv_us.clone();
    let ipdv = Latency::of(&mut ip);
    let mut late = r.send_late_us.clone();
    let late = Latency::of(&mut late);
    let lost = r.sent - r.received.min(r.sent);
    let loss = if r.sent > 0 { lost as f64 / r.sent as f64 } else { 0.0 };
    let rate = r.sent as f64 / r.elapsed_s.max(1e-9);
    let offset = udp::Offset::estimate(&r.owd_up_ns, &r.owd_down_ns);
    let (up, down) = match &offset {
        Some(o) => {
            let (mut u, mut d) = o.one_way_us(&r.owd_up_ns, &r.owd_down_ns);
            (Latency::of(&mut u), Latency::of(&mut d))
        }
        None => (Latency::of(&mut []), Latency::of(&mut [])),
    };
    let code = if r.stop_reason.as_deref().map(|s| s != "interrupted").unwrap_or(false) { 1 } else { 0 };
    if a.json {
        let mut o = Output::new("udp", scenario("udp", &a.host), t0);
        o.duration_s = r.elapsed_s;
        o.probes = vec![r.probe_raw(0)];
        o.meta_extra.insert("timestamps".into(), json!(if r.kernel_ts { "kernel rx (SO_TIMESTAMPNS), user tx" } else { "user" }));
        o.extra.insert(
            "udp".into(),
            json!({"sent": r.sent, "received": r.received, "lost": lost, "loss": loss, "duplicates": r.duplicates,
                   "reordered": r.reordered, "mismatched": r.mismatched, "foreign": r.foreign,
                   "send_rate_pps": rate, "rtt_us": lat.to_json_us(), "user_rtt_us": ulat.to_json_us(),
                   "ipdv_us": ipdv.to_json_us(), "server_processing_us": slat.to_json_us(),
                   "send_lateness_us": late.to_json_us(), "server_timestamps": r.server_ts,
                   "clock_offset_us": offset.map(|o| o.offset_ns / 1e3), "clock_offset_bound_us": offset.map(|o| o.bound_ns / 1e3),
                   "clocks_synchronised": offset.map(|o| o.synchronised()), "one_way_label": offset.map(|o| o.label()),
                   "one_way_up_us": offset.map(|_| up.to_json_us()), "one_way_down_us": offset.map(|_| down.to_json_us()),
                   "loss_runs": r.loss_runs, "stop_reason": r.stop_reason}),
        );
        o.extra.insert("histogram".into(), lat.to_json_us()["histogram"].clone());
        o.extra.insert("problem".into(), json!(r.stop_reason));
        print_json(&o);
    } else {
        println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        if let Some(why) = &r.stop_reason {
            println!("stopped early: {why}; summary of what was measured:");
        }
        println!(
            "sent {} received {} lost {} ({:.3} %) duplicates {} reordered {} payload mismatches {} in {:.3} s ({:.0} req/s)",
            r.sent, r.received, lost, loss * 100.0, r.duplicates, r.reordered, r.mismatched, r.elapsed_s, rate
        );
        println!(
            "rtt  min {} mean {} max {} stddev {}",
            fmt_us(lat.min), fmt_us(lat.mean), fmt_us(lat.max), fmt_us(lat.stddev)
        );
        println!("rtt  p50 {} p90 {} p99 {} p99.9 {}   ({} timestamps)", fmt_us(lat.p50), fmt_us(lat.p90), fmt_us(lat.p99), fmt_us(lat.p999),
                 if r.kernel_ts { "kernel rx" } else { "user-space" });
        println!("rtt (user-space rx) p50 {} p99 {}", fmt_us(ulat.p50), fmt_us(ulat.p99));
        println!("ipdv mean {} p50 {} p99 {} max {}", fmt_us(ipdv.mean), fmt_us(ipdv.p50), fmt_us(ipdv.p99), fmt_us(ipdv.max));
        if r.server_ts {
            println!("server processing p50 {} p99 {} max {}", fmt_us(slat.p50), fmt_us(slat.p99), fmt_us(slat.max));
        }
        if let Some(o) = &offset {
            println!("one-way up   p50 {} p99 {} min {}   down p50 {} p99 {} min {}", fmt_us(up.p50), fmt_us(up.p99), fmt_us(up.min), fmt_us(down.p50), fmt_us(down.p99), fmt_us(down.min));
            println!("  ({})", o.label());
        }
        if a.interval > 0 {
            println!("send lateness p50 {} p99 {} max {}", fmt_us(late.p50), fmt_us(late.p99), fmt_us(late.max));
        }
        if a.hist || lat.n > 0 {
            println!("histogram (rtt):\n{}", lat.hist_text());
        }
    }
    Ok(code)
}

/// One host scheduling policy of `--compare-sched`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sched {
    Default,
    Nice20,
    Rr99,
    FifoDma,
}

impl Sched {
    const ALL: [Sched; 4] = [Sched::Default, Sched::Nice20, Sched::Rr99, Sched::FifoDma];
    fn name(self) -> &'static str {
        match self {
            Sched::Default => "default (SCHED_OTHER, nice 0)",
            Sched::Nice20 => "nice -20",
            Sched::Rr99 => "SCHED_RR 99",
            Sched::FifoDma => "SCHED_FIFO 99 + cpu_dma_latency 0",
        }
    }
    /// Enter the policy; what it holds (the cpu_dma_latency request) lives as long as the returned value.
    fn enter(self) -> Result<Option<sys::CpuDmaLatency>, String> {
        match self {
            Sched::Default => Ok(None),
            Sched::Nice20 => sys::set_nice(-20).map(|_| None),
            Sched::Rr99 => sys::apply_rt(sys::RtPolicy::Rr(99)).map(|_| None),
            Sched::FifoDma => {
                let hold = sys::hold_cpu_dma_latency(0)?;
                sys::apply_rt(sys::RtPolicy::Fifo(99))?;
                Ok(Some(hold))
            }
        }
    }
    fn leave(self) {
        let _ = sys::set_sched_other();
        let _ = sys::set_nice(0);
    }
}

/// `udp client --compare-sched`: the same test under each policy, one after
/// the other, a histogram each with log-scaled bars (the tail is what differs).
pub(super) fn compare_sched(a: UdpClientArgs, addr: SocketAddr) -> R {
    if let Some(cpu) = a.sched.pin {
        sys::pin_cpu(cpu).map_err(|e| (2, e))?;
    }
    sys::tight_timer_slack();
    let count = if a.time.is_none() { Some(a.count.unwrap_or(100_000)) } else { None };
    if !a.json {
        println!(
            "UDP {} to {addr}, {} B requests, {} per policy, 4 policies",
            if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) },
            a.size,
            match (count, a.time) {
                (Some(n), _) => format!("{n} requests"),
                (_, Some(d)) => format!("{:.3} s", d as f64 / 1e9),
                _ => String::new(),
            }
        );
    }
    let mut rows = Vec::new();
    let mut failed = false;
    for pol in Sched::ALL {
        let held = match pol.enter() {
            Ok(h) => h,
            Err(e) => {
                pol.leave();
                if !a.json {
                    println!("\n== {}: skipped: {e}", pol.name());
                }
                rows.push(json!({"policy": pol.name(), "skipped": e}));
                continue;
            }
        };
        let cfg = udp_cfg(&a, addr, count, 0, sys::mono_ns());
        let r = udp::run_client(&cfg);
        drop(held);
        pol.leave();
        let r = r.map_err(|e| (1, e))?;
        let mut rtt = r.rtt_us.clone();
        let lat = Latency::of(&mut rtt);
        failed |= r.stop_reason.is_some();
        if !a.json {
            println!("\n== {}: sent {} received {}  rtt p50 {} p99 {} p99.9 {} max {}   ({} timestamps)",
                     pol.name(), r.sent, r.received, fmt_us(lat.p50), fmt_us(lat.p99), fmt_us(lat.p999), fmt_us(lat.max),
                     if r.kernel_ts { "kernel rx" } else { "user-space" });
            print!("{}", lat.hist_text_log());
        }
        rows.push(json!({"policy": pol.name(), "sent": r.sent, "received": r.received, "rtt_us": lat.to_json_us(), "stop_reason": r.stop_reason}));
        if sys::stopped() {
            break;
        }
    }
    if a.json {
        println!("{}", json!({"test": "udp-compare-sched", "host": a.host, "histogram_bars": "log10(1 + count)", "policies": rows}));
    } else {
        println!("\n(bars: log10(1 + count), so single outliers show)");
    }
    Ok(if failed { 1 } else { 0 })
}

/// `udp client --echo`: any UDP echo server (see [`echo`]).
pub(super) fn echo_client(a: UdpClientArgs, addr: SocketAddr) -> R {
    if (a.size as usize) < echo::MIN_SIZE {
        return Err((2, format!("--size {}: --echo needs at least {} bytes (\"This is packet N\\n\")", a.size, echo::MIN_SIZE)));
    }
    a.sched.apply()?;
    let cfg = echo::EchoCfg {
        addr,
        count: a.count.unwrap_or(500_000),
        interval_ns: a.interval,
        size: a.size as usize,
        timeout_ns: a.timeout.max(1_000_000),
        limit_ns: a.limit,
        busy_poll: a.sched.busy_poll,
        give_up_ns: a.give_up.max(a.timeout),
    };
    if !a.json {
        println!("UDP echo {} to {addr}, {} B \"This is packet N\" requests, {} requests", if a.interval == 0 { "ping-pong".to_string() } else { format!("every {}", fmt_us(a.interval as f64 / 1e3)) }, a.size, cfg.count);
    }
    let t0 = sys::mono_ns();
    let r = echo::run(&cfg).map_err(|e| (2, e))?;
    let mut rtt = r.rtt_us.clone();
    let lat = Latency::of(&mut rtt);
    let loss = if r.sent > 0 { r.lost as f64 / r.sent as f64 } else { 0.0 };
    if a.json {
        let mut o = Output::new("udp", scenario("udp-echo", &a.host), t0);
        o.duration_s = r.elapsed_s;
        o.meta_extra.insert("timestamps".into(), json!("user-space, client only (echo server)"));
        o.extra.insert(
            "echo".into(),
            json!({"sent": r.sent, "received": r.received, "lost": r.lost, "loss": loss, "mismatched": r.mismatched,
                   "stray": r.stray, "size": a.size, "timeout_us": cfg.timeout_ns as f64 / 1e3,
                   "rtt_us": lat.to_json_us(), "limit_us": a.limit.map(|l| l as f64 / 1e3), "slow_count": r.slow_count,
                   "slow": r.slow.iter().map(|(n, us)| json!([n, us])).collect::<Vec<_>>(), "interrupted": r.interrupted,
                   "stop_reason": r.stop_reason}),
        );
        o.extra.insert("histogram".into(), lat.to_json_us()["histogram"].clone());
        print_json(&o);
    } else {
        for (n, us) in &r.slow {
            println!("Slow answer #{n}: {}", fmt_us(*us));
        }
        if r.slow_count > r.slow.len() as u64 {
            println!("... {} slow answers in all (first {} listed)", r.slow_count, r.slow.len());
        }
        println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        if let Some(why) = &r.stop_reason {
            println!("stopped early: {why}; summary of what was measured:");
        }
        println!(
            "sent {} answered {} lost {} ({:.3} %) mismatched {} stray {} in {:.3} s",
            r.sent, r.received, r.lost, loss * 100.0, r.mismatched, r.stray, r.elapsed_s
        );
        println!("Avg: {}  Min: {}  Max: {}", fmt_us(lat.mean), fmt_us(lat.min), fmt_us(lat.max));
        println!("p50 {} p90 {} p99 {} p99.9 {}   (user-space timestamps)", fmt_us(lat.p50), fmt_us(lat.p90), fmt_us(lat.p99), fmt_us(lat.p999));
        if lat.n > 0 {
            println!("histogram (rtt, log-scale buckets):\n{}", lat.hist_text());
        }
    }
    Ok(if r.stop_reason.is_some() { 1 } else { 0 })
}
