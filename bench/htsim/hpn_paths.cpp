// Packet-level replay of flows routed by hpn, on csg-htsim (RoCE data packets, PFC, FIFO ports).
//
// Built by bench/htsim_dcn.py against csg-htsim's libhtsim.a; never part of the package.
// Input (text, from the bench script):
//   params <mtu> <end_us> <warm_us> <pfc_high_bytes> <pfc_low_bytes> <gate_bytes>
//   links <L>                 then L lines: <rate_bps> <latency_ps> <from_host 0|1>
//   flows <F>                 then F lines: <rate_bps> <ring> <up> <down> <allow> <credit> <n> l1..ln
// Every directed link is an output queue and a pipe; a link into a switch ends in a PFC input
// queue (pause above pfc_high, resume below pfc_low, per ingress port, one priority), so a full
// egress port pauses the upstream port and everything queued behind it (head-of-line blocking).
// A link out of a host is the NIC port: a host queue that forwards PAUSE to its senders.
// PAUSE reaches the upstream port at once (no wire delay: slightly less buffer than a real
// switch needs). No ACKs: the network is lossless, nothing is retransmitted, and ACK bytes
// would be 1.5 % of the reverse links.
// A flow is paced at <rate_bps> (its share of the NIC port). With ring >= 0 it is one edge of a
// pipelined ring: it may send byte x only once its upstream edge <up> has delivered
// x - allow bytes (data) and its downstream edge <down> has delivered x - credit bytes
// (receive buffers), released in units of gate_bytes (NCCL's per-step RDMA writes).
// Output: one line per flow: <id> <bytes delivered in [warm, end]> <total delivered>
// <us its NIC port was paused by PFC in [warm, end]> <bytes delivered in the window's first half>.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "queue_lossless_input.h"
#include "queue_lossless_output.h"
#include "rocepacket.h"
#include "route.h"

using namespace std;

EventList the_events;

struct Edge;
static vector<Edge*> edges;
static simtime_picosec warm_at, mid_at;
static uint64_t gate_unit;

struct Sink : public PacketSink {
    Edge* edge;
    string name = "sink";
    void receivePacket(Packet& pkt) override;
    const string& nodename() override { return name; }
};

struct Edge : public EventSource, public PacketSink {
    PacketFlow flow;
    Route* route = nullptr;
    Sink sink;
    simtime_picosec spacing = 0;
    uint64_t mtu = 4096, sent = 0, delivered = 0, delivered_at_warm = 0, delivered_at_mid = 0;
    int up = -1, down = -1;
    int64_t allow = 0, credit = 0;
    bool paused = false, pending = false;
    simtime_picosec paused_since = 0, paused_total = 0;  // PFC at the sending NIC, in [warm, end]
    string name = "edge";

    Edge() : EventSource(the_events, "edge"), flow(nullptr) { sink.edge = this; }

    uint64_t limit() const {
        uint64_t lim = UINT64_MAX;
        if (up >= 0) lim = min(lim, edges[up]->delivered + (uint64_t)allow);
        if (down >= 0) lim = min(lim, edges[down]->delivered + (uint64_t)credit);
        if (lim != UINT64_MAX) lim = lim / gate_unit * gate_unit;  // whole RDMA writes
        return lim;
    }
    void kick() {
        if (!pending && !paused && sent + mtu <= limit()) {
            pending = true;
            the_events.sourceIsPendingRel(*this, 0);
        }
    }
    void doNextEvent() override {
        pending = false;
        if (paused || sent + mtu > limit()) return;
        RocePacket* p = RocePacket::newpkt(flow, *route, sent + 1, (int)mtu, false, false);
        sent += mtu;
        p->sendOn();
        pending = true;
        the_events.sourceIsPendingRel(*this, spacing);
    }
    void receivePacket(Packet& pkt) override {  // PAUSE / resume from the host queue
        if (pkt.type() == ETH_PAUSE) {
            bool now_paused = ((EthPausePacket&)pkt).sleepTime() > 0;
            simtime_picosec t = the_events.now();
            if (now_paused && !paused) paused_since = t;
            if (!now_paused && paused && t > warm_at) paused_total += t - max(paused_since, warm_at);
            paused = now_paused;
            if (!paused) kick();
        }
        pkt.free();
    }
    const string& nodename() override { return name; }
};

