//! The core scheduler's cycle alone, without an event loop: what
//! `mm1_floor --core POLICY` minus `mm1_floor` measures inside a
//! simulation (docs/perf.md, issue 34), taken apart. For one tenant on one
//! single-slot engine under POLICY (default `fcfs`), it times, per task:
//!
//! * building and dropping the `Task` a driver submits, alone: its
//!   operator's `Arc` is cloned and dropped once per task, two locked
//!   instructions that belong to the cycle whatever the core does;
//! * `submit` + `next` + `complete` in turn on an idle channel (the
//!   M/M/1's common case: the queue is empty when a customer arrives);
//! * the same with four tasks always queued (a backlogged tenant).
//!
//! Usage: `cargo run --profile perf -p isola-sim --example core_cycle -- [POLICY] [TASKS]`
//! (default 4,000,000 tasks). Prints one line of nanoseconds per task, the
//! least of five runs of each.

use isola_core::{
    AffineCost, EngineKind, EngineSpec, OpSpec, Scheduler, SchedulerBuilder, Slo, Task, TaskId,
};
use std::sync::Arc;
use std::time::Instant;

/// The least of five timings of `f(tasks)`, in ns per task.
fn least(tasks: u64, mut f: impl FnMut(u64)) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            f(tasks);
            start.elapsed().as_nanos() as f64 / tasks as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let policy = args.first().cloned().unwrap_or_else(|| "fcfs".into());
    let tasks: u64 = match args.get(1).map(|n| n.parse()) {
        None => 4_000_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("error: TASKS must be a positive whole number (usage: core_cycle [POLICY] [TASKS])");
            std::process::exit(2);
        }
    };
    let mut b = SchedulerBuilder::new();
    let engine = b.engine(EngineSpec::new(
        "server",
        EngineKind::Accelerator,
        1,
        Arc::new(AffineCost::constant(1_000)),
    ));
    let tenant = b.tenant(
        "poisson",
        Slo {
            queue_cap: 1_000,
            ..Slo::weighted(1.0)
        },
    );
    b.policy(&policy, Default::default());
    let mut sched: Scheduler = match b.build() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: policy `{policy}`: {e}");
            std::process::exit(2);
        }
    };
    let op = OpSpec::named("generic");
    let task = |i: u64| Task {
        id: TaskId(i),
        tenant,
        engine,
        op,
        bytes: 64,
        arrival: i,
        deadline: None,
        predicted_cost: Some(1_000),
        planner: None,
        flow: 0,
    };
    let build_drop = least(tasks, |n| {
        for i in 0..n {
            drop(std::hint::black_box(task(i)));
        }
    });
    let cycle = |sched: &mut Scheduler, n: u64| {
        for i in 0..n {
            let submitted = sched.submit(i, task(i));
            let Some(d) = submitted.ok().and_then(|()| sched.next(i, engine)) else {
                unreachable!("a free single-slot engine has a task to serve");
            };
            let done = sched.complete(i, d.id, 1_000);
            std::hint::black_box(done.ok());
        }
    };
    let idle = least(tasks, |n| cycle(&mut sched, n));
    for i in 0..4 {
        if sched.submit(i, task(i)).is_err() {
            unreachable!("the channel holds four tasks");
        }
    }
    let backlogged = least(tasks, |n| cycle(&mut sched, n));
    println!(
        "{policy}: Task built and dropped {build_drop:.1} ns; submit + next + complete {idle:.1} ns idle, \
         {backlogged:.1} ns backlogged (per task, least of 5 runs of {tasks})"
    );
}
