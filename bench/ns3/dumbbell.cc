// bench/ns3/dumbbell.cc -- the reference scenario of bench/sim_vs_ns3.py, in ns-3.37.
//
// Source: ns-3.37 (Debian package libns3-dev 3.37-2), its TCP model
// (src/internet/model/tcp-socket-base.cc, tcp-cubic.cc, tcp-bbr.cc, tcp-prr-recovery.cc),
// point-to-point links, the traffic-control layer and RateErrorModel.
//
// Model in a nutshell
//   N bulk TCP flows (BulkSend -> PacketSink) over a dumbbell:
//
//     S_i --access--> L ==bottleneck (rate, rtt/2 one way, FIFO, random loss)==> R --access--> D_i
//
//   * access links: 10 x the bottleneck rate, zero propagation delay, device queue of 100000
//     packets and no queue disc, so that nothing is ever dropped or queued for long there;
//   * bottleneck L->R: a tail-drop pfifo *queue disc* ("ns3::FifoQueueDisc", MaxSize
//     = buffer-pkts packets) above a device queue of 1 packet. Why a queue disc and not the
//     device's own DropTailQueue: this is the Linux structure that bloatlab's `qdisc = "fifo"`
//     means (a pfifo qdisc dropping at its tail above a driver that holds almost nothing,
//     BQL-style); ns-3's traffic-control layer stops and wakes the queue disc from the device
//     queue exactly like that, and the queue disc keeps drop statistics. The device queue of
//     1 packet adds at most one packet (1500 B, 0.12 ms at 100 Mbit/s) to the buffer.
//     `--queue=device` switches to the plain device queue (no queue disc, no flow control)
//     for comparison;
//   * the reverse direction R->L (ACKs) is built the same way, so the path is symmetric;
//   * i.i.d. random loss: a RateErrorModel (ERROR_UNIT_PACKET, ErrorRate = --loss) as the
//     *receive* error model of R's bottleneck device: every data packet that crossed the
//     bottleneck is dropped with probability `loss` (ACKs are never dropped). Note: the lost
//     packet has consumed bottleneck time; a loss applied before the queue would not.
//   * base RTT: the bottleneck carries rtt/2 of propagation in each direction; the access
//     links add only serialization (2 x 12 us per packet at 1 Gbit/s).
//
// TCP settings (ns-3 attribute -> value -> reason). Those marked LINUX differ from ns-3's
// default and were set to what Linux 6.x does:
//   TcpSocket::SegmentSize         1448 B     MSS of a 1500 B MTU with timestamps (20+20+12 B)
//   TcpSocket::InitialCwnd         10 seg     RFC 6928, Linux TCP_INIT_CWND (ns-3 default too)
//   TcpSocket::DelAckCount         2 seg      ACK every 2nd full segment (ns-3 default too)
//   TcpSocket::DelAckTimeout       40 ms      LINUX TCP_DELACK_MIN = HZ/25 (ns-3 default 200 ms)
//   TcpSocket::ConnTimeout         1 s        LINUX TCP_TIMEOUT_INIT, RFC 6298 (ns-3 default 3 s)
//   TcpSocket::SndBufSize/RcvBufSize  max(4 x (BDP + buffer), 4 MiB)  "never window-limited"
//                                             (ns-3 default 128 KiB: would cap a 100 ms flow
//                                             at ~10 Mbit/s)
//   TcpSocketBase::MinRto          200 ms     LINUX TCP_RTO_MIN (ns-3 default 1 s)
//   TcpSocketBase::Sack/Timestamp/WindowScaling  true  (ns-3 defaults, Linux defaults)
//   TcpL4Protocol::RecoveryType    TcpPrrRecovery  RFC 6937 as Linux (ns-3 default too)
//   TcpCubic::HyStartDelayMax      16 ms      LINUX HYSTART_DELAY_MAX (ns-3 default 1 s; only
//                                             matters when min_rtt/8 > 16 ms, i.e. rtt > 128 ms)
//   TcpSocketState::EnablePacing   false      Linux paces CUBIC only with sch_fq; TcpBbr turns
//                                             pacing on by itself (TcpBbr::InitPacingRate)
//
// Output: one JSON line on stdout (see the end of main). Bad arguments: a message naming the
// argument on stderr, exit status 2.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// ---- command line --------------------------------------------------------------------------

