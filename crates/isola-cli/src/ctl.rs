//! `isola ctl`: the operator's side of a running `isolad`, over its
//! owner-only admin socket: list the tenants with their SLOs and live
//! figures, add one, change some of a tenant's keys while it runs, drain
//! and remove one, reload the configuration file, and see what each
//! engine learned of its operators' costs. Tenant keys are the
//! configuration file's (docs/daemon.md); the daemon checks them with the
//! same code and names the key it refuses.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use isola_wire::admin::{AdminReply, AdminRequest, EngineCosts, KeyChange, TenantStatus};
use isola_wire::control;
use rustix::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

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
}

/// Runs `isola ctl`.
pub fn run(args: &Args) -> Result<()> {
    let socket = connect(&args.admin)?;
    match &args.action {
        Action::List { json } => {
            let tenants = list(&socket)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&tenants)?);
            } else {
                print!("{}", table(&tenants));
            }
            Ok(())
        }
        Action::Add { name, keys, file } => {
            let request = match (file, name) {
                (Some(f), _) => AdminRequest::AddTable {
                    table: std::fs::read_to_string(f).with_context(|| format!("--file {}", f.display()))?,
                    origin: f.display().to_string(),
                },
                (None, Some(n)) => AdminRequest::Add {
                    tenant: n.clone(),
                    keys: key_changes(keys, false)?,
                },
                (None, None) => bail!("give the tenant's NAME and its KEY=VALUE keys, or --file"),
            };
            done(ask(&socket, &request)?)
        }
        Action::Set { name, keys } => {
            let changes = key_changes(keys, true)?;
            done(ask(
                &socket,
                &AdminRequest::Set {
                    tenant: name.clone(),
                    changes,
                },
            )?)
        }
        Action::Remove { name } => done(ask(&socket, &AdminRequest::Remove { tenant: name.clone() })?),
        Action::Reload => done(ask(&socket, &AdminRequest::Reload)?),
        Action::Costs { json } => {
            let engines = match ask(&socket, &AdminRequest::Costs)? {
                AdminReply::Costs { engines } => engines,
                AdminReply::Failed { reason } => bail!("refused: {reason}"),
                _ => bail!("the daemon answered out of turn"),
            };
            if *json {
                println!("{}", serde_json::to_string_pretty(&engines)?);
            } else {
                print!("{}", costs_table(&engines));
            }
            Ok(())
        }
    }
}

fn connect(path: &Path) -> Result<OwnedFd> {
    control::connect(path).with_context(|| {
        format!(
            "cannot reach the daemon's admin socket {} (is isolad running? --admin names another socket)",
            path.display()
        )
    })
}

fn ask(socket: &OwnedFd, request: &AdminRequest) -> Result<AdminReply> {
    control::send(socket.as_fd(), request, None).context("sending to the daemon")?;
    Ok(control::recv::<AdminReply>(socket.as_fd())
        .context("the daemon did not answer")?
        .0)
}

fn done(reply: AdminReply) -> Result<()> {
    match reply {
        AdminReply::Done { message } => {
            println!("{message}");
            Ok(())
        }
        AdminReply::Failed { reason } => bail!("refused: {reason}"),
        AdminReply::Tenants { .. } | AdminReply::Costs { .. } => bail!("the daemon answered out of turn"),
    }
}

/// Every tenant, page by page.
fn list(socket: &OwnedFd) -> Result<Vec<TenantStatus>> {
    let mut all = Vec::new();
    let mut from = 0;
    loop {
        match ask(socket, &AdminRequest::List { from })? {
            AdminReply::Tenants { tenants, next } => {
                all.extend(tenants);
                match next {
                    // A page always moves on, so this ends.
                    Some(n) if n > from => from = n,
                    _ => return Ok(all),
                }
            }
            AdminReply::Failed { reason } => bail!("refused: {reason}"),
            AdminReply::Done { .. } | AdminReply::Costs { .. } => bail!("the daemon answered out of turn"),
        }
    }
}

/// KEY=VALUE arguments as typed key changes: VALUE as written if it is a
/// TOML value, else as a string (`limit=100MB/s`); a dotted KEY sets a
/// table's key (`on.acc.weight=2` is `on = { acc = { weight = 2 } }`). An
/// empty VALUE returns the key to its default where `allow_empty` (`set`).
fn key_changes(keys: &[String], allow_empty: bool) -> Result<Vec<KeyChange>> {
    let mut changes = Vec::with_capacity(keys.len());
    for kv in keys {
        let Some((key, value)) = kv.split_once('=') else {
            bail!("`{kv}`: give KEY=VALUE");
        };
        let path: Vec<&str> = key.trim().split('.').collect();
        if path.iter().any(|k| {
            k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            bail!("`{kv}`: `{}` is not a key of a tenant table", key.trim());
        }
        let value = value.trim();
        let value = if value.is_empty() {
            if !allow_empty || path.len() > 1 {
                bail!("`{kv}`: give a value");
            }
            None
        } else {
            // The user's VALUE, read as TOML reads a value.
            let typed = toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.to_string()));
            let nested = path[1..].iter().rev().fold(typed, |v, k| {
                toml::Value::Table(toml::Table::from_iter([(k.to_string(), v)]))
            });
            Some(serde_json::to_value(nested)?)
        };
        changes.push(KeyChange {
            key: path[0].to_string(),
            value,
        });
    }
    Ok(changes)
}

