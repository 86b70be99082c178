//! Encoders of the packets a load client sends. Each appends one whole packet to the
//! caller's buffer, computing the remaining length first so the packet is written in one
//! pass; nothing is allocated when the buffer has room. A packet that cannot be encoded
//! (a string over 65,535 bytes, a QoS 1 or 2 packet without an identifier) leaves the
//! buffer as it was.

use super::{EncodeError, MAX_REMAINING_LENGTH, QoS, Version};

/// What CONNECT says about the session. No will message: a benchmark has no use for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connect<'a> {
    pub client_id: &'a str,
    /// Seconds; the client must send something (PINGREQ at least) this often.
    pub keep_alive: u16,
    /// Clean session (3.1.1) or clean start (5).
    pub clean_start: bool,
    pub username: Option<&'a str>,
    pub password: Option<&'a [u8]>,
    /// MQTT 5: the Session Expiry Interval property, in seconds (none: 0, the session ends
    /// with the connection). Not sent under 3.1.1.
    pub session_expiry: Option<u32>,
}

/// One application message to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Publish<'a> {
    pub topic: &'a str,
    pub qos: QoS,
    /// Non-zero for QoS 1 and 2; ignored for QoS 0.
    pub packet_id: u16,
    pub retain: bool,
    pub payload: &'a [u8],
}

fn string_len(field: &'static str, value: &[u8]) -> Result<usize, EncodeError> {
    if value.len() > usize::from(u16::MAX) {
        return Err(EncodeError::StringTooLong { field, len: value.len() });
    }
    Ok(2 + value.len())
}

fn put_string(out: &mut Vec<u8>, value: &[u8]) {
    // Checked by `string_len` before anything was written.
    out.extend_from_slice(&(value.len() as u16).to_be_bytes());
    out.extend_from_slice(value);
}

/// Writes the fixed header of a packet whose body is `remaining` bytes.
fn put_fixed_header(out: &mut Vec<u8>, first: u8, remaining: usize) -> Result<(), EncodeError> {
    if remaining > MAX_REMAINING_LENGTH {
        return Err(EncodeError::PacketTooLarge(remaining));
    }
    out.reserve(5 + remaining);
    out.push(first);
    let mut value = remaining;
    loop {
        let byte = (value % 128) as u8;
        value /= 128;
        if value == 0 {
            out.push(byte);
            return Ok(());
        }
        out.push(byte | 0x80);
    }
}

fn properties_len(version: Version) -> usize {
    usize::from(version == Version::V5)
}

fn put_empty_properties(out: &mut Vec<u8>, version: Version) {
    if version == Version::V5 {
        out.push(0);
    }
}

fn non_zero(packet_id: u16, qos: u8) -> Result<u16, EncodeError> {
    if packet_id == 0 { Err(EncodeError::MissingPacketId(qos)) } else { Ok(packet_id) }
}

/// CONNECT: protocol name `MQTT`, the version's level, the flags, keep-alive, (v5: its
/// properties, the session expiry alone if any), then client id, username and password.
pub fn encode_connect(out: &mut Vec<u8>, version: Version, connect: &Connect<'_>) -> Result<(), EncodeError> {
    let username = connect.username.map(str::as_bytes);
    let expiry = connect.session_expiry.filter(|_| version == Version::V5);
    let properties = properties_len(version) + expiry.map_or(0, |_| 5);
    let mut remaining = 10 + properties + string_len("client id", connect.client_id.as_bytes())?;
    if let Some(username) = username {
        remaining += string_len("username", username)?;
    }
    if let Some(password) = connect.password {
        remaining += string_len("password", password)?;
    }
    let flags = u8::from(username.is_some()) << 7
        | u8::from(connect.password.is_some()) << 6
        | u8::from(connect.clean_start) << 1;
    put_fixed_header(out, 0x10, remaining)?;
    out.extend_from_slice(&[0, 4, b'M', b'Q', b'T', b'T', version.level(), flags]);
    out.extend_from_slice(&connect.keep_alive.to_be_bytes());
    match expiry {
        // Properties of 5 bytes: Session Expiry Interval (0x11), a four-byte integer.
        Some(seconds) => {
            out.extend_from_slice(&[5, 0x11]);
            out.extend_from_slice(&seconds.to_be_bytes());
        }
        None => put_empty_properties(out, version),
    }
    put_string(out, connect.client_id.as_bytes());
    if let Some(username) = username {
        put_string(out, username);
    }
    if let Some(password) = connect.password {
        put_string(out, password);
    }
    Ok(())
}

