//! The report's lines on how the endpoint was reached, shown only when the run used the
//! handshake or TLS options or spoke TLS: the extra headers sent (names only: values may be
//! secrets), the subprotocol the server chose, the TLS version and cipher suite negotiated,
//! each with how many connections, and the TLS handshakes, full and resumed, with the CPU
//! each kind cost the client and, when it said, the server. Reads only the result file.

use std::collections::BTreeMap;

use crate::metrics::TlsHandshakes;
use crate::result::RunResult;
use crate::units::format::group;

/// `(label, text)` lines: `handshake:` and `tls:`, each only when there is something to say.
pub fn endpoint_lines(result: &RunResult) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    let mut handshake = Vec::new();
    let headers: Vec<&str> = result.config["handshake"]["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h.as_str()?.split(':').next())
        .collect();
    if !headers.is_empty() {
        handshake.push(format!("headers {}", headers.join(", ")));
    }
    let offered: Vec<&str> = result.config["handshake"]["subprotocols"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str())
        .collect();
    if !offered.is_empty() {
        let chosen = by_value(&result.counters.subprotocols_chosen);
        let chosen = if chosen.is_empty() { "none chosen".to_owned() } else { format!("chosen {chosen}") };
        handshake.push(format!("subprotocol offered {}, {chosen}", offered.join(",")));
    }
    if !handshake.is_empty() {
        lines.push(("handshake:", handshake.join("; ")));
    }
    if !result.counters.tls_negotiated.is_empty() {
        lines.push(("tls:", by_value(&result.counters.tls_negotiated)));
    }
    let client = &result.counters.tls_handshakes;
    if !client.is_empty() {
        let mut text = format!("client {}", kinds(client));
        if client.tried > 0 {
            text.push_str(&format!(" ({} allowed to resume)", group(client.tried)));
        }
        if let Some(server) = &result.server.tls_handshakes {
            text.push_str(&format!("; server {}", kinds(server)));
        }
        lines.push(("resumption:", text));
    }
    lines
}

/// `3 full (410 µs CPU each), 9 resumed (120 µs CPU each)`.
fn kinds(handshakes: &TlsHandshakes) -> String {
    let (full_us, resumed_us) = handshakes.cpu_us_each();
    let each = |us: Option<f64>| us.map_or(String::new(), |us| format!(" ({us:.0} µs CPU each)"));
    format!(
        "{} full{}, {} resumed{}",
        group(handshakes.full),
        each(full_us),
        group(handshakes.resumed),
        each(resumed_us)
    )
}

/// `a (3), b (1)`: each value with its count of connections.
fn by_value(counts: &BTreeMap<String, u64>) -> String {
    let parts: Vec<String> = counts.iter().map(|(value, n)| format!("{value} ({})", group(*n))).collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn lines_appear_only_when_the_run_used_the_options() {
        let plain = RunResult::from_outcome(&fixture::closed_loop());
        assert!(endpoint_lines(&plain).is_empty());
        let mut used = fixture::closed_loop();
        used.config["handshake"] = serde_json::json!({
            "headers": ["Authorization: <redacted>", "X-User: u-{conn}"],
            "subprotocols": ["chat", "v2"],
        });
        used.metrics.counters.subprotocols_chosen.insert("chat".into(), 1000);
        used.metrics.counters.tls_negotiated.insert("TLSv1.3 TLS13_AES_256_GCM_SHA384".into(), 1000);
        used.metrics.counters.tls_handshakes = TlsHandshakes {
            full: 2,
            resumed: 998,
            tried: 999,
            full_cpu_ns: 1_640_000,
            resumed_cpu_ns: 119_760_000,
        };
        let served = TlsHandshakes {
            full: 2,
            resumed: 998,
            full_cpu_ns: 1_000_000,
            resumed_cpu_ns: 99_800_000,
            tried: 0,
        };
        used.server.tls_handshakes = Some(Box::new(served));
        let lines = endpoint_lines(&RunResult::from_outcome(&used));
        assert_eq!(
            lines,
            [
                (
                    "handshake:",
                    "headers Authorization, X-User; subprotocol offered chat,v2, chosen chat (1,000)"
                        .to_owned()
                ),
                ("tls:", "TLSv1.3 TLS13_AES_256_GCM_SHA384 (1,000)".to_owned()),
                (
                    "resumption:",
                    "client 2 full (820 µs CPU each), 998 resumed (120 µs CPU each) (999 allowed to resume); \
                     server 2 full (500 µs CPU each), 998 resumed (100 µs CPU each)"
                        .to_owned()
                ),
            ]
        );
    }
}
