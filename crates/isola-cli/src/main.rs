//! # isola
//!
//! The command-line front end of Isola: lists policies now, and will run
//! scenarios live and simulated, compare policies and write reports. It parses
//! arguments, calls the library crates and formats their results; it must not
//! hold scheduling logic of its own.

mod policies;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policies(args) => policies::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
