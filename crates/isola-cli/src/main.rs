//! # isola
//!
//! The command-line front end of Isola: lists policies, simulates scenarios
//! and runs them live, runs operators, benchmarks and profiles them, runs
//! the papers' experiments and the demo, loads a running `isolad` as a
//! tenant process, and runs a tenant's WebAssembly kernel on packets
//! without one (`isola kernel`). It parses arguments, calls the library crates (the experiments and the live harness are
//! `isola_experiments`', the report and charts `isola_report`'s), prints
//! their results as tables or JSON, writes files and shows progress bars;
//! it must not hold scheduling logic, experiments or rendering of its own.

mod args;
mod bench;
mod ctl;
mod demo;
mod dpubench;
mod kernel;
mod load;
mod op;
mod policies;
mod profile;
mod progress;
mod repro;
mod sim;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Performance isolation for tenants sharing DPU and SmartNIC compute.
#[derive(Debug, Parser)]
#[command(name = "isola", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the scheduling policies, their parameters and where they come from.
    Policies(policies::Args),
    /// Simulate a scenario under each of its policies and compare the tenants' results.
    Sim(sim::Args),
    /// Run a scenario live: the same file as `sim`, with real operators on
    /// this machine's cores, real copies on DMA engines and UDP sends on
    /// egress engines, pipelines stage by stage, a scenario with ingress
    /// matching over real UDP packets through isolad (same tables and JSON).
    Run(sim::Args),
    /// Run one operator on a file (optionally as subtasks), or list the operators.
    Op(op::Args),
    /// Measure operators: `isola bench ops` sweeps sizes and thread counts.
    Bench(bench::Args),
    /// ASTRAEA's experiment live on this machine: a latency-sensitive and a
    /// bandwidth-sensitive tenant share an erasure-coding engine, natively
    /// and under each isolation policy.
    Demo(demo::Args),
    /// Load a running isolad as one tenant process: open loop (--rate) or
    /// closed loop (--concurrency); reports latency, throughput and outcomes.
    Load(Box<load::Args>),
    /// Measure operators' service time against size on this machine, fit
    /// it and save the profile (a cost model for the runtime and the simulator).
    Profile(profile::Args),
    /// Each research paper's experiment under every policy, beside the
    /// paper's own figures: `isola repro all --out DIR` writes a report.
    Repro(repro::Args),
    /// DPUBench's end-to-end programs live over isolad's packet path:
    /// `isola dpubench e2e` (flow table: throughput and loss; application
    /// recognition: latency and CPU use).
    Dpubench(dpubench::Args),
    /// Administer a running isolad: list tenants, add one, change a
    /// tenant's SLO live, drain and remove one, reload its configuration.
    Ctl(ctl::Args),
    /// Try a tenant's WebAssembly packet kernel without a daemon: run it on
    /// packets from files or stdin under a flow's limits, as isolad runs
    /// it, and show each packet's reply, DMA writes and fuel, or why it was
    /// stopped (exit status 3).
    Kernel(kernel::Args),
}

/// Whether `e` comes from writing to a pipe whose reader has closed it.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        let kind = cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                cause
                    .downcast_ref::<serde_json::Error>()
                    .and_then(|j| j.io_error_kind())
            });
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
    let result = match cli.command {
        Command::Policies(args) => done(policies::run(&args)),
        Command::Sim(args) => done(sim::run(&args)),
        Command::Run(args) => done(sim::run_live(&args)),
        Command::Op(args) => done(op::run(&args)),
        Command::Bench(args) => done(bench::run(&args)),
        Command::Demo(args) => done(demo::run(&args)),
        Command::Load(args) => done(load::run(&args)),
        Command::Profile(args) => done(profile::run(&args)),
        Command::Repro(args) => done(repro::run(&args)),
        Command::Ctl(args) => done(ctl::run(&args)),
        Command::Dpubench(args) => done(dpubench::run(&args)),
        Command::Kernel(args) => kernel::run(&args),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`isola sim ... --json | head`): nothing
        // is left to say to anyone, as with any Unix tool.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
