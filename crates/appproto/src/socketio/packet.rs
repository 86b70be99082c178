//! Socket.IO protocol 5 packets, decoded from the payload of an Engine.IO message:
//! `TYPE[ATTACHMENTS-][/NAMESPACE,][ACK_ID][DATA]`. The view borrows the text; the data is
//! JSON text whose array elements are found by their boundaries when asked for.

use std::borrow::Cow;

use super::DecodeError;
use crate::json::{ArrayElements, parse_u64, string_value};

/// What a Socket.IO packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    Connect = 0,
    Disconnect = 1,
    Event = 2,
    Ack = 3,
    ConnectError = 4,
    BinaryEvent = 5,
    BinaryAck = 6,
}

/// A Socket.IO packet, borrowing the message it came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub kind: PacketType,
    /// `/` unless the packet names another namespace.
    pub namespace: &'a str,
    /// How many binary messages follow with this packet's attachments (binary types only).
    pub attachments: usize,
    /// The acknowledgement id of an event that wants one, or of an ACK.
    pub ack_id: Option<u64>,
    /// The JSON text of the data, if any: an array for events and acks, an object for
    /// CONNECT (`{"sid":…}`) and CONNECT_ERROR (`{"message":…}`).
    pub data: Option<&'a str>,
}

/// An event: its name and the JSON text of each argument.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    pub name: Cow<'a, str>,
    /// The arguments after the name; [`ArrayElements::rest`] gives them as one text.
    pub args: ArrayElements<'a>,
}

#[derive(serde::Deserialize)]
struct ErrorData<'a> {
    #[serde(borrow)]
    message: Cow<'a, str>,
}

impl<'a> Packet<'a> {
    /// The elements of the data array: an event's name and arguments, or an ack's values.
    pub fn args(&self) -> Result<ArrayElements<'a>, DecodeError> {
        ArrayElements::new(self.data.unwrap_or(""))
            .map_err(|_| DecodeError::Malformed("data is not an array"))
    }

    /// The event of an EVENT or BINARY_EVENT packet: its name (the first element) and args.
    pub fn event(&self) -> Result<Event<'a>, DecodeError> {
        if !matches!(self.kind, PacketType::Event | PacketType::BinaryEvent) {
            return Err(DecodeError::Malformed("not an event"));
        }
        let mut args = self.args()?;
        let name = args.next().and_then(Result::ok).and_then(string_value);
        let name = name.ok_or(DecodeError::Malformed("an event's first element is not its name"))?;
        Ok(Event { name, args })
    }

    /// The reason of a CONNECT_ERROR: `{"message":…}` (socket.io 3+) or a bare string.
    pub fn error_message(&self) -> Option<Cow<'a, str>> {
        let data = self.data?.trim();
        if data.starts_with('"') {
            return string_value(data);
        }
        serde_json::from_str::<ErrorData<'a>>(data).ok().map(|error| error.message)
    }
}

/// The attachment index of a placeholder element (`{"_placeholder":true,"num":K}`), which
/// stands for the K-th binary message after the packet.
pub fn placeholder_num(element: &str) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Placeholder {
        #[serde(rename = "_placeholder")]
        placeholder: bool,
        num: usize,
    }
    let element = element.trim();
    if !element.starts_with('{') || !element.contains("_placeholder") {
        return None;
    }
    serde_json::from_str::<Placeholder>(element).ok().filter(|p| p.placeholder).map(|p| p.num)
}

/// Splits the decimal digits at the start of `text` off the rest.
fn leading_digits(text: &str) -> (&str, &str) {
    let end = text.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(text.len());
    text.split_at(end)
}

/// Decodes a Socket.IO packet from the payload of an Engine.IO message (after its `4`).
pub fn decode_packet(text: &str) -> Result<Packet<'_>, DecodeError> {
    let mut chars = text.chars();
    let kind = match chars.next() {
        Some('0') => PacketType::Connect,
        Some('1') => PacketType::Disconnect,
        Some('2') => PacketType::Event,
        Some('3') => PacketType::Ack,
        Some('4') => PacketType::ConnectError,
        Some('5') => PacketType::BinaryEvent,
        Some('6') => PacketType::BinaryAck,
        Some(other) => return Err(DecodeError::UnknownPacketType(other)),
        None => return Err(DecodeError::Malformed("empty packet")),
    };
    let mut rest = chars.as_str();
    let mut attachments = 0;
    if matches!(kind, PacketType::BinaryEvent | PacketType::BinaryAck) {
        let (digits, after) = leading_digits(rest);
        let count = parse_u64(digits.as_bytes()).and_then(|n| usize::try_from(n).ok());
        attachments = count.ok_or(DecodeError::Malformed("attachment count"))?;
        rest = after.strip_prefix('-').ok_or(DecodeError::Malformed("no '-' after the attachment count"))?;
    }
    let mut namespace = "/";
    if rest.starts_with('/') {
        let end = rest.find(',').unwrap_or(rest.len());
        namespace = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
    }
    let (digits, data) = leading_digits(rest);
    let ack_id = match digits {
        "" => None,
        _ => Some(parse_u64(digits.as_bytes()).ok_or(DecodeError::Malformed("acknowledgement id"))?),
    };
    let data = Some(data).filter(|data| !data.is_empty());
    Ok(Packet { kind, namespace, attachments, ack_id, data })
}
