//! Criterion benches of the core at 1k/10k/100k messages: append (with and without a live
//! snapshot), snapshot, fork, fit_budget, token ranges, one agent step, the token estimator and
//! the image-header reader.
//!
//! Run with `cargo bench --bench core`. Each bench measures briefly (2 s, 20 samples) so the
//! whole suite takes a few minutes on two cores.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ctxtrim::log::MessageLog;
use ctxtrim::meta::{Meta, Role};
use ctxtrim::tokens::estimate_tokens;

type Payload = Arc<str>;
type Log = MessageLog<Payload>;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Pushes between resets of the log in the append benches, so the log stays near its size.
const PUSHES_PER_RESET: u64 = 64;

/// A small deterministic generator (no `rand` dependency needed for benches).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// The `i`-th message of an agent loop: user text, assistant call, tool result, assistant
/// text, repeating; tokens vary from 20 to ~1,500.
fn message(i: usize, rng: &mut Lcg) -> (Payload, Meta) {
    let tokens = 20 + rng.next() % 1_500;
    let call = format!("call_{}", i / 4);
    let meta = match i % 4 {
        0 => Meta::user(tokens),
        1 => Meta::assistant(tokens).with_tool_uses([call]),
        2 => Meta::new(Role::User, tokens).with_tool_results([call]),
        _ => Meta::assistant(tokens),
    };
    (Arc::from("message"), meta)
}

fn build(n: usize) -> Log {
    let mut rng = Lcg(n as u64);
    (0..n).map(|i| message(i, &mut rng)).collect()
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("append");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let base = build(n);
        let mut rng = Lcg(7);
        let incoming: Vec<(Payload, Meta)> = (n..n + PUSHES_PER_RESET as usize)
            .map(|i| message(i, &mut rng))
            .collect();
        group.bench_with_input(BenchmarkId::new("no_snapshot", n), &n, |b, _| {
            b.iter_custom(|iters| timed_pushes(&base, &incoming, iters, false));
        });
        group.bench_with_input(BenchmarkId::new("live_snapshot", n), &n, |b, _| {
            b.iter_custom(|iters| timed_pushes(&base, &incoming, iters, true));
        });
    }
    group.finish();
}

/// Times `iters` pushes. Every `PUSHES_PER_RESET` pushes the log goes back to `base` (untimed)
/// so it stays near its nominal size. With `snapshot`, a snapshot is taken before each push
/// and kept alive across it, as an agent that snapshots before each model call does.
fn timed_pushes(base: &Log, incoming: &[(Payload, Meta)], iters: u64, snapshot: bool) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let batch = (iters - done).min(PUSHES_PER_RESET);
        let mut log = base.clone();
        // Make the log's tail its own before timing, so "no snapshot" measures unshared
        // pushes only.
        if !snapshot {
            log.push(Arc::from("warm"), Meta::user(1));
        }
        let mut snaps = Vec::with_capacity(batch as usize);
        let start = Instant::now();
        for (payload, meta) in incoming.iter().take(batch as usize) {
            if snapshot {
                snaps.push(log.snapshot());
            }
            black_box(log.push(payload.clone(), meta.clone()));
        }
        total += start.elapsed();
        drop(snaps);
        done += batch;
    }
    total
}

