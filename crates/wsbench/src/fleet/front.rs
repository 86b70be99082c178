//! An HTTP/2 front for a fleet server that speaks only HTTP/1.1: HAProxy from Debian,
//! taking WebSockets over HTTP/2 (RFC 8441, h2c with prior knowledge) and passing each to the
//! server as an HTTP/1.1 upgrade, so that `wsbench compare --http2` measures the same server
//! over both. The front is a fleet member of its own (a manifest made here), started and
//! stopped like any server; its configuration lives in a temporary file. HTTP/2 is the one
//! transport it fronts: HAProxy cannot take WebSockets over HTTP/3 (RFC 9220) to pass on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Manifest;

/// Debian's HAProxy.
pub const HAPROXY: &str = "/usr/sbin/haproxy";

/// The transport a front takes (by its name in the registry).
pub const FRONTED: &str = "http2";

/// Whether a front can take WebSockets over `transport` to a server that lacks it.
pub fn fronts(transport: &dyn crate::engine::dial::Dial) -> bool {
    transport.name() == FRONTED
}

/// Whether HAProxy is installed.
pub fn available() -> bool {
    Path::new(HAPROXY).is_file()
}

/// The front of the server `name` listening on `backend_port`: HAProxy on one thread, its
/// port given by the fleet's `{port}`, up to 100 streams per connection (its default).
pub fn haproxy_before(name: &str, backend_port: u16) -> std::io::Result<Manifest> {
    let dir =
        std::env::temp_dir().join(format!("wsbench-front-{name}-{}-{backend_port}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let config = dir.join("haproxy.cfg");
    std::fs::write(&config, config_text(backend_port))?;
    Ok(Manifest {
        name: format!("haproxy before {name}"),
        language: "C".into(),
        library: "haproxy".into(),
        version: String::new(),
        description: "HAProxy as an HTTP/2 front (RFC 8441 to HTTP/1.1 upgrade)".into(),
        requires: Vec::new(),
        install: Vec::new(),
        installed: format!("test -x {HAPROXY}"),
        start: format!("WSBENCH_FRONT_PORT={{port}} exec {HAPROXY} -db -f '{}'", config.display()),
        threads: 1,
        http: false,
        websocket: true,
        transports: vec![FRONTED.to_owned()],
        env: BTreeMap::new(),
        deflate: true,
        pubsub: true,
        protocols: vec![crate::protocol::DEFAULT.to_owned()],
        paths: BTreeMap::new(),
        dir: PathBuf::from(&dir),
    })
}

/// HAProxy's configuration: h2c on the front's port (from the environment), the server
/// behind it; file limits within the machine's 20,000 (HAProxy needs two per connection).
fn config_text(backend_port: u16) -> String {
    format!(
        "global\n    maxconn 9000\n    nbthread 1\n\
         defaults\n    mode http\n    timeout connect 5s\n    timeout client 120s\n    timeout server 120s\n\
         \x20   timeout tunnel 120s\n    maxconn 9000\n\
         frontend h2c\n    bind 127.0.0.1:\"${{WSBENCH_FRONT_PORT}}\" proto h2\n    default_backend server\n\
         backend server\n    server it 127.0.0.1:{backend_port} maxconn 9000\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_takes_a_transport_of_the_registry() {
        let fronted = crate::engine::dial::by_name(FRONTED).expect("a transport of the registry");
        assert!(fronts(fronted));
        assert!(!fronts(crate::engine::dial::DIALS[0]));
    }

    #[test]
    fn the_front_takes_h2c_and_passes_to_the_server() {
        let text = config_text(4321);
        assert!(text.contains("proto h2"), "{text}");
        assert!(text.contains("server it 127.0.0.1:4321"), "{text}");
        assert!(text.contains("${WSBENCH_FRONT_PORT}"), "{text}");
    }
}