struct Args
{
    std::string cc = "cubic";
    double loss = 0.0;
    double duration_s = 60.0;
    std::string rate = "100Mbps";
    std::string rtt = "100ms";
    uint32_t flows = 1;
    uint32_t buffer_pkts = 833;
    uint32_t seed = 1;
    std::string queue = "disc";
    double trace_s = 0.0; // > 0: print flow 0's state to stderr every trace_s seconds
    bool linux = true;    // false: keep ns-3's own defaults for the LINUX attributes
};

const char* kUsage =
    "usage: dumbbell [--cc=cubic|bbr|newreno|linuxreno] [--loss=0.01] [--duration=60]\n"
    "                [--rate=100Mbps] [--rtt=100ms] [--flows=1] [--buffer-pkts=833]\n"
    "                [--seed=1] [--queue=disc|device] [--trace=SECONDS]\n"
    "                [--linux=1|0]\n"
    "  --loss      i.i.d. per-packet drop probability on the bottleneck (data direction), in [0,1)\n"
    "  --duration  simulated seconds\n"
    "  --rate      bottleneck rate, ns-3 DataRate syntax (100Mbps, 1Gbps)\n"
    "  --rtt       base round-trip time, ns-3 Time syntax (100ms)\n"
    "  --queue     disc: pfifo queue disc over a 1-packet device queue (default);\n"
    "              device: the device's DropTailQueue alone\n"
    "  --trace     print flow 0's cwnd, inflight, pacing rate, RTT, state to stderr every\n"
    "              SECONDS of simulated time (0: off)\n"
    "  --linux     1: set DelAckTimeout 40 ms, ConnTimeout 1 s, MinRto 200 ms, CUBIC\n"
    "              HyStartDelayMax 16 ms as in Linux (default); 0: keep ns-3's defaults\n";

[[noreturn]] void
BadArg(const std::string& key, const std::string& why)
{
    std::cerr << "dumbbell: --" << key << ": " << why << "\n" << kUsage;
    std::exit(2);
}

double
ParseDouble(const std::string& key, const std::string& v)
{
    try
    {
        size_t used = 0;
        double d = std::stod(v, &used);
        if (used != v.size())
        {
            BadArg(key, "expected a number, got \"" + v + "\"");
        }
        return d;
    }
    catch (const std::exception&)
    {
        BadArg(key, "expected a number, got \"" + v + "\"");
    }
}

uint32_t
ParseCount(const std::string& key, const std::string& v, uint32_t lo, uint32_t hi)
{
    double d = ParseDouble(key, v);
    if (d != static_cast<double>(static_cast<uint64_t>(d)) || d < lo || d > hi)
    {
        BadArg(key,
               "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "], got \"" + v + "\"");
    }
    return static_cast<uint32_t>(d);
}

