//! iperf3's own command lines (`-c HOST`, `-s`), as its users type them,
//! turned into bloatlab-probe's.

/// iperf3 flags bloatlab-probe does not take, each refused by name with why (not clap's generic message).
const IPERF3_UNSUPPORTED: &[(&str, &str)] = &[
    ("-w|--window", "the socket buffers are left to the kernel's autotuning (tcp_rmem/tcp_wmem), which a flow needs to fill a long path; limit a flow's rate with -b instead"),
    ("-M|--set-mss", "the MSS is the path's (1448 B of payload on a 1500-B MTU), as the scenarios assume"),
    ("-N|--no-delay", "bulk streams write whole buffers; Nagle never holds them"),
    ("-Z|--zerocopy", "not implemented"),
    ("-O|--omit", "the series has every sample from t = 0; leave the ramp out when reading it"),
    ("-u|--udp", "UDP tests are `bloatlab-probe udp client HOST` (round trips) or `load` (latency under load)"),
];

/// iperf3's own command lines, as its users type them: `-c HOST [...]` is
/// `tcp client HOST --iperf3 [...]`, `-s [-1]` is `server` (`tcp server
/// --one-off` with `-1`); either takes `-p PORT` and defaults to iperf3's
/// port 5201. The other flags pass through (`-t -i -C -R -P -n -b -J`);
/// ones we do not have are refused by name. Anything else is unchanged.
pub fn iperf3_style(args: Vec<String>) -> Vec<String> {
    let first = args.get(1).map(String::as_str).unwrap_or("");
    let is = |a: &str, short: &str, long: &str| a == short || a == long;
    let client = args.iter().position(|a| is(a, "-c", "--client"));
    let server = args.iter().position(|a| is(a, "-s", "--server"));
    if !first.starts_with('-') || matches!(first, "-h" | "--help" | "-V" | "--version") || (client.is_none() && server.is_none()) {
        return args;
    }
    let mut rest: Vec<String> = Vec::new();
    let mut port: Option<String> = None;
    let mut host: Option<String> = None;
    let mut one_off = false;
    let mut i = 1;
    while i < args.len() {
        let a = args[i].as_str();
        if is(a, "-c", "--client") {
            host = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if is(a, "-s", "--server") {
            i += 1;
            continue;
        }
        if is(a, "-p", "--port") {
            port = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if is(a, "-1", "--one-off") {
            one_off = true;
            i += 1;
            continue;
        }
        if let Some((_, why)) = IPERF3_UNSUPPORTED.iter().find(|(names, _)| names.split('|').any(|n| n == a || a.starts_with(&format!("{n}=")))) {
            // clap would say "unexpected argument '-w' found; to pass '-w' as a value, use '-- -w'"
            eprintln!("error: {a}: iperf3's flag is not one bloatlab-probe has: {why}");
            std::process::exit(2);
        }
        rest.push(args[i].clone());
        i += 1;
    }
    let port = port.unwrap_or_else(|| crate::iperf3::DEFAULT_PORT.to_string());
    let mut out = vec![args[0].clone()];
    match (client, host) {
        (Some(_), Some(h)) => {
            out.extend(["tcp".into(), "client".into(), h, "--iperf3".into(), "-p".into(), port]);
        }
        (Some(_), None) => {
            out.extend(["tcp".into(), "client".into()]); // clap names the missing HOST
        }
        (None, _) => {
            let sub: &[&str] = if one_off { &["tcp", "server", "--one-off"] } else { &["server"] };
            out.extend(sub.iter().map(|s| s.to_string()));
            out.extend(["--bind".into(), format!("[::]:{port}")]);
        }
    }
    out.extend(rest);
    out
}
