//! Micro-benchmarks of the codec's hot paths, reported in bytes per second: masking (with a
//! byte-at-a-time baseline), frame decoding and encoding, and incremental UTF-8 validation
//! (with `std::str::from_utf8` as the baseline). They exist so a change to the frame path
//! can be measured before it reaches the load engine, where it would hide in network noise.
//!
//! Run: `cargo bench -p wsbench-proto --bench codec -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use wsbench_proto::{Decoder, OpCode, Role, Utf8Validator, apply_mask, write_frame};

const KEY: [u8; 4] = [0x37, 0xFA, 0x21, 0x3D];
const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// Masking the obvious way, one byte at a time: the baseline `apply_mask` must beat.
#[inline(never)]
fn mask_bytewise(buf: &mut [u8], key: [u8; 4], offset: usize) {
    for (i, byte) in buf.iter_mut().enumerate() {
        *byte ^= key[(offset + i) % 4];
    }
}

fn size_name(size: usize) -> String {
    match size {
        s if s >= MIB => format!("{}MiB", s / MIB),
        s if s >= KIB => format!("{}KiB", s / KIB),
        s => format!("{s}B"),
    }
}

fn mask(c: &mut Criterion) {
    let mut group = c.benchmark_group("mask");
    for size in [20, KIB, 64 * KIB, MIB, 16 * MIB] {
        let mut buf: Vec<u8> = (0..size).map(|i| i as u8).collect();
        group.throughput(Throughput::Bytes(size as u64));
        // Masking in place twice restores the buffer, so one buffer serves every iteration.
        group.bench_function(BenchmarkId::new("apply_mask", size_name(size)), |b| {
            b.iter(|| apply_mask(black_box(&mut buf), black_box(KEY), 0))
        });
        group.bench_function(BenchmarkId::new("bytewise", size_name(size)), |b| {
            b.iter(|| mask_bytewise(black_box(&mut buf), black_box(KEY), 0))
        });
    }
    group.finish();
}

/// Masked binary frames as a client sends them: `count` frames of `size` payload bytes.
fn client_frames(size: usize, count: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..size).map(|i| (i * 7) as u8).collect();
    let mut wire = Vec::new();
    for _ in 0..count {
        write_frame(&mut wire, true, OpCode::Binary, Some(KEY), &payload);
    }
    wire
}

/// Decodes every frame of `wire` with a fresh server-role decoder. Binary payloads are
/// unmasked in place, which only flips their bytes back and forth between iterations.
fn decode_all(wire: &mut [u8]) -> usize {
    let mut decoder = Decoder::new(Role::Server, wsbench_proto::DEFAULT_MAX_MESSAGE);
    let mut at = 0;
    let mut payload = 0;
    while at < wire.len() {
        let chunk = decoder.decode(&mut wire[at..]).expect("valid frames").expect("whole frames");
        payload += chunk.payload.len();
        at += chunk.consumed;
    }
    payload
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for (name, size, count) in [("20B_x1000", 20, 1000), ("64KiB", 64 * KIB, 1), ("16MiB", 16 * MIB, 1)] {
        let mut wire = client_frames(size, count);
        assert_eq!(decode_all(&mut wire), size * count);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.bench_function(BenchmarkId::new("server_masked", name), |b| {
            b.iter(|| decode_all(black_box(&mut wire)))
        });
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    for (name, size, mask) in [
        ("unmasked_20B", 20, None),
        ("unmasked_64KiB", 64 * KIB, None),
        ("masked_64KiB", 64 * KIB, Some(KEY)),
    ] {
        let payload: Vec<u8> = (0..size).map(|i| i as u8).collect();
        let mut out = Vec::with_capacity(size + 14);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(BenchmarkId::new("write_frame", name), |b| {
            b.iter(|| {
                out.clear();
                write_frame(&mut out, true, OpCode::Binary, black_box(mask), black_box(&payload));
                black_box(out.len())
            })
        });
    }
    group.finish();
}

/// About 64 KiB of `pattern` repeated, cut at a character boundary.
fn text_of(pattern: &str) -> String {
    let mut text = pattern.repeat(64 * KIB / pattern.len() + 1);
    let mut cut = 64 * KIB;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text
}

fn utf8(c: &mut Criterion) {
    let mut group = c.benchmark_group("utf8");
    let ascii = text_of("The quick brown fox jumps over the lazy dog. 0123456789\n");
    let mixed = text_of("κόσμε Hello-µ@ßöäüàá-UTF-8!! 𝄞 中文字符 Ünïcödé ✓ ");
    for (name, text) in [("ascii_64KiB", &ascii), ("mixed_64KiB", &mixed)] {
        let bytes = text.as_bytes();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(BenchmarkId::new("Utf8Validator", name), |b| {
            b.iter(|| {
                let mut validator = Utf8Validator::new();
                validator.feed(black_box(bytes)).expect("valid text");
                validator.finish().expect("complete text")
            })
        });
        group.bench_function(BenchmarkId::new("std_from_utf8", name), |b| {
            b.iter(|| std::str::from_utf8(black_box(bytes)).is_ok())
        });
    }
    group.finish();
}

criterion_group!(benches, mask, decode, encode, utf8);
criterion_main!(benches);
