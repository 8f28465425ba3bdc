//! The floor under `isola sim scenarios/mm1.toml`'s speed: the same M/M/1
//! queue (Poisson arrivals at 800k/s, exponential service with a 1 us mean,
//! one server, FIFO) written as the least a discrete-event simulator does,
//! with the simulator's own event queue, random streams and latency
//! histogram, but no scheduler, no device model and no per-window
//! statistics. `scripts/simpy_mm1.sh` times it beside `isola sim` and SimPy,
//! so the ratio SimPy / floor bounds what any simulator built on these
//! pieces can reach against SimPy on this machine (issue 17, docs/perf.md).
//!
//! With `--core [POLICY]`, the waiting line is the core scheduler instead of
//! a plain FIFO (one tenant, one single-slot engine, under POLICY: `fcfs`
//! unless named, e.g. `--core sfq`), driven as `isola sim`
//! drives it: `submit` at each arrival, `next` when the server is free,
//! `complete` at each departure. That is the floor of any simulator that
//! drives the shared core, and the difference between the two runs is
//! what the core's cycle costs a customer.
//!
//! Usage: `cargo run --release -p isola-sim --example mm1_floor -- [--core [POLICY]] [CUSTOMERS]`
//! (default 2,000,000). Prints one JSON line: the line used, customers,
//! mean sojourn (us) and the 99th percentile (us).

use isola_core::metrics::LatencyHistogram;
use isola_core::units::round_ns;
use isola_core::{
    AffineCost, DispatchId, EngineId, EngineKind, EngineSpec, OpRef, OpSpec, Scheduler, SchedulerBuilder,
    Slo, Task, TaskId, TenantId,
};
use isola_sim::queue::EventQueue;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use std::collections::VecDeque;
use std::sync::Arc;

/// The mean service time, ns: what the core is told each task costs.
const MEAN_SERVICE_NS: u64 = 1_000;

/// Where customers wait for the one server.
enum Line {
    /// A plain FIFO of arrival times; `busy` while a customer is served.
    Fifo { waiting: VecDeque<u64>, busy: bool },
    /// The core scheduler, with the dispatch in service.
    Core {
        sched: Box<Scheduler>,
        engine: EngineId,
        tenant: TenantId,
        op: OpRef,
        serving: Option<DispatchId>,
        submitted: u64,
    },
}

impl Line {
    fn core(policy: &str) -> Line {
        let mut b = SchedulerBuilder::new();
        let cost = Arc::new(AffineCost::constant(MEAN_SERVICE_NS));
        let engine = b.engine(EngineSpec::new("server", EngineKind::Accelerator, 1, cost));
        let tenant = b.tenant(
            "poisson",
            Slo {
                queue_cap: 1_000_000,
                ..Slo::weighted(1.0)
            },
        );
        b.policy(policy, Default::default());
        let sched = match b.build() {
            Ok(sched) => sched,
            Err(e) => {
                eprintln!("error: policy `{policy}`: {e}");
                std::process::exit(2);
            }
        };
        Line::Core {
            sched: Box::new(sched),
            engine,
            tenant,
            op: OpSpec::named("generic"),
            serving: None,
            submitted: 0,
        }
    }

    /// A customer arrives at `now`; returns its arrival time if it is
    /// served at once (the server was free).
    fn arrive(&mut self, now: u64) -> Option<u64> {
        match self {
            Line::Fifo { waiting, busy } => {
                if *busy {
                    waiting.push_back(now);
                    None
                } else {
                    *busy = true;
                    Some(now)
                }
            }
            Line::Core {
                sched,
                engine,
                tenant,
                op,
                submitted,
                ..
            } => {
                *submitted += 1;
                let task = Task {
                    id: TaskId(*submitted),
                    tenant: *tenant,
                    engine: *engine,
                    op: *op,
                    bytes: 64,
                    arrival: now,
                    deadline: None,
                    predicted_cost: Some(MEAN_SERVICE_NS),
                    planner: None,
                    flow: 0,
                };
                if sched.submit(now, task).is_err() {
                    unreachable!("the channel holds every customer");
                }
                self.serve_next(now)
            }
        }
    }