Args
ParseArgs(int argc, char** argv)
{
    Args a;
    for (int i = 1; i < argc; ++i)
    {
        std::string s = argv[i];
        if (s == "--help" || s == "-h")
        {
            std::cout << kUsage;
            std::exit(0);
        }
        if (s.rfind("--", 0) != 0 || s.find('=') == std::string::npos)
        {
            std::cerr << "dumbbell: unexpected argument \"" << s << "\" (expected --key=value)\n"
                      << kUsage;
            std::exit(2);
        }
        std::string key = s.substr(2, s.find('=') - 2);
        std::string v = s.substr(s.find('=') + 1);
        if (key == "cc")
        {
            if (v != "cubic" && v != "bbr" && v != "newreno" && v != "linuxreno")
            {
                BadArg(key, "expected cubic, bbr, newreno or linuxreno, got \"" + v + "\"");
            }
            a.cc = v;
        }
        else if (key == "loss")
        {
            a.loss = ParseDouble(key, v);
            if (!(a.loss >= 0.0 && a.loss < 1.0))
            {
                BadArg(key, "expected a probability in [0, 1), got \"" + v + "\"");
            }
        }
        else if (key == "duration")
        {
            a.duration_s = ParseDouble(key, v);
            if (!(a.duration_s > 0.0 && a.duration_s <= 1e6))
            {
                BadArg(key, "expected seconds in (0, 1e6], got \"" + v + "\"");
            }
        }
        else if (key == "rate")
        {
            DataRateValue dr;
            if (!dr.DeserializeFromString(v, MakeDataRateChecker()) || dr.Get().GetBitRate() == 0)
            {
                BadArg(key, "expected a rate like \"100Mbps\", got \"" + v + "\"");
            }
            a.rate = v;
        }
        else if (key == "rtt")
        {
            TimeValue t;
            if (!t.DeserializeFromString(v, MakeTimeChecker()) || t.Get() <= Time(0))
            {
                BadArg(key, "expected a time like \"100ms\", got \"" + v + "\"");
            }
            a.rtt = v;
        }
        else if (key == "flows")
        {
            a.flows = ParseCount(key, v, 1, 100000);
        }
        else if (key == "buffer-pkts")
        {
            a.buffer_pkts = ParseCount(key, v, 1, 100000000);
        }
        else if (key == "seed")
        {
            a.seed = ParseCount(key, v, 1, 4000000000u);
        }
        else if (key == "trace")
        {
            a.trace_s = ParseDouble(key, v);
            if (!(a.trace_s >= 0.0))
            {
                BadArg(key, "expected seconds >= 0, got \"" + v + "\"");
            }
        }
        else if (key == "linux")
        {
            if (v != "0" && v != "1")
            {
                BadArg(key, "expected 1 or 0, got \"" + v + "\"");
            }
            a.linux = v == "1";
        }
        else if (key == "queue")
        {
            if (v != "disc" && v != "device")
            {
                BadArg(key, "expected disc or device, got \"" + v + "\"");
            }
            a.queue = v;
        }
        else
        {
            std::cerr << "dumbbell: unknown argument --" << key << "\n" << kUsage;
            std::exit(2);
        }
    }
    return a;
}

// ---- counters fed by trace sources ---------------------------------------------------------

struct FlowTx
{
    SequenceNumber32 high{0}; // end of the highest data byte ever sent
    bool started{false};
    uint64_t data_segs{0};
    uint64_t retrans_segs{0};
};

std::vector<FlowTx> g_flow_tx;
uint64_t g_ip_originated = 0; // IP packets created by end hosts (data, ACKs, SYN/FIN)
uint64_t g_link_tx = 0;       // packet transmissions over any link (one per hop)
uint64_t g_random_drops = 0;  // dropped by the RateErrorModel

// A data segment whose first byte is below the highest byte ever sent is a retransmission
// (the same rule as Linux's TCPRetransSegs: any resend of already-sent data).
void
OnTcpTx(uint32_t flow, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    uint32_t len = p->GetSize();
    if (len == 0)
    {
        return; // pure ACK / SYN / FIN
    }
    FlowTx& f = g_flow_tx[flow];
    f.data_segs++;
    SequenceNumber32 end = h.GetSequenceNumber() + len;
    if (!f.started)
    {
        f.started = true;
        f.high = end;
        return;
    }
    if (h.GetSequenceNumber() < f.high)
    {
        f.retrans_segs++;
    }
    if (end > f.high)
    {
        f.high = end;
    }
}

void
OnIpSendOutgoing(const Ipv4Header&, Ptr<const Packet>, uint32_t)
{
    g_ip_originated++;
}

void
OnPhyTxBegin(Ptr<const Packet>)
{
    g_link_tx++;
}

void
OnPhyRxDrop(Ptr<const Packet>)
{
    g_random_drops++;
}

