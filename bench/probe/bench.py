"""Side-by-side benchmark of bloatlab-probe against sockperf, irtt and iperf3.

Run through bench/probe/run.sh. Every number in RESULTS.md comes from one run
of this script on the machine it names. sockperf reports half the round trip
by default; we pass --full-rtt so all UDP columns are round trips.
"""
import json, os, re, signal, subprocess, sys, time, platform

PROBE = os.environ["PROBE"]
N = int(os.environ.get("N", "100000"))          # ping-pong round trips per UDP tool
T = int(os.environ.get("T", "5"))               # seconds per TCP run and per sockperf/irtt run
PPS_COUNT = int(os.environ.get("PPS_COUNT", "500000"))  # requests at 100 k/s (5 s)
CCS = ["cubic", "bbr", "reno"]
NS_A, NS_B = "bloatlab-bench-a", "bloatlab-bench-b"
OUT = "bench/probe/RESULTS.md"


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, **kw)


class Env:
    def __init__(self, name, srv_ip, pre_a, pre_b):
        self.name, self.ip, self.a, self.b = name, srv_ip, pre_a, pre_b

    def server(self, cmd):
        p = subprocess.Popen(self.a + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(0.5)
        return p

    def client(self, cmd, timeout=120):
        return subprocess.run(self.b + cmd, capture_output=True, text=True, timeout=timeout)


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=5)
    except Exception:
        os.killpg(p.pid, signal.SIGKILL)


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q / 100 * (len(xs) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def udp_ours(env):
    s = env.server([PROBE, "udp", "server", "--bind", f"{env.ip}:5301"])
    try:
        r = env.client([PROBE, "udp", "client", env.ip, "-p", "5301", "--count", str(N), "--json"])
        j = json.loads(r.stdout)["udp"]
        k, u = j["rtt_us"], j["user_rtt_us"]
        res = {"ours (kernel rx ts)": (k["p50"], k["p99"], k["p99_9"], j["received"], j["send_rate_pps"]),
               "ours (user-space rx ts)": (u["p50"], u["p99"], u["p99_9"], j["received"], j["send_rate_pps"])}
        r = env.client([PROBE, "udp", "client", env.ip, "-p", "5301", "--interval", "10us",
                        "--count", str(PPS_COUNT), "--json"])
        j = json.loads(r.stdout)["udp"]
        pps = {k: j[k] for k in ["sent", "received", "lost", "duplicates", "reordered", "mismatched", "send_rate_pps"]}
        pps["p50"], pps["p99"], pps["p99_9"] = j["rtt_us"]["p50"], j["rtt_us"]["p99"], j["rtt_us"]["p99_9"]
        pps["late_p99"], pps["late_max"] = j["send_lateness_us"]["p99"], j["send_lateness_us"]["max"]
        return res, pps
    finally:
        stop(s)


def udp_sockperf(env):
    s = env.server(["sockperf", "server", "-i", env.ip, "-p", "11111"])
    try:
        r = env.client(["sockperf", "ping-pong", "-i", env.ip, "-p", "11111", "-t", str(T), "-m", "64", "--full-rtt"])
        out = r.stdout + r.stderr
        def grab(name):
            m = re.search(rf"percentile {name}\s*=\s*([\d.]+)", out)
            return float(m.group(1)) if m else float("nan")
        m = re.search(r"SentMessages=(\d+);\s*ReceivedMessages=(\d+)", out)
        rcv = int(m.group(2)) if m else -1
        return {"sockperf ping-pong --full-rtt": (grab("50.000"), grab("99.000"), grab("99.900"), rcv, rcv / T)}
    finally:
        stop(s)


def udp_irtt(env):
    s = env.server(["irtt", "server", "-b", f"{env.ip}:2112", "-i", "0"])
    try:
        r = env.client(["irtt", "client", "-i", "100us", "-d", f"{T}s", "-l", "64", "-Q", "-o", "-", env.ip + ":2112"])
        j = json.loads(r.stdout)
        rtts = [rt["delay"]["rtt"] / 1e3 for rt in j["round_trips"] if "rtt" in rt.get("delay", {})]
        return {"irtt -i 100us": (pct(rtts, 50), pct(rtts, 99), pct(rtts, 99.9), len(rtts), len(rtts) / T)}
    finally:
        stop(s)


def tcp_ours(env, cc):
    s = env.server([PROBE, "tcp", "server", "--bind", f"{env.ip}:5302"])
    try:
        r = env.client([PROBE, "tcp", "client", env.ip, "-p", "5302", "-C", cc, "-t", str(T), "--json"])
        j = json.loads(r.stdout)
        return j["total_goodput_mbps"] / 1e3, sum(f["retransmits"] for f in j["flows"])
    finally:
        stop(s)


def tcp_iperf3(env, cc):
    s = env.server(["iperf3", "-s", "-B", env.ip, "-p", "5203"])
    try:
        r = env.client(["iperf3", "-c", env.ip, "-p", "5203", "-C", cc, "-t", str(T), "-J"])
        j = json.loads(r.stdout)
        return j["end"]["sum_received"]["bits_per_second"] / 1e9, j["end"]["sum_sent"].get("retransmits", 0)
    finally:
        stop(s)


def netns_up():
    sh(f"ip netns del {NS_A} 2>/dev/null || true; ip netns del {NS_B} 2>/dev/null || true")
    sh(f"ip netns add {NS_A} && ip netns add {NS_B}")
    sh(f"ip link add blbench-a netns {NS_A} type veth peer name blbench-b netns {NS_B}")
    sh(f"ip -n {NS_A} addr add 10.79.0.1/24 dev blbench-a && ip -n {NS_B} addr add 10.79.0.2/24 dev blbench-b")
    for ns, dev in [(NS_A, "blbench-a"), (NS_B, "blbench-b")]:
        sh(f"ip -n {ns} link set {dev} up && ip -n {ns} link set lo up")


def netns_down():
    subprocess.run(f"ip netns del {NS_A}; ip netns del {NS_B}", shell=True, capture_output=True)


def main():
    envs = [Env("loopback", "127.0.0.1", [], [])]
    if os.geteuid() == 0:
        netns_up()
        envs.append(Env("veth (two namespaces)", "10.79.0.1", ["ip", "netns", "exec", NS_A], ["ip", "netns", "exec", NS_B]))
    else:
        print("not root: the veth half is skipped", file=sys.stderr)
    res = {}
    try:
        for e in envs:
            print(f"== {e.name}", file=sys.stderr)
            ours, pps = udp_ours(e)
            udp = {**ours, **udp_sockperf(e), **udp_irtt(e)}
            tcp = {cc: (tcp_ours(e, cc), tcp_iperf3(e, cc)) for cc in CCS}
            res[e.name] = (udp, pps, tcp)
    finally:
        if len(envs) > 1:
            netns_down()
    kernel = platform.release()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    L = ["# bloatlab-probe benchmarks", "",
         f"Measured by `bench/probe/run.sh` on {time.strftime('%Y-%m-%d')}: kernel {kernel}, {os.cpu_count()} CPUs ({cpu}),",
         "a machine shared with other work (numbers move by tens of percent between runs).",
         f"UDP: {N} ping-pong round trips for bloatlab-probe, {T} s for sockperf and irtt, 64-byte payloads;",
         "all UDP figures are full round trips in µs (sockperf with `--full-rtt`; it prints half round trips by default).",
         "irtt cannot ping-pong; it sends every 100 µs (its server allows that with `-i 0`).",
         f"TCP: one flow for {T} s per congestion control, goodput in Gbit/s as the receiver counted it.", ""]
    for env, (udp, pps, tcp) in res.items():
        L += [f"## {env}", "", "### UDP round trip (µs)", "",
              "| tool | p50 | p99 | p99.9 | replies | replies/s |", "|---|---:|---:|---:|---:|---:|"]
        for k, (a, b, c, n, r) in udp.items():
            L.append(f"| {k} | {a:.1f} | {b:.1f} | {c:.1f} | {n} | {r:.0f} |")
        L += ["", f"### bloatlab-probe at 100 k requests/s (`--interval 10us --count {PPS_COUNT}`)", "",
              "| sent | received | lost | dup | reordered | mismatched | achieved req/s | rtt p50 | p99 | p99.9 | send lateness p99 | max |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
              f"| {pps['sent']} | {pps['received']} | {pps['lost']} | {pps['duplicates']} | {pps['reordered']} | {pps['mismatched']} "
              f"| {pps['send_rate_pps']:.0f} | {pps['p50']:.1f} | {pps['p99']:.1f} | {pps['p99_9']:.1f} | {pps['late_p99']:.1f} | {pps['late_max']:.1f} |",
              "", "### TCP goodput (Gbit/s) and retransmits", "",
              "| cc | bloatlab-probe | retrans | iperf3 | retrans |", "|---|---:|---:|---:|---:|"]
        for cc, ((g1, r1), (g2, r2)) in tcp.items():
            L.append(f"| {cc} | {g1:.2f} | {r1} | {g2:.2f} | {r2} |")
        L.append("")
    open(OUT, "w").write("\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
