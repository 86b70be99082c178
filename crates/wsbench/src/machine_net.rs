//! Did the machine's own network stack drop packets during the run? On loopback nothing is
//! lost on a wire, but the kernel still drops: a CPU's receive backlog overflows
//! (`net.core.netdev_max_backlog`, 1,000 by default) under a burst of connections, a
//! listen queue overflows, and each drop costs the TCP sender a retransmission timeout (200
//! ms, doubling), during which a connection says nothing and no CPU is used by anyone. A run
//! that met them has latencies and stalls that are the kernel's, not the server's, so each
//! run reads the kernel's counters before and after its load (as [`crate::machine_load`]
//! does for the CPU) and records what changed; the report warns when any did. The counters
//! are the network namespace's (TCP) and the machine's (the softnet backlog), not the run's
//! sockets' alone: other programs' drops count too, and the report says "on this machine".
//! Reading never fails a run: an unreadable counter records nothing.

use serde::{Deserialize, Serialize};

/// The kernel's drop and retransmission counters at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetCounters {
    /// `Tcp: RetransSegs` (/proc/net/snmp).
    pub retransmitted_segments: u64,
    /// `TcpExt: TCPTimeouts`: retransmission timeouts that fired (/proc/net/netstat).
    pub rto_timeouts: u64,
    /// `TcpExt: TCPSynRetrans`: SYNs sent again (a connect whose SYN was dropped).
    pub syn_retransmits: u64,
    /// `TcpExt: ListenOverflows`: connections a full accept queue turned away.
    pub listen_overflows: u64,
    /// `TcpExt: ListenDrops`: SYNs a listener dropped, for any reason.
    pub listen_drops: u64,
    /// /proc/net/softnet_stat's second column over every CPU: packets the receive backlog
    /// dropped because it held `netdev_max_backlog` already.
    pub backlog_drops: u64,
}

/// What changed over the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineNetwork {
    pub retransmitted_segments: u64,
    pub rto_timeouts: u64,
    pub syn_retransmits: u64,
    pub listen_overflows: u64,
    pub listen_drops: u64,
    pub backlog_drops: u64,
    /// A sentence when the kernel dropped packets or TCP waited out timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl NetCounters {
    /// Reads the counters; `None` when /proc/net cannot be read.
    pub fn now() -> Option<NetCounters> {
        let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
        let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
        let softnet = std::fs::read_to_string("/proc/net/softnet_stat").unwrap_or_default();
        Some(NetCounters::parse(&snmp, &netstat, &softnet))
    }

    /// The counters in the three files' text (a counter a file lacks reads 0).
    pub fn parse(snmp: &str, netstat: &str, softnet: &str) -> NetCounters {
        let tcp = |name| field(snmp, "Tcp:", name);
        let ext = |name| field(netstat, "TcpExt:", name);
        NetCounters {
            retransmitted_segments: tcp("RetransSegs"),
            rto_timeouts: ext("TCPTimeouts"),
            syn_retransmits: ext("TCPSynRetrans"),
            listen_overflows: ext("ListenOverflows"),
            listen_drops: ext("ListenDrops"),
            backlog_drops: softnet_drops(softnet),
        }
    }

    /// What changed between `self` and `later`.
    pub fn until(&self, later: &NetCounters) -> MachineNetwork {
        let delta = |before: u64, after: u64| after.saturating_sub(before);
        let mut network = MachineNetwork {
            retransmitted_segments: delta(self.retransmitted_segments, later.retransmitted_segments),
            rto_timeouts: delta(self.rto_timeouts, later.rto_timeouts),
            syn_retransmits: delta(self.syn_retransmits, later.syn_retransmits),
            listen_overflows: delta(self.listen_overflows, later.listen_overflows),
            listen_drops: delta(self.listen_drops, later.listen_drops),
            backlog_drops: delta(self.backlog_drops, later.backlog_drops),
            warning: None,
        };
        network.warning = network.sentence();
        network
    }
}

