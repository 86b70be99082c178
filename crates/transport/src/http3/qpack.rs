//! QPACK (RFC 9204) with the static table only: this side advertises a dynamic table of
//! capacity 0 (the default) and never uses one, so no encoder or decoder stream carries
//! anything and a field section stands alone. The encoder names static entries by index
//! and writes everything else as literals without Huffman coding; the decoder reads any
//! section a peer may send under a zero-capacity table, Huffman-coded strings included
//! ([`super::huffman`]: real stacks such as quic-go and aioquic code theirs).

use super::error::{Code, Error};
use super::huffman;
use super::static_table::STATIC;

/// One field line: a name and its value, as bytes.
pub type Field = (Vec<u8>, Vec<u8>);

/// Appends the field section of `fields` (a HEADERS frame's payload, without its head).
pub fn encode<N: AsRef<[u8]>, V: AsRef<[u8]>>(fields: &[(N, V)], out: &mut Vec<u8>) {
    // Required Insert Count 0, Delta Base 0: no dynamic table.
    out.extend_from_slice(&[0, 0]);
    for (name, value) in fields {
        let (name, value) = (name.as_ref(), value.as_ref());
        let exact = STATIC.iter().position(|(n, v)| n.as_bytes() == name && v.as_bytes() == value);
        if let Some(index) = exact {
            // Indexed field line, static: 1 T=1 index(6).
            put_int(0b1100_0000, 6, index as u64, out);
            continue;
        }
        if let Some(index) = STATIC.iter().position(|(n, _)| n.as_bytes() == name) {
            // Literal with name reference, static: 01 N=0 T=1 index(4).
            put_int(0b0101_0000, 4, index as u64, out);
        } else {
            // Literal with literal name: 001 N=0 H=0 length(3).
            put_int(0b0010_0000, 3, name.len() as u64, out);
            out.extend_from_slice(name);
        }
        put_int(0, 7, value.len() as u64, out);
        out.extend_from_slice(value);
    }
}

/// The fields of a field section, at most `max_size` bytes of them counted as RFC 9114
/// §4.2.2 does (name + value + 32 per field).
pub fn decode(mut block: &[u8], max_size: usize) -> Result<Vec<Field>, Error> {
    let (insert_count, n) = get_int(block, 8)?;
    block = &block[n..];
    let (_delta_base, n) = get_int(block, 7)?;
    block = &block[n..];
    if insert_count != 0 {
        return Err(failed("a field section referring to a dynamic table (capacity 0 was advertised)"));
    }
    let mut fields = Vec::new();
    let mut size = 0usize;
    while !block.is_empty() {
        let (field, n) = field_line(block)?;
        block = &block[n..];
        size = size.saturating_add(field.0.len() + field.1.len() + 32);
        if size > max_size {
            return Err(Error::new(Code::ExcessiveLoad, "a field section larger than the limit"));
        }
        fields.push(field);
    }
    Ok(fields)
}

/// One field line at the front of `block` and the bytes it took.
fn field_line(block: &[u8]) -> Result<(Field, usize), Error> {
    let first = block[0];
    if first & 0b1000_0000 != 0 {
        if first & 0b0100_0000 == 0 {
            return Err(failed("an indexed field line referring to the dynamic table"));
        }
        let (index, n) = get_int(block, 6)?;
        let (name, value) = static_entry(index)?;
        return Ok(((name.into(), value.into()), n));
    }
    if first & 0b0100_0000 != 0 {
        if first & 0b0001_0000 == 0 {
            return Err(failed("a literal naming a dynamic table entry"));
        }
        let (index, n) = get_int(block, 4)?;
        let (name, _) = static_entry(index)?;
        let (value, m) = string(&block[n..], 7)?;
        return Ok(((name.into(), value), n + m));
    }
    if first & 0b0010_0000 != 0 {
        let (name, n) = string(block, 3)?;
        let (value, m) = string(&block[n..], 7)?;
        return Ok(((name, value), n + m));
    }
    Err(failed("a post-base field line (a dynamic table reference)"))
}

fn static_entry(index: u64) -> Result<(&'static [u8], &'static [u8]), Error> {
    let (name, value) = usize::try_from(index)
        .ok()
        .and_then(|index| STATIC.get(index))
        .ok_or_else(|| failed("a static table index past its 99 entries"))?;
    Ok((name.as_bytes(), value.as_bytes()))
}

/// A string literal whose length has a `prefix`-bit integer; the bit above it is H (the
/// string is Huffman-coded).
fn string(block: &[u8], prefix: u8) -> Result<(Vec<u8>, usize), Error> {
    let first = *block.first().ok_or_else(|| failed("a field line cut short"))?;
    let (len, n) = get_int(block, prefix)?;
    let end = usize::try_from(len).ok().and_then(|len| n.checked_add(len));
    let bytes = end.and_then(|end| block.get(n..end)).ok_or_else(|| failed("a string cut short"))?;
    if first & (1 << prefix) == 0 {
        return Ok((bytes.to_vec(), n + bytes.len()));
    }
    let mut decoded = Vec::with_capacity(bytes.len() * 8 / 5);
    huffman::decode(bytes, &mut decoded).map_err(|e| failed(e.what()))?;
    Ok((decoded, n + bytes.len()))
}

fn failed(what: &'static str) -> Error {
    Error::new(Code::QpackDecompressionFailed, what)
}

/// Appends a prefixed integer (RFC 7541 §5.1) with the `prefix` low bits of the first
/// byte, its high bits from `flags`.
fn put_int(flags: u8, prefix: u8, value: u64, out: &mut Vec<u8>) {
    let max = (1u64 << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 0x80 {
        out.push((rest as u8 & 0x7f) | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A prefixed integer at the front of `block` and the bytes it took.
fn get_int(block: &[u8], prefix: u8) -> Result<(u64, usize), Error> {
    let first = *block.first().ok_or_else(|| failed("a field section cut short"))?;
    let max = (1u64 << prefix) - 1;
    let mut value = u64::from(first) & max;
    if value < max {
        return Ok((value, 1));
    }
    for (i, byte) in block[1..].iter().enumerate() {
        let shift = 7 * i as u32;
        if shift > 56 {
            return Err(failed("an integer past 64 bits"));
        }
        value = value.saturating_add(u64::from(byte & 0x7f) << shift);
        if byte & 0x80 == 0 {
            return Ok((value, i + 2));
        }
    }
    Err(failed("an integer cut short"))
}

#[cfg(test)]
#[path = "qpack_tests.rs"]
mod tests;
