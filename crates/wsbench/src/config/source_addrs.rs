//! `--source-addrs`: the local addresses connections are spread over (one address has some
//! 28,000 ports towards one destination). Parsed from a range or a list, and each checked to
//! be this machine's by binding a socket to it (never connected): an address no interface has
//! would fail every connection of the run, so it is a usage error before any load instead.

use std::net::IpAddr;

use super::error::{ConfigError, invalid};

/// `127.0.0.2-127.0.0.40` or a comma-separated list of addresses.
pub fn parse_addr_range(text: &str) -> Result<Vec<IpAddr>, ConfigError> {
    let bad = |why: &str| invalid("source-addrs", format!("`{text}`: {why}; use e.g. 127.0.0.2-127.0.0.40"));
    let mut addrs = Vec::new();
    for part in text.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((first, last)) => {
                let first: std::net::Ipv4Addr =
                    first.trim().parse().map_err(|_| bad("not an IPv4 address"))?;
                let last: std::net::Ipv4Addr = last.trim().parse().map_err(|_| bad("not an IPv4 address"))?;
                let (a, b) = (u32::from(first), u32::from(last));
                if a > b || b - a > 65_535 {
                    return Err(bad("the range is reversed or too large"));
                }
                addrs.extend((a..=b).map(|n| IpAddr::from(std::net::Ipv4Addr::from(n))));
            }
            None => addrs.push(part.parse().map_err(|_| bad("not an IP address"))?),
        }
    }
    Ok(addrs)
}

/// `--source-addrs` parsed, each address one of this machine's.
pub(super) fn local_addrs(text: &str) -> Result<Vec<IpAddr>, ConfigError> {
    let addrs = parse_addr_range(text)?;
    for addr in &addrs {
        if let Err(e) = std::net::UdpSocket::bind((*addr, 0)) {
            let why = match e.raw_os_error() {
                Some(libc::EADDRNOTAVAIL) => "no interface of this machine has it".to_owned(),
                _ => format!("it cannot be bound here ({e})"),
            };
            return Err(invalid(
                "source-addrs",
                format!(
                    "{addr}: {why}; give addresses of this machine (`ip -brief address`), e.g. 127.0.0.2-127.0.0.40"
                ),
            ));
        }
    }
    Ok(addrs)
}