void
HookSenderSocket(uint32_t flow, Ptr<BulkSendApplication> app)
{
    Ptr<TcpSocketBase> s = DynamicCast<TcpSocketBase>(app->GetSocket());
    NS_ABORT_MSG_IF(!s, "BulkSend socket not created yet");
    s->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnTcpTx, flow));
}

// Latest state of flow 0, from its socket's trace sources (for --trace).
struct Flow0State
{
    uint32_t cwnd{0}, ssthresh{0}, inflight{0};
    double pacing_mbps{0}, rtt_ms{0}, min_rtt_ms{1e9};
    std::string congstate{"?"};
} g_f0;

void
OnCwnd(uint32_t, uint32_t v)
{
    g_f0.cwnd = v;
}

void
OnSsthresh(uint32_t, uint32_t v)
{
    g_f0.ssthresh = v;
}

void
OnInflight(uint32_t, uint32_t v)
{
    g_f0.inflight = v;
}

void
OnPacing(DataRate, DataRate v)
{
    g_f0.pacing_mbps = v.GetBitRate() / 1e6;
}

void
OnRtt(Time, Time v)
{
    g_f0.rtt_ms = v.GetSeconds() * 1e3;
    g_f0.min_rtt_ms = std::min(g_f0.min_rtt_ms, g_f0.rtt_ms);
}

void
OnCongState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v)
{
    g_f0.congstate = TcpSocketState::TcpCongStateName[v];
}

void
HookTraceSources(Ptr<BulkSendApplication> app)
{
    Ptr<Socket> s = app->GetSocket();
    s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&OnCwnd));
    s->TraceConnectWithoutContext("SlowStartThreshold", MakeCallback(&OnSsthresh));
    s->TraceConnectWithoutContext("BytesInFlight", MakeCallback(&OnInflight));
    s->TraceConnectWithoutContext("PacingRate", MakeCallback(&OnPacing));
    s->TraceConnectWithoutContext("RTT", MakeCallback(&OnRtt));
    s->TraceConnectWithoutContext("CongState", MakeCallback(&OnCongState));
}

// Periodic state of flow 0 (to look at what a run does; stderr, tab separated).
void
TraceFlow(Ptr<PacketSink> sink, Ptr<QueueDisc> qd, Time every)
{
    std::cerr << "t=" << Simulator::Now().GetSeconds() << "\tcwnd=" << g_f0.cwnd
              << "\tssthresh=" << g_f0.ssthresh << "\tinflight=" << g_f0.inflight
              << "\tpacing_mbps=" << g_f0.pacing_mbps << "\trtt_ms=" << g_f0.rtt_ms
              << "\tmin_rtt_ms=" << g_f0.min_rtt_ms << "\tstate=" << g_f0.congstate
              << "\trx_bytes=" << sink->GetTotalRx()
              << "\tqueue_pkts=" << (qd ? qd->GetNPackets() : 0)
              << "\tretrans=" << g_flow_tx[0].retrans_segs << "\n";
    Simulator::Schedule(every, &TraceFlow, sink, qd, every);
}

double
PeakRssMb()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0; // ru_maxrss is in KiB on Linux
}

} // namespace