void Sink::receivePacket(Packet& pkt) {
    edge->delivered += edge->mtu;
    if (the_events.now() <= warm_at) edge->delivered_at_warm = edge->delivered;
    if (the_events.now() <= mid_at) edge->delivered_at_mid = edge->delivered;
    pkt.free();
    if (edge->down >= 0) edges[edge->down]->kick();  // its data has arrived
    if (edge->up >= 0) edges[edge->up]->kick();      // a receive buffer was freed
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s INPUT\n", argv[0]);
        return 2;
    }
    FILE* in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    char word[32];
    unsigned mtu, end_us, warm_us;
    unsigned long long hi, lo, gate;
    if (fscanf(in, "%31s %u %u %u %llu %llu %llu", word, &mtu, &end_us, &warm_us, &hi, &lo,
               &gate) != 7 || strcmp(word, "params")) {
        fprintf(stderr, "bad params line\n");
        return 2;
    }
    Packet::set_packet_size(mtu);
    LosslessInputQueue::_high_threshold = hi;
    LosslessInputQueue::_low_threshold = lo;
    gate_unit = gate ? gate : mtu;
    warm_at = timeFromUs((uint32_t)warm_us);
    mid_at = timeFromUs((uint32_t)((warm_us + end_us) / 2));
    the_events.setEndtime(timeFromUs((uint32_t)end_us));

    unsigned nl;
    if (fscanf(in, "%31s %u", word, &nl) != 2) return 2;
    vector<BaseQueue*> q(nl);
    vector<Pipe*> pipe(nl);
    vector<PacketSink*> inq(nl, nullptr);
    for (unsigned i = 0; i < nl; i++) {
        double rate;
        unsigned long long lat;
        int host;
        if (fscanf(in, "%lf %llu %d", &rate, &lat, &host) != 3) return 2;
        if (host)
            q[i] = new FairPriorityQueue((linkspeed_bps)rate, memFromPkt(1000000), the_events, nullptr);
        else
            q[i] = new LosslessOutputQueue((linkspeed_bps)rate, memFromPkt(1000000), the_events, nullptr);
        q[i]->setName("q" + to_string(i));
        pipe[i] = new Pipe((simtime_picosec)lat, the_events);
        pipe[i]->setName("p" + to_string(i));
    }
    unsigned nf;
    if (fscanf(in, "%31s %u", word, &nf) != 2) return 2;
    vector<vector<int>> path(nf);
    vector<int> credit_of(nf, -1);  // the edge whose credit waits on this edge's deliveries
    for (unsigned f = 0; f < nf; f++) {
        Edge* e = new Edge();
        double rate;
        int ring, n;
        long long allow, credit;
        if (fscanf(in, "%lf %d %d %d %lld %lld %d", &rate, &ring, &e->up, &e->down, &allow,
                   &credit, &n) != 7) return 2;
        e->allow = allow;
        e->credit = credit;
        e->mtu = mtu;
        e->spacing = (simtime_picosec)((mtu + RocePacket::ACKSIZE) * 8e12 / rate);
        path[f].resize(n);
        for (int h = 0; h < n; h++)
            if (fscanf(in, "%d", &path[f][h]) != 1) return 2;
        edges.push_back(e);
    }
    fclose(in);
    // PFC input queues on every link into a switch that some flow crosses after its first hop
    for (unsigned f = 0; f < nf; f++)
        for (size_t h = 0; h + 1 < path[f].size(); h++) {
            int l = path[f][h];
            if (!inq[l]) inq[l] = new LosslessInputQueue(the_events, q[l]);
        }
    for (unsigned f = 0; f < nf; f++) {
        Edge* e = edges[f];
        Route* r = new Route();
        for (size_t h = 0; h < path[f].size(); h++) {
            int l = path[f][h];
            r->push_back(q[l]);
            r->push_back(pipe[l]);
            if (h + 1 < path[f].size()) r->push_back(inq[l]);
        }
        r->push_back(&e->sink);
        e->route = r;
        HostQueue* hq = dynamic_cast<HostQueue*>(q[path[f][0]]);
        if (hq) hq->addHostSender(e);
        e->flow.set_flowid(f + 1);
    }
    for (Edge* e : edges) e->kick();
    while (the_events.doNextEvent()) {
    }
    for (unsigned f = 0; f < nf; f++)
        printf("%u %llu %llu %.3f %llu\n", f,
               (unsigned long long)(edges[f]->delivered - edges[f]->delivered_at_warm),
               (unsigned long long)edges[f]->delivered, timeAsUs(edges[f]->paused_total),
               (unsigned long long)(edges[f]->delivered_at_mid - edges[f]->delivered_at_warm));
    return 0;
}