fn snapshot_and_fork(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let log = build(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &log, |b, log| {
            b.iter(|| black_box(log.snapshot()));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("fork");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let log = build(n);
        group.bench_with_input(BenchmarkId::new("fork", n), &log, |b, log| {
            b.iter(|| black_box(log.fork()));
        });
        // A fork that then diverges: the first push copies only the tail chunk.
        group.bench_with_input(BenchmarkId::new("fork_and_push", n), &log, |b, log| {
            b.iter(|| {
                let mut f = log.fork();
                f.push(Arc::from("branch"), Meta::user(10));
                black_box(f)
            });
        });
    }
    group.finish();
}

fn queries(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_budget");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let log = build(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &log, |b, log| {
            b.iter(|| black_box(log.fit_budget(black_box(8_000), 1)));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("tokens_range");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let log = build(n);
        let mut rng = Lcg(3);
        let ranges: Vec<(usize, usize)> = (0..1024)
            .map(|_| {
                let a = rng.next() as usize % n;
                let b = rng.next() as usize % n;
                (a.min(b), a.max(b))
            })
            .collect();
        let mut k = 0;
        group.bench_with_input(BenchmarkId::from_parameter(n), &log, |b, log| {
            b.iter(|| {
                k = (k + 1) % ranges.len();
                let (s, e) = ranges[k];
                black_box(log.tokens(s, e))
            });
        });
    }
    group.finish();

    // The agent loop (docs/performance.md, Goals): append 4 messages, snapshot, fit 8k tokens.
    let mut group = c.benchmark_group("agent_step");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for n in SIZES {
        let base = build(n);
        let mut rng = Lcg(11);
        let step: Vec<(Payload, Meta)> = (n..n + 4).map(|i| message(i, &mut rng)).collect();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut log = base.clone();
                for i in 0..iters {
                    if i % 16 == 0 {
                        log = base.clone();
                    }
                    let start = Instant::now();
                    for (p, m) in &step {
                        log.push(p.clone(), m.clone());
                    }
                    let snap = log.snapshot();
                    black_box(snap.fit_budget(8_000, 1));
                    total += start.elapsed();
                }
                total
            });
        });
    }
    group.finish();
}

fn estimate(c: &mut Criterion) {
    let paragraph = "Large language models read text as tokens, not characters. A tokenizer \
        splits each word into pieces from a fixed vocabulary: common words such as the, and, or \
        which become a single token, while rarer words are broken into several fragments. \
        Numbers are grouped by three digits, and punctuation usually costs one token each.\n";
    let code = "fn main() {\n    let x = vec![1, 2, 3];\n    println!(\"{:?}\", x);\n}\n";
    let cjk = "构建系统在昨晚的夜间任务中失败了。日志显示链接器找不到新模块导出的符号，\
        サーバーは大きなリクエストに対してエラーを返し、이 문제는 설정 파일의 시간대 때문에 발생했습니다. ";
    let mut group = c.benchmark_group("estimate_tokens");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    // Message-sized texts (a short answer, a tool result) and a long one.
    for (name, text) in [
        ("english_350B", paragraph.to_string()),
        ("english_11KB", paragraph.repeat(32)),
        ("code_1KB", code.repeat(16)),
        ("cjk_1KB", cjk.repeat(3)),
    ] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| black_box(estimate_tokens(black_box(&text))));
        });
    }
    group.finish();
}

/// Reading an image's size from its header: a 1 MB PNG, a JPEG with a 20 KB EXIF block
/// before its frame header, and pricing under both providers' rules.
fn image(c: &mut Criterion) {
    use ctxtrim::tokens::image::{image_size, ImageRule};
    let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    png.extend_from_slice(&1280u32.to_be_bytes());
    png.extend_from_slice(&800u32.to_be_bytes());
    png.resize(1 << 20, 0x5a);
    let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe1, 0x50, 0x00];
    jpeg.resize(4 + 0x5000, 0);
    jpeg.extend_from_slice(&[0xff, 0xc0, 0x00, 0x11, 0x08, 0x03, 0x20, 0x05, 0x00]);
    jpeg.resize(1 << 20, 0x5a);
    let mut group = c.benchmark_group("image");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);
    for (name, data) in [("png_1MB", &png), ("jpeg_1MB_exif_20KB", &jpeg)] {
        assert!(image_size(data).is_ok());
        group.bench_function(format!("size/{name}"), |b| {
            b.iter(|| black_box(image_size(black_box(data))));
        });
    }
    group.bench_function("price/openai_high_png_1MB", |b| {
        b.iter(|| black_box(ImageRule::OpenAiHigh.price_data(black_box(&png))));
    });
    group.bench_function("price/anthropic_png_1MB", |b| {
        b.iter(|| black_box(ImageRule::Anthropic.price_data(black_box(&png))));
    });
    group.finish();
}

criterion_group!(benches, append, snapshot_and_fork, queries, estimate, image);
criterion_main!(benches);
