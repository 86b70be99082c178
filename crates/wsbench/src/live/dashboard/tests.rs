//! The page's server over real sockets: what a late page is sent, what an open one is sent
//! as it comes, and that closing waits for no browser.

use std::io::Read;

use super::*;
use crate::engine::Phase;
use crate::metrics::Counters;

fn second(n: u64) -> (Second, u64) {
    let second = Second {
        second: n,
        phase: Phase::Measured,
        stage: None,
        round_trips: 100 + n,
        connections_open: 4,
        awaiting: false,
        reconnects: 0,
        stall_s: 0,
        p50_us: 10,
        p90_us: 20,
        p99_us: 30,
        max_us: 40,
        counters: Counters::default(),
        errors: Default::default(),
        remaining_secs: None,
        shards: None,
    };
    (second, 35)
}

use crate::live::http_head::exchange as get;

/// Reads the stream until `text` has arrived (for at most a minute); what arrived.
fn read_until(stream: &mut TcpStream, text: &str) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let started = Instant::now();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains(text) {
        assert!(started.elapsed() < Duration::from_secs(60), "no {text:?} within a minute: {seen}");
        let read = stream.read(&mut buf).unwrap();
        assert!(read > 0, "the stream ended before {text:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..read]));
    }
    seen
}

#[test]
fn serves_the_self_contained_page_and_refuses_other_paths() {
    let dashboard = Dashboard::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let page = get(dashboard.addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page.contains("Content-Type: text/html; charset=utf-8\r\n"));
    assert!(page.contains("new EventSource('/events')"), "the page reads its events");
    // Nothing is fetched from elsewhere: no script, style or image source of its own.
    for outside in ["src=", "href=\"http", "@import", "url("] {
        assert!(!PAGE.contains(outside), "the page fetches something: {outside}");
    }
    assert!(get(dashboard.addr, "GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
    assert!(get(dashboard.addr, "POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405 "));
    assert!(get(dashboard.addr, "nonsense\r\n\r\n").starts_with("HTTP/1.1 400 "));
    dashboard.close();
}

#[test]
fn a_late_page_gets_the_history_then_each_event_as_it_comes_and_the_end() {
    let dashboard = Dashboard::start("127.0.0.1:0".parse().unwrap()).unwrap();
    dashboard.seconds(&[second(0), second(1)], None, None);
    dashboard.note("server 2 of 3");
    let mut stream = TcpStream::connect(dashboard.addr).unwrap();
    stream.write_all(b"GET /events HTTP/1.1\r\n\r\n").unwrap();
    let first = read_until(&mut stream, "server 2 of 3");
    assert!(first.contains("Content-Type: text/event-stream\r\n"), "{first}");
    assert!(first.contains("\"round_trips\":100") && first.contains("\"round_trips\":101"), "{first}");
    dashboard.seconds(&[second(2)], None, None);
    assert!(read_until(&mut stream, "\"round_trips\":102").contains("\"p999\":35"));
    // A new measurement counts its seconds from 0 again: the page is told by its step.
    dashboard.seconds(&[second(0)], None, None);
    let next = read_until(&mut stream, "\"step\":1}");
    assert!(next.contains("\"round_trips\":100"), "{next}");
    dashboard.push(Event::new(END, "{\"report\":\"done\"}".to_owned()));
    let started = Instant::now();
    dashboard.close();
    let rest = read_until(&mut stream, "event: end\ndata: {\"report\":\"done\"}");
    assert!(rest.contains("done"));
    assert!(started.elapsed() < CLOSE_GRACE + Duration::from_secs(5), "closing waited for the page");
    // Once closed, the page's stream ends.
    let mut tail = Vec::new();
    let _ = stream.read_to_end(&mut tail);
}

#[test]
fn closing_waits_for_no_browser_and_frees_the_port() {
    let dashboard = Dashboard::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = dashboard.addr;
    // A connection that never sends a request holds nothing up.
    let _idle = TcpStream::connect(addr).unwrap();
    dashboard.close();
    assert!(TcpListener::bind(addr).is_ok(), "the listener stayed open after close");
}

#[test]
fn a_taken_port_is_a_bind_error_naming_the_flag() {
    let first = Dashboard::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let source = Dashboard::start(first.addr).unwrap_err();
    let message = BindError { addr: first.addr, source }.to_string();
    assert!(message.starts_with(&format!("--dashboard {}: cannot listen there", first.addr)), "{message}");
    first.close();
}
