//! `isola policies`: the policy registry as a table or as JSON.

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
    let width = POLICIES.iter().map(|p| p.name.len()).max().unwrap_or(0) + 2;
    let pad = " ".repeat(width);
    for p in POLICIES {
        writeln!(out, "{:width$}{}", p.name, p.description)?;
        if !p.aliases.is_empty() {
            writeln!(out, "{pad}aliases: {}", p.aliases.join(", "))?;
        }
        let conserving = if p.work_conserving { "yes" } else { "no" };
        writeln!(out, "{pad}source: {}; work-conserving: {conserving}", p.source)?;
        if p.params.is_empty() {
            writeln!(out, "{pad}params: none")?;
        }
        for (i, param) in p.params.iter().enumerate() {
            let label = if i == 0 { "params: " } else { "        " };
            writeln!(
                out,
                "{pad}{label}{} = {}  ({})",
                param.name, param.default, param.description
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}
