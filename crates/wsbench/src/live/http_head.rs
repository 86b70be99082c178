//! The head of an HTTP/1.1 request to one of the live view's small servers (the metrics
//! endpoint and the dashboard): its request line, the headers read and dropped, within a
//! bound so that no client can make either server buffer without limit.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;

/// The longest request head either server reads before it answers 400.
pub const MAX_HEAD: usize = 8 * 1024;

/// The request line of the head `stream` sends, or `None` when the head passes [`MAX_HEAD`].
pub fn read_request_line(stream: &TcpStream) -> std::io::Result<Option<String>> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    let mut head = reader.read_line(&mut request_line)?;
    loop {
        if head > MAX_HEAD {
            return Ok(None);
        }
        let mut header = String::new();
        let read = reader.read_line(&mut header)?;
        head += read;
        if read == 0 || header == "\r\n" || header == "\n" {
            return Ok(Some(request_line));
        }
    }
}

/// Test helper of both servers: sends `request` raw and reads the whole response (both
/// servers close after answering).
#[cfg(test)]
pub fn exchange(addr: std::net::SocketAddr, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
