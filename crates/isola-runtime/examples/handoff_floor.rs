//! The floor under a thread hand-off on this machine, with nothing but the
//! hand-off: a token passed round a ring of N threads, each polling its
//! slot (an atomic) the way the runtime's threads poll their queues
//! (`yield`: `sched_yield` between polls; `spin`: a pause instruction;
//! `hybrid:K`: K pauses, then yields). Prints the p50 and p99 of one
//! round, in ns.
//!
//! Two threads stand for a task run on the dispatcher (tenant ->
//! dispatcher -> tenant), three for a task handed to a worker (tenant ->
//! dispatcher -> worker -> tenant). With more polling threads than cores
//! each hand-off to a thread without a core waits for one to yield it
//! (docs/perf.md, "Issue 34: the worker path's round trip"). A pure spin
//! with more threads than cores can take a whole scheduler tick a round,
//! or never end: the run gives up after 30 s in all.
//!
//! Usage: `cargo run --release -p isola-runtime --example handoff_floor --
//! THREADS yield|spin|hybrid:K [ROUNDS]`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a thread waits for its slot.
#[derive(Clone, Copy)]
enum Wait {
    Yield,
    Spin,
    Hybrid(u32),
}

impl Wait {
    fn parse(s: &str) -> Option<Wait> {
        match s {
            "yield" => Some(Wait::Yield),
            "spin" => Some(Wait::Spin),
            _ => s.strip_prefix("hybrid:")?.parse().ok().map(Wait::Hybrid),
        }
    }

    /// Waits until `slot` holds `round` (false if `stop` was raised).
    fn until(self, slot: &AtomicU64, round: u64, stop: &AtomicBool) -> bool {
        let mut polls = 0u32;
        while slot.load(Ordering::Acquire) < round {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            polls = polls.wrapping_add(1);
            match self {
                Wait::Yield => std::thread::yield_now(),
                Wait::Spin => std::hint::spin_loop(),
                Wait::Hybrid(k) if polls < k => std::hint::spin_loop(),
                Wait::Hybrid(_) => std::thread::yield_now(),
            }
        }
        true
    }
}

fn usage() -> ! {
    eprintln!("usage: handoff_floor THREADS yield|spin|hybrid:K [ROUNDS]   (THREADS from 2 to 64)");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: usize = match args.first().and_then(|a| a.parse().ok()) {
        Some(n) if (2..=64).contains(&n) => n,
        _ => usage(),
    };
    let wait = args
        .get(1)
        .and_then(|a| Wait::parse(a))
        .unwrap_or_else(|| usage());
    let rounds: u64 = match args.get(2).map(|a| a.parse()) {
        None => 100_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => usage(),
    };
    let slots: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let others: Vec<_> = (1..threads)
        .map(|i| {
            let (slots, stop) = (Arc::clone(&slots), Arc::clone(&stop));
            std::thread::spawn(move || {
                for round in 1..=rounds {
                    if !wait.until(&slots[i], round, &stop) {
                        return;
                    }
                    slots[(i + 1) % threads].store(round, Ordering::Release);
                }
            })
        })
        .collect();
    let mut took = Vec::with_capacity(rounds as usize);
    let deadline = Instant::now() + Duration::from_secs(30);
    for round in 1..=rounds {
        let start = Instant::now();
        slots[1].store(round, Ordering::Release);
        if !wait.until(&slots[0], round, &stop) || Instant::now() > deadline {
            break;
        }
        took.push(start.elapsed().as_nanos() as u64);
    }
    stop.store(true, Ordering::Relaxed);
    for t in others {
        t.join().expect("a ring thread");
    }
    if (took.len() as u64) < rounds {
        println!(
            "{threads} threads, {}: gave up after 30 s ({} of {rounds} rounds)",
            args[1],
            took.len()
        );
        return;
    }
    took.sort_unstable();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    println!(
        "{threads} threads, {}: a round p50 {} ns, p99 {} ns ({} cores)",
        args[1],
        at(0.5),
        at(0.99),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
}
