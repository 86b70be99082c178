//! The incremental decoder of what a broker sends a client. It reads the fixed header,
//! refuses a packet whose announced size is over the limit before waiting for its body, and
//! returns a view borrowing the caller's buffer together with the bytes it took; the caller
//! drops those bytes (or advances an offset) before the next call.

use super::codes::{connack_code_name, suback_code_name};
use super::{DecodeError, QoS, Version};

/// CONNACK: whether the broker accepted the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnAck {
    pub version: Version,
    pub session_present: bool,
    /// Return code (3.1.1) or reason code (5); 0 is success.
    pub code: u8,
}

impl ConnAck {
    pub fn is_accepted(&self) -> bool {
        self.code == 0
    }

    /// The code's name, e.g. `not_authorized`.
    pub fn code_name(&self) -> &'static str {
        connack_code_name(self.version, self.code)
    }
}

/// SUBACK: one code per topic filter of the SUBSCRIBE, the granted QoS or a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubAck<'a> {
    pub version: Version,
    pub packet_id: u16,
    pub codes: &'a [u8],
}

impl SubAck<'_> {
    /// The first refusal (a code of 0x80 or more), if any filter was refused.
    pub fn refusal(&self) -> Option<u8> {
        self.codes.iter().copied().find(|&code| code >= 0x80)
    }

    /// The name of a code of this packet, e.g. `failure` (3.1.1) or `not_authorized` (5).
    pub fn code_name(&self, code: u8) -> &'static str {
        suback_code_name(self.version, code)
    }
}

/// An application message delivered by the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishView<'a> {
    /// Empty when an MQTT 5 broker sent a topic alias instead (aliases are not tracked).
    pub topic: &'a str,
    pub qos: QoS,
    /// Present for QoS 1 and 2: acknowledge it with PUBACK.
    pub packet_id: Option<u16>,
    pub dup: bool,
    pub retain: bool,
    pub payload: &'a [u8],
}

/// A packet from the broker, borrowing the decoder's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packet<'a> {
    ConnAck(ConnAck),
    SubAck(SubAck<'a>),
    /// `codes`: MQTT 5 reason codes, one per filter (3.1.1 has none).
    UnsubAck {
        packet_id: u16,
        codes: &'a [u8],
    },
    Publish(PublishView<'a>),
    /// `code`: the MQTT 5 reason code (0 when left out, and always for 3.1.1).
    PubAck {
        packet_id: u16,
        code: u8,
    },
    /// QoS 2, first answer to a PUBLISH sent: received (v5: a reason code, 0 when left out).
    PubRec {
        packet_id: u16,
        code: u8,
    },
    /// QoS 2, the sender of a PUBLISH received releases it: answer PUBCOMP.
    PubRel {
        packet_id: u16,
        code: u8,
    },
    /// QoS 2, the end of a PUBLISH sent: complete.
    PubComp {
        packet_id: u16,
        code: u8,
    },
    PingResp,
    /// `code`: the MQTT 5 reason code (0 when left out, and always for 3.1.1).
    Disconnect {
        code: u8,
    },
}

/// Decodes broker packets of one connection's protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoder {
    version: Version,
    max_packet: usize,
}

/// The body of one packet, read front to back.
struct Body<'a> {
    bytes: &'a [u8],
    packet: &'static str,
}

impl<'a> Body<'a> {
    fn malformed(&self, reason: &'static str) -> DecodeError {
        DecodeError::Malformed { packet: self.packet, reason }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.bytes.len() < n {
            return Err(self.malformed("shorter than its fields"));
        }
        let (taken, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn variable_int(&mut self) -> Result<usize, DecodeError> {
        let mut value = 0usize;
        for shift in [0, 7, 14, 21] {
            let byte = self.byte()?;
            value |= usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.malformed("variable byte integer longer than four bytes"))
    }

    /// Skips MQTT 5 properties (their length, then that many bytes); nothing in 3.1.1.
    fn skip_properties(&mut self, version: Version) -> Result<(), DecodeError> {
        if version == Version::V5 {
            let len = self.variable_int()?;
            self.take(len)?;
        }
        Ok(())
    }

    fn string(&mut self) -> Result<&'a str, DecodeError> {
        let len = usize::from(self.u16()?);
        std::str::from_utf8(self.take(len)?).map_err(|_| self.malformed("string is not UTF-8"))
    }
}

/// The fixed header: first byte, header length, remaining length. `Ok(None)`: incomplete.
fn fixed_header(buf: &[u8]) -> Result<Option<(u8, usize, usize)>, DecodeError> {
    let Some(&first) = buf.first() else { return Ok(None) };
    let mut remaining = 0usize;
    for i in 0..4 {
        let Some(&byte) = buf.get(1 + i) else { return Ok(None) };
        remaining |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Ok(Some((first, 2 + i, remaining)));
        }
    }
    Err(DecodeError::MalformedLength)
}

