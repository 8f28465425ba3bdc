//! The floor under `isola sim scenarios/mm1.toml`'s speed: the same M/M/1
//! queue (Poisson arrivals at 800k/s, exponential service with a 1 us mean,
//! one server, FIFO) written as the least a discrete-event simulator does,
//! with the simulator's own event queue, random streams and latency
//! histogram, but no scheduler, no device model and no per-window
//! statistics. `scripts/simpy_mm1.sh` times it beside `isola sim` and SimPy,
//! so the ratio SimPy / floor bounds what any simulator built on these
//! pieces can reach against SimPy on this machine (issue 17, docs/perf.md).
//!
//! Usage: `cargo run --release -p isola-sim --example mm1_floor -- [CUSTOMERS]`
//! (default 2,000,000). Prints one JSON line: customers, mean sojourn (us)
//! and the 99th percentile (us).

use isola_core::metrics::LatencyHistogram;
use isola_core::units::round_ns;
use isola_sim::queue::EventQueue;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrival,
    Departure,
}

fn main() {
    let customers: u64 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 2_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("error: CUSTOMERS must be a whole number: {e}");
            std::process::exit(2);
        }
    };
    // Rates per ns; both are positive constants.
    let (Ok(arrivals), Ok(service)) = (Exp::new(800e3 / 1e9), Exp::new(1.0 / 1_000.0)) else {
        unreachable!("positive rates");
    };
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut events = EventQueue::new();
    let mut waiting: VecDeque<u64> = VecDeque::new();
    let mut latency = LatencyHistogram::new();
    let (mut issued, mut next_arrival, mut in_service) = (0u64, 0.0f64, None::<u64>);
    events.push(0, Event::Arrival);
    while let Some((now, event)) = events.pop() {
        match event {
            Event::Arrival => {
                issued += 1;
                if issued < customers {
                    next_arrival += arrivals.sample(&mut rng);
                    events.push(round_ns(next_arrival), Event::Arrival);
                }
                if in_service.is_none() {
                    in_service = Some(now);
                    events.push(now + round_ns(service.sample(&mut rng)), Event::Departure);
                } else {
                    waiting.push_back(now);
                }
            }
            Event::Departure => {
                if let Some(arrived) = in_service.take() {
                    latency.record(now - arrived);
                }
                if let Some(arrived) = waiting.pop_front() {
                    in_service = Some(arrived);
                    events.push(now + round_ns(service.sample(&mut rng)), Event::Departure);
                }
            }
        }
    }
    let summary = latency.summary();
    println!(
        "{{\"customers\": {}, \"mean_sojourn_us\": {:.3}, \"p99_us\": {:.3}}}",
        summary.count,
        summary.mean / 1e3,
        summary.p99 as f64 / 1e3
    );
}
