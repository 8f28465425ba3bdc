//! `isola ctl`: the operator's side of a running `isolad`, over its
//! owner-only admin socket: list the tenants with their SLOs and live
//! figures, add one, change some of a tenant's keys while it runs, drain
//! and remove one, reload the configuration file, and see what each
//! engine learned of its operators' costs. Tenant keys are the
//! configuration file's (docs/daemon.md); the daemon checks them with the
//! same code and names the key it refuses. The client and its tables are
//! `isola_daemon::ctl`'s; this takes the arguments and prints.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use isola_daemon::ctl::{self, key_changes, Admin};
use isola_wire::admin::AdminRequest;
use std::path::PathBuf;

/// Talk to a running isolad through its admin socket.
#[derive(Debug, Parser)]
pub struct Args {
    /// The daemon's admin socket (`[daemon] admin_socket`; by default the
    /// tenant socket's path with `.admin` added).
    #[arg(long, value_name = "PATH", default_value = "isolad.sock.admin")]
    admin: PathBuf,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// List the tenants: SLO, connections and live figures.
    List {
        /// Print JSON (one array of tenants) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add a tenant while the daemon runs: `isola ctl add c memory_quota=1MiB
    /// users=[1000] weight=2` (keys as in a `[[tenant]]` table), or its
    /// whole table from a file with --file.
    Add {
        /// Its name (leave out with --file).
        name: Option<String>,
        /// Its keys, KEY=VALUE (VALUE in TOML; a bare word is a string).
        #[arg(value_name = "KEY=VALUE")]
        keys: Vec<String>,
        /// A file holding the tenant's table (TOML keys, as under `[[tenant]]`).
        #[arg(long, value_name = "FILE", conflicts_with_all = ["name", "keys"])]
        file: Option<PathBuf>,
    },
    /// Change some of a tenant's keys while it runs: `isola ctl set a
    /// weight=3 limit=100MB/s`; `KEY=` returns a key to its default. The
    /// core uses a new SLO from its next decision; the tenant is told.
    Set {
        /// The tenant.
        name: String,
        /// The keys to change, KEY=VALUE.
        #[arg(value_name = "KEY=VALUE", required = true)]
        keys: Vec<String>,
    },
    /// Drain a tenant (its connections take no more work, answer what
    /// they took and close) and remove it.
    Remove {
        /// The tenant.
        name: String,
    },
    /// Read the configuration file again (as SIGHUP does): its tenants'
    /// changes are applied, or the whole file is refused.
    Reload,
    /// What each engine learned of its operators' costs: per operator the
    /// fit (base + per byte), and how far the predictions in use were
    /// from the measured service (`measured/predicted`, mean error).
    Costs {
        /// Print JSON (one array of engines) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Each engine: its kind, policy and operators, its capacity (tasks/s
    /// and bytes/s by its cost model: what reservations are admitted
    /// against, and what the Kubernetes driver publishes) and what the
    /// tenants reserve of it.
    Engines {
        /// Print JSON (one array of engines) instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `isola ctl`.
pub fn run(args: &Args) -> Result<()> {
    let admin = Admin::connect(&args.admin)?;
    let request = match &args.action {
        Action::List { json } => {
            let tenants = admin.list()?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&tenants)?);
            } else {
                print!("{}", ctl::table(&tenants));
            }
            return Ok(());
        }
        Action::Engines { json } => {
            let engines = admin.engines()?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&engines)?);
            } else {
                print!("{}", ctl::engines_table(&engines));
            }
            return Ok(());
        }
        Action::Costs { json } => {
            let engines = admin.costs()?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&engines)?);
            } else {
                print!("{}", ctl::costs_table(&engines));
            }
            return Ok(());
        }
        Action::Add { name, keys, file } => match (file, name) {
            (Some(f), _) => AdminRequest::AddTable {
                table: std::fs::read_to_string(f).with_context(|| format!("--file {}", f.display()))?,
                origin: f.display().to_string(),
            },
            (None, Some(n)) => AdminRequest::Add {
                tenant: n.clone(),
                keys: key_changes(keys, false)?,
            },
            (None, None) => bail!("give the tenant's NAME and its KEY=VALUE keys, or --file"),
        },
        Action::Set { name, keys } => AdminRequest::Set {
            tenant: name.clone(),
            changes: key_changes(keys, true)?,
        },
        Action::Remove { name } => AdminRequest::Remove { tenant: name.clone() },
        Action::Reload => AdminRequest::Reload,
    };
    println!("{}", admin.change(&request)?);
    Ok(())
}