impl Decoder {
    /// A decoder for `version` refusing packets over `max_packet` bytes (fixed header
    /// included); see [`super::DEFAULT_MAX_PACKET`].
    pub fn new(version: Version, max_packet: usize) -> Self {
        Decoder { version, max_packet }
    }

    pub fn version(&self) -> Version {
        self.version
    }

    /// Decodes the packet at the start of `buf`: the packet and the bytes it took, or
    /// `Ok(None)` when `buf` holds only part of one. Errors are final for the connection.
    pub fn decode<'a>(&self, buf: &'a [u8]) -> Result<Option<(Packet<'a>, usize)>, DecodeError> {
        let Some((first, header_len, remaining)) = fixed_header(buf)? else { return Ok(None) };
        let size = header_len.saturating_add(remaining);
        if size > self.max_packet {
            return Err(DecodeError::PacketTooLarge { size, limit: self.max_packet });
        }
        let Some(body) = buf.get(header_len..size) else { return Ok(None) };
        let packet = self.packet(first, body)?;
        Ok(Some((packet, size)))
    }

    fn packet<'a>(&self, first: u8, bytes: &'a [u8]) -> Result<Packet<'a>, DecodeError> {
        let kind = first >> 4;
        let flags = first & 0x0f;
        let packet = match kind {
            2 => "CONNACK",
            3 => return self.publish(flags, bytes).map(Packet::Publish),
            4 => "PUBACK",
            5 => "PUBREC",
            6 => "PUBREL",
            7 => "PUBCOMP",
            9 => "SUBACK",
            11 => "UNSUBACK",
            13 => "PINGRESP",
            14 => "DISCONNECT",
            _ => return Err(DecodeError::UnexpectedPacket(kind)),
        };
        let mut body = Body { bytes, packet };
        // PUBREL alone has flags 0010 (MQTT 3.1.1 §3.6.1).
        if flags != if kind == 6 { 2 } else { 0 } {
            return Err(body.malformed("reserved flags are set"));
        }
        match kind {
            2 => self.connack(&mut body).map(Packet::ConnAck),
            4..=7 => {
                let packet_id = body.u16()?;
                let code = if body.bytes.is_empty() { 0 } else { body.byte()? };
                Ok(match kind {
                    4 => Packet::PubAck { packet_id, code },
                    5 => Packet::PubRec { packet_id, code },
                    6 => Packet::PubRel { packet_id, code },
                    _ => Packet::PubComp { packet_id, code },
                })
            }
            9 => {
                let packet_id = body.u16()?;
                body.skip_properties(self.version)?;
                if body.bytes.is_empty() {
                    return Err(body.malformed("no return codes"));
                }
                Ok(Packet::SubAck(SubAck { version: self.version, packet_id, codes: body.bytes }))
            }
            11 => {
                let packet_id = body.u16()?;
                if !body.bytes.is_empty() {
                    body.skip_properties(self.version)?;
                }
                Ok(Packet::UnsubAck { packet_id, codes: body.bytes })
            }
            13 => Ok(Packet::PingResp),
            _ => Ok(Packet::Disconnect { code: if body.bytes.is_empty() { 0 } else { body.byte()? } }),
        }
    }

    fn connack(&self, body: &mut Body<'_>) -> Result<ConnAck, DecodeError> {
        let flags = body.byte()?;
        if flags & 0xfe != 0 {
            return Err(body.malformed("reserved acknowledge flags are set"));
        }
        let code = body.byte()?;
        // A broker that does not speak 5 answers with a 3.1.1 CONNACK: no properties.
        if !body.bytes.is_empty() {
            body.skip_properties(self.version)?;
        }
        Ok(ConnAck { version: self.version, session_present: flags & 1 == 1, code })
    }

    fn publish<'a>(&self, flags: u8, bytes: &'a [u8]) -> Result<PublishView<'a>, DecodeError> {
        let mut body = Body { bytes, packet: "PUBLISH" };
        let qos = QoS::from_bits(flags >> 1 & 3).ok_or(body.malformed("QoS 3"))?;
        let topic = body.string()?;
        let packet_id = if qos == QoS::AtMostOnce { None } else { Some(body.u16()?) };
        body.skip_properties(self.version)?;
        Ok(PublishView {
            topic,
            qos,
            packet_id,
            dup: flags & 8 != 0,
            retain: flags & 1 != 0,
            payload: body.bytes,
        })
    }
}