impl MachineNetwork {
    /// "the kernel dropped N packets … : latency includes them", when it did.
    fn sentence(&self) -> Option<String> {
        let plural = crate::units::format::plural;
        let mut drops = Vec::new();
        if self.backlog_drops > 0 {
            drops.push(format!(
                "{} at a full receive backlog (net.core.netdev_max_backlog)",
                plural(self.backlog_drops, "packet", "packets")
            ));
        }
        if self.listen_overflows > 0 {
            drops.push(format!(
                "{} at a full listen queue",
                plural(self.listen_overflows, "connection", "connections")
            ));
        }
        if drops.is_empty() && self.rto_timeouts == 0 {
            return None;
        }
        let mut happened = Vec::new();
        if !drops.is_empty() {
            happened.push(format!("the kernel dropped {}", drops.join(" and ")));
        }
        if self.rto_timeouts > 0 {
            happened.push(format!(
                "TCP waited out {}",
                plural(self.rto_timeouts, "retransmission timeout", "retransmission timeouts")
            ));
        }
        let resent = match self.retransmitted_segments {
            0 => String::new(),
            n => format!(" ({} sent again)", plural(n, "segment", "segments")),
        };
        let advice = match self.backlog_drops {
            0 => "",
            _ => "; as root, `sysctl -w net.core.netdev_max_backlog=16384` makes room for bursts",
        };
        Some(format!(
            "on this machine during the run {}{resent}: latency and stalls include them{advice}",
            happened.join(" and ")
        ))
    }
}

/// The value of column `name` in the `prefix` table of an snmp-style file: a line of names,
/// then a line of values, both starting with `prefix`.
fn field(text: &str, prefix: &str, name: &str) -> u64 {
    let mut lines = text.lines().filter(|line| line.starts_with(prefix));
    while let (Some(names), Some(values)) = (lines.next(), lines.next()) {
        if let Some(at) = names.split_whitespace().position(|column| column == name) {
            return values.split_whitespace().nth(at).and_then(|v| v.parse().ok()).unwrap_or(0);
        }
    }
    0
}

/// The dropped packets of every CPU's row of /proc/net/softnet_stat (hexadecimal, second
/// column).
fn softnet_drops(text: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter_map(|dropped| u64::from_str_radix(dropped, 16).ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens RetransSegs InErrs\n\
        Tcp: 1 200 120000 -1 1137 284 0\n";
    const NETSTAT: &str = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPTimeouts TCPSynRetrans\n\
        TcpExt: 0 3 5 46 12\n\
        IpExt: InNoRoutes\nIpExt: 0\n";
    const SOFTNET: &str = "000b3b0e 00000010 00000000\n0009e6fc 00000001 00000000\n";

    #[test]
    fn the_counters_are_read_by_column_name() {
        let counters = NetCounters::parse(SNMP, NETSTAT, SOFTNET);
        assert_eq!(
            counters,
            NetCounters {
                retransmitted_segments: 284,
                rto_timeouts: 46,
                syn_retransmits: 12,
                listen_overflows: 3,
                listen_drops: 5,
                backlog_drops: 17,
            }
        );
        assert_eq!(NetCounters::parse("", "", ""), NetCounters::default(), "a missing counter reads 0");
    }

    #[test]
    fn a_quiet_run_has_no_warning_and_drops_are_named_in_one() {
        let before = NetCounters::parse(SNMP, NETSTAT, SOFTNET);
        assert_eq!(before.until(&before), MachineNetwork::default());
        let later = NetCounters {
            backlog_drops: before.backlog_drops + 3_320,
            rto_timeouts: before.rto_timeouts + 513,
            retransmitted_segments: before.retransmitted_segments + 600,
            ..before
        };
        let network = before.until(&later);
        assert_eq!((network.backlog_drops, network.rto_timeouts), (3_320, 513));
        assert_eq!(
            network.warning.as_deref(),
            Some(
                "on this machine during the run the kernel dropped 3,320 packets at a full receive backlog \
                 (net.core.netdev_max_backlog) and TCP waited out 513 retransmission timeouts (600 segments \
                 sent again): latency and stalls include them; as root, `sysctl -w \
                 net.core.netdev_max_backlog=16384` makes room for bursts"
            )
        );
    }

    #[test]
    fn drops_without_a_timeout_say_only_what_happened() {
        let before = NetCounters::default();
        let later = NetCounters { backlog_drops: 356, retransmitted_segments: 2, ..before };
        assert_eq!(
            before.until(&later).warning.as_deref(),
            Some(
                "on this machine during the run the kernel dropped 356 packets at a full receive backlog \
                 (net.core.netdev_max_backlog) (2 segments sent again): latency and stalls include them; as \
                 root, `sysctl -w net.core.netdev_max_backlog=16384` makes room for bursts"
            )
        );
        let resent_only = NetCounters { retransmitted_segments: 5, ..before };
        assert_eq!(before.until(&resent_only).warning, None, "a fast retransmit costs no timeout");
    }
}
