//! Bytes the core log allocates per entry (counting global allocator).
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use ctxtrim::log::MessageLog;
use ctxtrim::meta::{Meta, Role};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
// SAFETY: forwards to System.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same layout.
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn metas(n: usize) -> Vec<Meta> {
    (0..n).map(|k| {
        let i = k / 4;
        let id = format!("t{i}");
        match k % 4 {
            0 => Meta::user(10),
            1 => Meta::assistant(20).with_tool_uses([id.as_str()]),
            2 => Meta::new(Role::User, 30).with_tool_results([id.as_str()]),
            _ => Meta::assistant(40),
        }
    }).collect()
}

#[test]
fn bytes_per_entry() {
    for n in [50usize, 200, 1000] {
        let m = metas(n);
        let payloads: Vec<Arc<u64>> = (0..n as u64).map(Arc::new).collect();
        let before = LIVE.load(Ordering::Relaxed);
        let mut logs = Vec::new();
        for _ in 0..100 {
            let mut log: MessageLog<Arc<u64>> = MessageLog::new();
            for (p, mt) in payloads.iter().zip(&m) {
                log.push(Arc::clone(p), mt.clone());
            }
            logs.push(log);
        }
        let after = LIVE.load(Ordering::Relaxed);
        let per = (after - before) as f64 / (100 * n) as f64;
        println!("n={n}: {per:.1} bytes/entry ({} per log)", (after - before) / 100);
        let log = &logs[0];
        let b = LIVE.load(Ordering::Relaxed);
        let c = ctxtrim::cuts::Cuts::from_metas(&m);
        println!("  cuts alone: {} per log", LIVE.load(Ordering::Relaxed) - b);
        drop(c);
        drop(log);
    }
}