    /// The customer in service leaves at `now`; returns the arrival time
    /// of the next one served, if any waits.
    fn depart(&mut self, now: u64, service: u64) -> Option<u64> {
        match self {
            Line::Fifo { waiting, busy } => {
                let next = waiting.pop_front();
                *busy = next.is_some();
                next
            }
            Line::Core { sched, serving, .. } => {
                if let Some(id) = serving.take() {
                    if sched.complete(now, id, service).is_err() {
                        unreachable!("the dispatch in service is the core's");
                    }
                }
                self.serve_next(now)
            }
        }
    }

    /// The core's next dispatch, if the server is free and a task waits.
    fn serve_next(&mut self, now: u64) -> Option<u64> {
        let Line::Core {
            sched,
            engine,
            serving,
            ..
        } = self
        else {
            return None;
        };
        if serving.is_some() {
            return None;
        }
        let d = sched.next(now, *engine)?;
        *serving = Some(d.id);
        Some(d.task.arrival)
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrival,
    Departure,
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let core = args.first().is_some_and(|a| a == "--core");
    let mut policy = String::from("fcfs");
    if core {
        args.remove(0);
        // A policy's name follows `--core` unless the next word is the count.
        if let Some(name) = args
            .first()
            .filter(|a| !a.starts_with('-') && a.parse::<u64>().is_err())
        {
            policy = name.clone();
            args.remove(0);
        }
    }
    let customers: u64 = match args.as_slice() {
        [] => 2_000_000,
        [flag, ..] if flag.starts_with('-') => {
            eprintln!("error: unknown flag `{flag}` (usage: mm1_floor [--core [POLICY]] [CUSTOMERS])");
            std::process::exit(2);
        }
        [n] => match n.parse() {
            Ok(n) => n,
            Err(e) => {
                eprintln!("error: CUSTOMERS must be a whole number, got `{n}`: {e}");
                std::process::exit(2);
            }
        },
        [_, extra, ..] => {
            eprintln!(
                "error: unexpected argument `{extra}` (usage: mm1_floor [--core [POLICY]] [CUSTOMERS])"
            );
            std::process::exit(2);
        }
    };
    // Rates per ns; both are positive constants.
    let (Ok(arrivals), Ok(service)) = (Exp::new(800e3 / 1e9), Exp::new(1.0 / 1_000.0)) else {
        unreachable!("positive rates");
    };
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut events = EventQueue::new();
    let mut line = if core {
        Line::core(&policy)
    } else {
        Line::Fifo {
            waiting: VecDeque::new(),
            busy: false,
        }
    };
    let mut latency = LatencyHistogram::new();
    // The arrival time of the customer in service, and its service time.
    let (mut issued, mut next_arrival, mut in_service) = (0u64, 0.0f64, None::<(u64, u64)>);
    events.push(0, Event::Arrival);
    while let Some((now, event)) = events.pop() {
        match event {
            Event::Arrival => {
                issued += 1;
                if issued < customers {
                    next_arrival += arrivals.sample(&mut rng);
                    events.push(round_ns(next_arrival), Event::Arrival);
                }
                if let Some(arrived) = line.arrive(now) {
                    let service = round_ns(service.sample(&mut rng));
                    in_service = Some((arrived, service));
                    events.push(now + service, Event::Departure);
                }
            }
            Event::Departure => {
                let Some((arrived, served)) = in_service.take() else {
                    unreachable!("a departure follows a start of service");
                };
                latency.record(now - arrived);
                if let Some(arrived) = line.depart(now, served) {
                    let service = round_ns(service.sample(&mut rng));
                    in_service = Some((arrived, service));
                    events.push(now + service, Event::Departure);
                }
            }
        }
    }
    let summary = latency.summary();
    println!(
        "{{\"line\": \"{}\", \"customers\": {}, \"mean_sojourn_us\": {:.3}, \"p99_us\": {:.3}}}",
        if core {
            format!("core {policy}")
        } else {
            "fifo".into()
        },
        summary.count,
        summary.mean / 1e3,
        summary.p99 as f64 / 1e3
    );
}
