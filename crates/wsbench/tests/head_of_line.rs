//! Head-of-line blocking shown, not claimed: several WebSockets share one connection to
//! `wsbench serve`, each with one echo in flight, while nftables drops a share of the packets
//! at random. Over HTTP/3 a lost packet delays only the streams whose bytes it carried: the
//! others keep going, and complete round trip after round trip while the delayed one waits.
//! Over HTTP/2 a lost TCP segment holds back every byte behind it, whichever stream it
//! belongs to: all streams wait together.
//!
//! The measure is order, not time, so that a busy machine cannot fake or hide it. Each echo
//! records the round it arrived in (a datagram handed to QUIC, a wake-up of the HTTP/2
//! loop); another stream *laps* a delayed message once for each of its own messages sent
//! after it and answered in an earlier round. Over one TCP connection no stream can lap
//! another twice: its second message leaves after the delayed echo was written, so it arrives
//! behind it (a server answering two streams of one read in either order allows one lap).
//! Over QUIC, laps of two and more are what the loss produces, on most of the other streams.
//!
//! Topology: two network namespaces the test creates (`ip netns`), joined by a veth pair,
//! `wsbench serve` in one (10.254.0.1), the test's own clients (`head_of_line/clients.rs`) in
//! the other (10.254.0.2); the nftables table that drops lives in the server's namespace and
//! is added once every WebSocket is open and has echoed for a while (so handshakes never
//! meet the loss) and removed before the WebSockets close. Needs root, `ip netns` and `nft`;
//! otherwise it says why and skips, unless `WSBENCH_REQUIRE_PEERS=1`, where it fails.
//! HTTP/2 runs as h2c: TLS over TCP keeps TCP's order and adds nothing to what is shown.

mod support;

#[path = "head_of_line/clients.rs"]
mod clients;
#[path = "head_of_line/network.rs"]
mod network;

use std::collections::BTreeMap;
use std::time::Duration;

use clients::{Echo, Phases};
use network::{NftLoss, Pair, SERVER_IP};

/// WebSockets sharing the one connection.
const STREAMS: usize = 8;
/// Percent of packets dropped, each way, while the loss lasts.
const DROP_PERCENT: u32 = 3;
const PHASES: Phases = Phases { warm_up: Duration::from_millis(500), lossy: Duration::from_secs(4) };

#[test]
fn a_lost_packet_delays_one_quic_stream_while_the_others_go_on_and_stalls_every_http2_stream() {
    let Some(pair) = Pair::create_or_skip() else { return };
    let certificate = rcgen::generate_simple_self_signed(vec![SERVER_IP.to_owned()]).unwrap();
    let dir = pair.scratch();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certificate.cert.pem()).unwrap();
    std::fs::write(&key, certificate.signing_key.serialize_pem()).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate.cert.der().clone()).unwrap();

    let server = pair.serve(&["--h3", "--cert", cert.to_str().unwrap(), "--key", key.to_str().unwrap()]);
    let h3_addr = server.addr;
    let (h3, h3_dropped) = pair.client(NftLoss::new(&pair, DROP_PERCENT), move |loss| {
        clients::over_h3(h3_addr, SERVER_IP, roots, STREAMS, PHASES, loss)
    });
    drop(server);
    let server = pair.serve(&[]);
    let h2_addr = server.addr;
    let (h2, h2_dropped) = pair.client(NftLoss::new(&pair, DROP_PERCENT), move |loss| {
        clients::over_h2(h2_addr, STREAMS, PHASES, loss)
    });
    drop(server);
    let retransmitted = pair.tcp_retransmitted();

    let h3 = Laps::of(&h3);
    let h2 = Laps::of(&h2);
    println!(
        "{STREAMS} WebSockets on one connection, {DROP_PERCENT} % of packets dropped each way for {:?}",
        PHASES.lossy
    );
    println!("HTTP/3: {h3_dropped} packets dropped; {h3}");
    println!("HTTP/2: {h2_dropped} packets dropped, {retransmitted} TCP segments sent again; {h2}");
    assert!(h3_dropped > 0 && h2_dropped > 0, "nftables dropped nothing: the loss never happened");
    assert!(retransmitted > 0, "no TCP segment was sent again: the loss met no HTTP/2 data\nHTTP/2: {h2}");
    assert!(
        h2.echoes >= 100 && h3.echoes >= 100,
        "too few echoes under loss to tell\nHTTP/3: {h3}\nHTTP/2: {h2}"
    );
    assert!(
        h2.most_laps <= 1,
        "over one TCP connection no stream can lap a delayed message twice\nHTTP/2: {h2}"
    );
    assert!(
        h3.lapped_twice >= 10,
        "over QUIC the other streams go on while one waits: at least 10 messages lapped twice\nHTTP/3: {h3}"
    );
    assert!(
        h3.moving_per_mille >= 500,
        "over QUIC most other streams go on while one waits: more than half on average\nHTTP/3: {h3}"
    );
    assert!(
        h3.most_streams_moving >= STREAMS - 2,
        "while one QUIC stream waited, all but (at most) one of the others completed round trips\nHTTP/3: {h3}"
    );
}