/// `measured / predicted` as a person reads it (`-` before anything ran).
fn ratio(measured: u64, predicted: u64) -> String {
    if predicted == 0 {
        "-".into()
    } else {
        format!("x{:.2}", measured as f64 / predicted as f64)
    }
}

/// The tenants as a table for people: per tenant its SLO, connections,
/// figures, and its measured service against what was predicted (over
/// every engine; `--json` has it per engine).
fn table(tenants: &[TenantStatus]) -> String {
    let header = [
        "id",
        "tenant",
        "state",
        "weight",
        "class",
        "limit",
        "latency",
        "conns",
        "submitted",
        "ok",
        "failed",
        "rejected",
        "cancelled",
        "packets",
        "pkt replied/dropped/aborted",
        "busy",
        "measured/predicted",
    ];
    let rows: Vec<Vec<String>> = tenants
        .iter()
        .map(|t| {
            let f = &t.figures;
            vec![
                t.id.to_string(),
                t.name.clone(),
                t.state.clone(),
                format!("{}", t.slo.weight),
                t.slo.class.clone(),
                t.slo.limit.clone().unwrap_or_else(|| "-".into()),
                t.slo.latency.clone().unwrap_or_else(|| "-".into()),
                format!("{}/{}", t.connections, t.max_connections),
                f.submitted.to_string(),
                f.succeeded.to_string(),
                f.failed.to_string(),
                f.rejected.to_string(),
                f.cancelled.to_string(),
                f.packets_received.to_string(),
                format!(
                    "{}/{}/{}",
                    f.packets_replied, f.packets_dropped, f.packets_aborted
                ),
                isola_core::quantity::format_duration(f.busy_ns),
                ratio(f.busy_ns, f.predicted_ns),
            ]
        })
        .collect();
    let mut out = isola_report::text::table_aligned(&header, &rows, |i| !matches!(i, 1 | 2 | 4));
    if tenants.is_empty() {
        out.push_str("(no tenants)\n");
    }
    out
}

/// What the engines learned, as a table for people.
fn costs_table(engines: &[EngineCosts]) -> String {
    let header = [
        "engine",
        "op",
        "samples",
        "base",
        "per byte",
        "measured/predicted",
        "error",
        "predicts",
    ];
    let mut rows = Vec::new();
    for e in engines {
        let note = if !e.learning {
            Some("(does not learn: learn = false)")
        } else if e.ops.is_empty() {
            Some("(learns; no operator has run yet)")
        } else {
            None
        };
        if let Some(note) = note {
            rows.push(vec![
                e.engine.clone(),
                note.into(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for o in &e.ops {
            rows.push(vec![
                e.engine.clone(),
                o.op.clone(),
                o.samples.to_string(),
                isola_core::quantity::format_duration(o.base_ns.round() as u64),
                format!("{:.3} ns", o.per_byte_ns),
                format!("x{:.2}", o.measured_over_predicted),
                format!("{:.0}%", o.error * 100.0),
                if o.in_use { "fit" } else { "config" }.into(),
            ]);
        }
    }
    let mut out = isola_report::text::table_aligned(&header, &rows, |i| !matches!(i, 0 | 1 | 7));
    if rows.is_empty() {
        out.push_str("(no operator has run yet)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_typed_values_and_bare_words_strings() {
        let changes = key_changes(
            &[
                "weight=3".into(),
                "limit=100MB/s".into(),
                "users=[1000, 1001]".into(),
                "budget=".into(),
                "on.acc.weight=2.5".into(),
            ],
            true,
        )
        .unwrap();
        let value = |i: usize| changes[i].value.clone();
        assert_eq!(changes[0].key, "weight");
        assert_eq!(value(0), Some(serde_json::json!(3)));
        assert_eq!(value(1), Some(serde_json::json!("100MB/s")));
        assert_eq!(value(2), Some(serde_json::json!([1000, 1001])));
        assert_eq!((changes[3].key.as_str(), value(3)), ("budget", None));
        assert_eq!(
            (changes[4].key.as_str(), value(4)),
            ("on", Some(serde_json::json!({"acc": {"weight": 2.5}})))
        );
        assert!(key_changes(&["weight".into()], true).is_err());
        assert!(key_changes(&["budget=".into()], false).is_err());
        assert!(key_changes(&["a b=1".into()], true).is_err());
    }
}
