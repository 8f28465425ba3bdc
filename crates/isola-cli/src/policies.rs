//! `isola policies`: the policy registry as a table
//! (`isola_model::policies::text`) or as JSON.

use isola_core::POLICIES;
use std::io::Write;

/// Arguments of `isola policies`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array of objects (name, aliases, description, source,
    /// work_conserving, params) instead of a table.
    #[arg(long)]
    json: bool,
}

/// Prints every registered policy.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, POLICIES)?;
        writeln!(out)?;
        return Ok(());
    }
    write!(out, "{}", isola_model::policies::text())?;
    Ok(())
}