/// What the echoes of one run say about streams overtaking each other.
#[derive(Debug, Default, PartialEq)]
struct Laps {
    echoes: usize,
    /// The most round trips one stream completed while one message of another waited.
    most_laps: u64,
    /// Messages that another stream lapped at least twice.
    lapped_twice: usize,
    /// The most other streams that completed a round trip while one message waited.
    most_streams_moving: usize,
    /// Of the lapped-twice messages, how many other streams moved on average (‰ of the
    /// others, for a figure without floats in the comparison).
    moving_per_mille: u64,
    /// The median and the largest latency, for the figures printed (never asserted).
    median: Duration,
    max: Duration,
}

impl Laps {
    fn of(echoes: &[Echo]) -> Laps {
        let mut by_sent: Vec<&Echo> = echoes.iter().collect();
        by_sent.sort_by_key(|echo| echo.sent);
        let mut laps = Laps { echoes: echoes.len(), ..Laps::default() };
        let mut moving_sum = 0u64;
        for (at, waiting) in by_sent.iter().enumerate() {
            // Messages sent after this one and before its echo came, answered in an earlier round.
            let mut per_stream: BTreeMap<usize, u64> = BTreeMap::new();
            for other in by_sent[at + 1..].iter().take_while(|e| e.sent < waiting.sent_by_answer) {
                if other.stream != waiting.stream && other.round < waiting.round {
                    *per_stream.entry(other.stream).or_default() += 1;
                }
            }
            let most = per_stream.values().copied().max().unwrap_or(0);
            laps.most_laps = laps.most_laps.max(most);
            laps.most_streams_moving = laps.most_streams_moving.max(per_stream.len());
            if most >= 2 {
                laps.lapped_twice += 1;
                moving_sum += per_stream.len() as u64;
            }
        }
        if laps.lapped_twice > 0 {
            moving_sum *= 1000;
            laps.moving_per_mille = moving_sum / (laps.lapped_twice as u64 * (STREAMS as u64 - 1));
        }
        let mut latencies: Vec<Duration> = echoes.iter().map(|echo| echo.latency).collect();
        latencies.sort();
        laps.median = latencies.get(latencies.len() / 2).copied().unwrap_or_default();
        laps.max = latencies.last().copied().unwrap_or_default();
        laps
    }
}

impl std::fmt::Display for Laps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} echoes (latency median {:?}, max {:?}); most round trips of one stream while another's \
             message waited: {}; messages lapped twice or more: {} (the other streams moving meanwhile: \
             {}.{} % on average, at most {} of {})",
            self.echoes,
            self.median,
            self.max,
            self.most_laps,
            self.lapped_twice,
            self.moving_per_mille / 10,
            self.moving_per_mille % 10,
            self.most_streams_moving,
            STREAMS - 1
        )
    }
}

#[cfg(test)]
mod laps {
    use super::*;

    fn echo(stream: usize, sent: u64, sent_by_answer: u64, round: u64) -> Echo {
        Echo { stream, sent, sent_by_answer, round, latency: Duration::ZERO }
    }

    #[test]
    fn in_order_answers_lap_nothing() {
        let echoes = [echo(0, 0, 2, 1), echo(1, 1, 3, 2), echo(0, 2, 4, 3), echo(1, 3, 5, 4)];
        assert_eq!(Laps::of(&echoes).most_laps, 0);
    }

    #[test]
    fn answers_of_one_round_are_simultaneous() {
        // Stream 1's message 1 left after stream 0's message 0 and came in the same round.
        let echoes = [echo(1, 1, 2, 5), echo(0, 0, 2, 5)];
        assert_eq!(Laps::of(&echoes).most_laps, 0);
    }

    #[test]
    fn a_stream_going_on_while_another_waits_laps_it_once_per_round_trip() {
        // Stream 0's message 0 waits from send 0 to round 9; stream 1 completes messages 1, 2, 3.
        let echoes = [echo(1, 1, 2, 2), echo(1, 2, 3, 4), echo(1, 3, 4, 6), echo(0, 0, 4, 9)];
        let laps = Laps::of(&echoes);
        assert_eq!((laps.most_laps, laps.lapped_twice, laps.most_streams_moving), (3, 1, 1));
    }
}