/// SUBSCRIBE to one topic filter at `qos` (v5: no-local, retain-as-published and retain
/// handling left at 0).
pub fn encode_subscribe(
    out: &mut Vec<u8>,
    version: Version,
    packet_id: u16,
    filter: &str,
    qos: QoS,
) -> Result<(), EncodeError> {
    let packet_id = non_zero(packet_id, 1)?;
    let remaining = 2 + properties_len(version) + string_len("topic filter", filter.as_bytes())? + 1;
    put_fixed_header(out, 0x82, remaining)?;
    out.extend_from_slice(&packet_id.to_be_bytes());
    put_empty_properties(out, version);
    put_string(out, filter.as_bytes());
    out.push(qos as u8);
    Ok(())
}

/// UNSUBSCRIBE from one topic filter.
pub fn encode_unsubscribe(
    out: &mut Vec<u8>,
    version: Version,
    packet_id: u16,
    filter: &str,
) -> Result<(), EncodeError> {
    let packet_id = non_zero(packet_id, 1)?;
    let remaining = 2 + properties_len(version) + string_len("topic filter", filter.as_bytes())?;
    put_fixed_header(out, 0xA2, remaining)?;
    out.extend_from_slice(&packet_id.to_be_bytes());
    put_empty_properties(out, version);
    put_string(out, filter.as_bytes());
    Ok(())
}

/// PUBLISH at any QoS (never marked DUP: a benchmark does not retransmit).
pub fn encode_publish(out: &mut Vec<u8>, version: Version, publish: &Publish<'_>) -> Result<(), EncodeError> {
    let qos = publish.qos as u8;
    let packet_id = if qos > 0 { Some(non_zero(publish.packet_id, qos)?) } else { None };
    let remaining = string_len("topic", publish.topic.as_bytes())?
        + packet_id.map_or(0, |_| 2)
        + properties_len(version)
        + publish.payload.len();
    put_fixed_header(out, 0x30 | qos << 1 | u8::from(publish.retain), remaining)?;
    put_string(out, publish.topic.as_bytes());
    if let Some(packet_id) = packet_id {
        out.extend_from_slice(&packet_id.to_be_bytes());
    }
    put_empty_properties(out, version);
    out.extend_from_slice(publish.payload);
    Ok(())
}

/// PUBACK of a QoS 1 PUBLISH received (v5: reason code success, which is left out).
pub fn encode_puback(out: &mut Vec<u8>, packet_id: u16) {
    let [high, low] = packet_id.to_be_bytes();
    out.extend_from_slice(&[0x40, 2, high, low]);
}

/// PUBREC of a QoS 2 PUBLISH received: stored, to be released by the broker's PUBREL.
pub fn encode_pubrec(out: &mut Vec<u8>, packet_id: u16) {
    let [high, low] = packet_id.to_be_bytes();
    out.extend_from_slice(&[0x50, 2, high, low]);
}

/// PUBREL of a QoS 2 PUBLISH sent, once the broker's PUBREC came (flags 0010).
pub fn encode_pubrel(out: &mut Vec<u8>, packet_id: u16) {
    let [high, low] = packet_id.to_be_bytes();
    out.extend_from_slice(&[0x62, 2, high, low]);
}

/// PUBCOMP of a QoS 2 PUBLISH received, answering the broker's PUBREL: the delivery is done.
pub fn encode_pubcomp(out: &mut Vec<u8>, packet_id: u16) {
    let [high, low] = packet_id.to_be_bytes();
    out.extend_from_slice(&[0x70, 2, high, low]);
}

/// PINGREQ: keeps the connection alive within the keep-alive interval.
pub fn encode_pingreq(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0xC0, 0]);
}

/// DISCONNECT (v5: normal disconnection, which is left out).
pub fn encode_disconnect(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0xE0, 0]);
}
