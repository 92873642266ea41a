// SPDX-License-Identifier: MIT
//! The Rust workload of the span tests, and the example of emitting khbpf's
//! span note from a language other than C (docs/spans.md, "Other languages").
//! One file, no crates: `rustc -O --edition 2021 spanned.rs`.
//!
//! Each of --threads N threads (default 2) runs --iterations M rounds
//! (default 10) of:
//!     rs-request -> rs-checksum      rs-checksum 3 times inside each rs-request
//!     rs-flush                       after it, on its own
//! so rs-request and rs-flush are called N*M times, rs-checksum 3*N*M. The
//! calls are counted as they happen and printed at the end as one JSON line,
//!     {"rs-request": 20, "rs-checksum": 60, "rs-flush": 20}
//! after checking they equal those formulas (exit 1 if not).

use std::hint::black_box;
use std::thread;

/// Emits the khbpf note for function `$f` with metric `$metric` (kebab-case,
/// at most 63 bytes; checked at compile time). The note is assembled into
/// `.note.khbpf` with no "a" flag (not allocated: it survives
/// `strip --strip-all`); `.8byte {f}` with a `sym` operand is resolved by the
/// linker to the function's link-time address, so there is no run-time
/// relocation and PIE works. A `#[link_section]` static cannot do this: its
/// section is allocated and writable, and in a PIE the pointer is a dynamic
/// relocation whose bytes in the file are 0.
macro_rules! khbpf_span {
    ($f:path, $metric:literal) => {
        const _: () = assert!(metric_ok($metric.as_bytes()), "not a khbpf metric");
        core::arch::global_asm!(
            ".pushsection .note.khbpf,\"\",%note",
            ".balign 4",
            ".4byte 6",          // namesz: "khbpf\0"
            ".4byte {descsz}",   // descsz: address, flags, metric with its NUL
            ".4byte 1",          // type: span
            ".asciz \"khbpf\"",
            ".balign 4",
            ".8byte {f}",        // address
            ".4byte 0",          // flags
            concat!(".asciz \"", $metric, "\""),
            ".balign 4",
            ".popsection",
            f = sym $f,
            descsz = const 8 + 4 + $metric.len() + 1,
        );
    };
}

/// [a-z0-9]+(-[a-z0-9]+)*, at most 63 bytes.
const fn metric_ok(m: &[u8]) -> bool {
    if m.is_empty() || m.len() > 63 || m[0] == b'-' || m[m.len() - 1] == b'-' {
        return false;
    }
    let mut i = 0;
    while i < m.len() {
        let c = m[i];
        let dash_ok = c == b'-' && m[i - 1] != b'-';
        if !(c.is_ascii_lowercase() || c.is_ascii_digit() || dash_ok) {
            return false;
        }
        i += 1;
    }
    true
}

const CHECKS: u64 = 3;

/// Each thread counts into its own struct: no shared writes.
#[repr(C)]
#[derive(Default, Clone, Copy)]
struct Counts {
    request: u64,
    checksum: u64,
    flush: u64,
}

// #[inline(never)]: one real function at the noted address. Each span uses
// the result of its callee, so no call is a tail call, and their bodies
// differ, so LLVM cannot merge two of them into one address.

khbpf_span!(checksum, "rs-checksum");
#[inline(never)]
fn checksum(c: &mut Counts, data: &[u8]) -> u64 {
    c.checksum += 1;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in black_box(data) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

khbpf_span!(request, "rs-request");
#[inline(never)]
fn request(c: &mut Counts, seed: u64) -> u64 {
    c.request += 1;
    let data = seed.to_le_bytes();
    let mut sum: u64 = 0;
    for i in 0..CHECKS {
        sum = sum.rotate_left(7) ^ checksum(c, &data[..(i as usize + 6)]);
    }
    black_box(sum)
}

// rustc 1.95 has no stable patchable_function_entry, so the two spans above
// begin with whatever instruction LLVM chose: the kernel's int3 probe then
// emulates or single-steps it. A naked function (stable since 1.88) can begin
// with one 5-byte NOP, the site the kernel's optimized uprobe path wants, and
// jump to the body: the note names the naked entry, and the uretprobe set on
// entry sees the body's return, as the jump leaves the stack unchanged. Entry
// and body have the same extern "C" signature, so arguments pass through.
#[cfg(not(target_arch = "x86_64"))]
compile_error!("rs-flush's entry is x86-64 code (the note macro is not)");

khbpf_span!(flush, "rs-flush");
#[unsafe(naked)]
extern "C" fn flush(c: &mut Counts, v: u64) -> u64 {
    core::arch::naked_asm!(
        "nop dword ptr [rax + rax + 8]", // 0f 1f 44 00 08
        "jmp {body}",
        body = sym flush_body,
    )
}

#[inline(never)]
extern "C" fn flush_body(c: &mut Counts, v: u64) -> u64 {
    c.flush += 1;
    black_box(v.wrapping_add(0x77) ^ 0x5a)
}

fn worker(iterations: u64) -> Counts {
    let mut c = Counts::default();
    let mut v: u64 = 0;
    for i in 0..iterations {
        v = v.wrapping_add(request(&mut c, i ^ v));
        v = v.wrapping_add(flush(&mut c, v));
    }
    black_box(v);
    c
}

fn usage() -> ! {
    eprintln!("rust-spanned: usage: rust-spanned [--threads 1..1024] [--iterations 0..1000000]");
    std::process::exit(2);
}

fn number(arg: Option<String>, min: u64, max: u64) -> u64 {
    match arg.and_then(|s| s.parse::<u64>().ok()) {
        Some(n) if n >= min && n <= max => n,
        _ => usage(),
    }
}

fn main() {
    let (mut threads, mut iterations) = (2u64, 10u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = number(args.next(), 1, 1024),
            "--iterations" => iterations = number(args.next(), 0, 1_000_000),
            _ => usage(),
        }
    }

    let handles: Vec<_> = (0..threads)
        .map(|_| thread::spawn(move || worker(iterations)))
        .collect();
    let mut sum = Counts::default();
    for h in handles {
        let c = h.join().expect("worker thread panicked");
        sum.request += c.request;
        sum.checksum += c.checksum;
        sum.flush += c.flush;
    }

    println!(
        "{{\"rs-request\": {}, \"rs-checksum\": {}, \"rs-flush\": {}}}",
        sum.request, sum.checksum, sum.flush
    );
    let n = threads * iterations;
    if sum.request != n || sum.checksum != CHECKS * n || sum.flush != n {
        eprintln!("rust-spanned: call counts differ from the expected {n} per stage");
        std::process::exit(1);
    }
}