int
main(int argc, char** argv)
{
    auto t_start = std::chrono::steady_clock::now();
    Args a = ParseArgs(argc, argv);

    DataRateValue rate_v;
    rate_v.DeserializeFromString(a.rate, MakeDataRateChecker());
    const DataRate rate = rate_v.Get();
    TimeValue rtt_v;
    rtt_v.DeserializeFromString(a.rtt, MakeTimeChecker());
    const Time rtt = rtt_v.Get();
    const Time duration = Seconds(a.duration_s);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(a.seed);

    // ---- TCP: Linux values where ns-3 has the attribute (see the header comment) ----
    const std::map<std::string, std::string> cc_type = {{"cubic", "ns3::TcpCubic"},
                                                        {"bbr", "ns3::TcpBbr"},
                                                        {"newreno", "ns3::TcpNewReno"},
                                                        {"linuxreno", "ns3::TcpLinuxReno"}};
    const double bdp_bytes = rate.GetBitRate() / 8.0 * rtt.GetSeconds();
    const double buf_bytes = 1500.0 * a.buffer_pkts;
    const uint32_t sockbuf = static_cast<uint32_t>(
        std::min(1.0e9, std::max(4.0 * (bdp_bytes + buf_bytes), 4.0 * 1024 * 1024)));

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue(cc_type.at(a.cc)));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", StringValue("ns3::TcpPrrRecovery"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockbuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockbuf));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    if (a.linux)
    {
        Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(40)));
        Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
        Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
        Config::SetDefault("ns3::TcpCubic::HyStartDelayMax", TimeValue(MilliSeconds(16)));
    }
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(false));

    // ---- topology ----
    NodeContainer senders, receivers, routers;
    senders.Create(a.flows);
    receivers.Create(a.flows);
    routers.Create(2);
    Ptr<Node> left = routers.Get(0);
    Ptr<Node> right = routers.Get(1);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate.GetBitRate() * 10)));
    access.SetChannelAttribute("Delay", TimeValue(Seconds(0)));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("100000p"));

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", DataRateValue(rate));
    bottleneck.SetChannelAttribute("Delay", TimeValue(rtt / 2));
    const std::string dev_q =
        a.queue == "disc" ? std::string("1p") : std::to_string(a.buffer_pkts) + "p";
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue(dev_q));
    if (a.queue == "device")
    {
        // Without a queue disc the traffic-control layer would still stop at a full device
        // queue and drop there, out of the device queue's statistics: let the device drop.
        bottleneck.DisableFlowControl();
    }

    InternetStackHelper stack;
    stack.InstallAll();

    NetDeviceContainer bn = bottleneck.Install(left, right);
    std::vector<NetDeviceContainer> acc_l, acc_r;
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        acc_l.push_back(access.Install(senders.Get(i), left));
        acc_r.push_back(access.Install(right, receivers.Get(i)));
    }

    // Bottleneck queue discs before address assignment: Ipv4AddressHelper::Assign installs
    // ns-3's default (fq_codel) on every device that has none.
    TrafficControlHelper tch;
    tch.SetRootQueueDisc("ns3::FifoQueueDisc",
                         "MaxSize",
                         StringValue(std::to_string(a.buffer_pkts) + "p"));
    QueueDiscContainer bn_qd;
    if (a.queue == "disc")
    {
        bn_qd = tch.Install(bn);
    }

    Ipv4AddressHelper addr;
    addr.SetBase("10.255.0.0", "255.255.255.252");
    addr.Assign(bn);
    std::vector<Ipv4InterfaceContainer> rx_if;
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        addr.NewNetwork();
        addr.Assign(acc_l[i]);
        addr.NewNetwork();
        rx_if.push_back(addr.Assign(acc_r[i]));
    }
    // No queue disc on access links: their 100000-packet device queues take any burst.
    // (With --queue=device the bottleneck has no queue disc either: Assign installs its
    // default only on devices with flow control, which DisableFlowControl removed.)
    TrafficControlHelper uninstall;
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        uninstall.Uninstall(acc_l[i]);
        uninstall.Uninstall(acc_r[i]);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Random loss on the data direction: receive error model of R's bottleneck device.
    if (a.loss > 0.0)
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        em->SetRate(a.loss);
        em->AssignStreams(1000);
        bn.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
        bn.Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeCallback(&OnPhyRxDrop));
    }

    // ---- applications ----
    const uint16_t port = 5000;
    ApplicationContainer sinks, sources;
    g_flow_tx.resize(a.flows);
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(receivers.Get(i)));
        BulkSendHelper src("ns3::TcpSocketFactory",
                           InetSocketAddress(rx_if[i].GetAddress(1), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(1448 * 16));
        sources.Add(src.Install(senders.Get(i)));
    }
    sinks.Start(Seconds(0));
    sources.Start(Seconds(0));
    sources.Stop(duration);
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        // The socket exists once the application has started (t = 0).
        Simulator::Schedule(NanoSeconds(1),
                            &HookSenderSocket,
                            i,
                            DynamicCast<BulkSendApplication>(sources.Get(i)));
    }

    if (a.trace_s > 0.0)
    {
        Simulator::Schedule(NanoSeconds(1),
                            &HookTraceSources,
                            DynamicCast<BulkSendApplication>(sources.Get(0)));
        Simulator::Schedule(Seconds(a.trace_s),
                            &TraceFlow,
                            DynamicCast<PacketSink>(sinks.Get(0)),
                            a.queue == "disc" ? bn_qd.Get(0) : Ptr<QueueDisc>(),
                            Seconds(a.trace_s));
    }

    // ---- counters ----
    for (uint32_t n = 0; n < NodeList::GetNNodes(); ++n)
    {
        Ptr<Node> node = NodeList::GetNode(n);
        node->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext(
            "SendOutgoing",
            MakeCallback(&OnIpSendOutgoing));
        for (uint32_t d = 0; d < node->GetNDevices(); ++d)
        {
            node->GetDevice(d)->TraceConnectWithoutContext("PhyTxBegin",
                                                           MakeCallback(&OnPhyTxBegin));
        }
    }

    Simulator::Stop(duration);
    auto t_run = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t_end = std::chrono::steady_clock::now();

    // ---- results ----
    std::vector<double> goodput;
    double goodput_sum = 0.0;
    for (uint32_t i = 0; i < a.flows; ++i)
    {
        uint64_t rx = DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
        double g = rx * 8.0 / duration.GetSeconds() / 1e6;
        goodput.push_back(g);
        goodput_sum += g;
    }
    uint64_t retrans = 0, data_segs = 0;
    for (const auto& f : g_flow_tx)
    {
        retrans += f.retrans_segs;
        data_segs += f.data_segs;
    }
    uint64_t queue_drops = 0;
    if (a.queue == "disc")
    {
        queue_drops = bn_qd.Get(0)->GetStats().nTotalDroppedPackets;
    }
    else
    {
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(bn.Get(0));
        queue_drops = dev->GetQueue()->GetTotalDroppedPackets();
    }
    const uint64_t events = Simulator::GetEventCount();
    Simulator::Destroy();

    const double run_s = std::chrono::duration<double>(t_end - t_run).count();
    const double total_s = std::chrono::duration<double>(t_end - t_start).count();

    std::ostringstream o;
    o.precision(6);
    o << "{\"simulator\":\"ns-3.37\",\"cc\":\"" << a.cc << "\",\"loss\":" << a.loss
      << ",\"rate_bps\":" << rate.GetBitRate() << ",\"rtt_s\":" << rtt.GetSeconds()
      << ",\"duration_s\":" << a.duration_s << ",\"flows\":" << a.flows
      << ",\"buffer_pkts\":" << a.buffer_pkts << ",\"queue\":\"" << a.queue
      << "\",\"seed\":" << a.seed << ",\"linux_timers\":" << (a.linux ? "true" : "false")
      << ",\"goodput_mbps\":" << goodput_sum;
    if (a.flows <= 100)
    {
        o << ",\"goodput_mbps_per_flow\":[";
        for (uint32_t i = 0; i < a.flows; ++i)
        {
            o << (i ? "," : "") << goodput[i];
        }
        o << "]";
    }
    o << ",\"data_segs_sent\":" << data_segs << ",\"retransmits\":" << retrans
      << ",\"queue_drops\":" << queue_drops << ",\"random_drops\":" << g_random_drops
      << ",\"packets\":" << g_ip_originated << ",\"link_tx_packets\":" << g_link_tx
      << ",\"events\":" << events << ",\"sim_wall_s\":" << run_s << ",\"wall_s\":" << total_s
      << ",\"peak_rss_mb\":" << PeakRssMb() << "}";
    std::cout << o.str() << std::endl;
    return 0;
}
