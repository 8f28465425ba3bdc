//! The admin client behind `isola ctl`: the operator's side of a running
//! isolad, over its owner-only admin socket (`admin`). [`Admin`] connects,
//! asks ([`isola_wire::admin`]: one request, one reply), pages through
//! the tenant list and reads what each engine learned of its costs;
//! [`key_changes`] turns `KEY=VALUE` arguments into typed key changes;
//! [`table`] and [`costs_table`] are the answers as text for people. It
//! returns values and text: the command prints them.

use anyhow::{bail, Context, Result};
use isola_report::text::table_aligned;
use isola_wire::admin::{AdminReply, AdminRequest, EngineCosts, KeyChange, TenantStatus};
use isola_wire::control;
use rustix::fd::{AsFd, OwnedFd};
use std::path::Path;

/// A connection to a daemon's admin socket.
#[derive(Debug)]
pub struct Admin {
    socket: OwnedFd,
}

impl Admin {
    /// Connects to the admin socket at `path`; the error says what to check.
    pub fn connect(path: &Path) -> Result<Admin> {
        let socket = control::connect(path).with_context(|| {
            format!(
                "cannot reach the daemon's admin socket {} (is isolad running? --admin names another socket)",
                path.display()
            )
        })?;
        Ok(Admin { socket })
    }

    /// Sends `request` and waits for its one reply.
    pub fn ask(&self, request: &AdminRequest) -> Result<AdminReply> {
        control::send(self.socket.as_fd(), request, None).context("sending to the daemon")?;
        Ok(control::recv::<AdminReply>(self.socket.as_fd())
            .context("the daemon did not answer")?
            .0)
    }

    /// Asks for a change (add, set, remove, reload): the daemon's message
    /// when it is done, or its refusal as the error.
    pub fn change(&self, request: &AdminRequest) -> Result<String> {
        match self.ask(request)? {
            AdminReply::Done { message } => Ok(message),
            AdminReply::Failed { reason } => bail!("refused: {reason}"),
            _ => bail!("the daemon answered out of turn"),
        }
    }

    /// Every tenant, page by page.
    pub fn list(&self) -> Result<Vec<TenantStatus>> {
        let mut all = Vec::new();
        let mut from = 0;
        loop {
            match self.ask(&AdminRequest::List { from })? {
                AdminReply::Tenants { tenants, next } => {
                    all.extend(tenants);
                    match next {
                        // A page always moves on, so this ends.
                        Some(n) if n > from => from = n,
                        _ => return Ok(all),
                    }
                }
                AdminReply::Failed { reason } => bail!("refused: {reason}"),
                _ => bail!("the daemon answered out of turn"),
            }
        }
    }

    /// What each engine learned of its operators' costs.
    /// Each engine, its capacity and what is reserved of it.
    pub fn engines(&self) -> Result<Vec<isola_wire::admin::EngineStatus>> {
        match self.ask(&AdminRequest::Engines)? {
            AdminReply::Engines { engines } => Ok(engines),
            AdminReply::Failed { reason } => bail!("refused: {reason}"),
            _ => bail!("the daemon answered out of turn"),
        }
    }

    /// What each engine learned of its operators' costs.
    pub fn costs(&self) -> Result<Vec<EngineCosts>> {
        match self.ask(&AdminRequest::Costs)? {
            AdminReply::Costs { engines } => Ok(engines),
            AdminReply::Failed { reason } => bail!("refused: {reason}"),
            _ => bail!("the daemon answered out of turn"),
        }
    }
}

/// KEY=VALUE arguments as typed key changes: VALUE as written if it is a
/// TOML value, else as a string (`limit=100MB/s`); a dotted KEY sets a
/// table's key (`on.acc.weight=2` is `on = { acc = { weight = 2 } }`). An
/// empty VALUE returns the key to its default where `allow_empty` (`set`).
pub fn key_changes(keys: &[String], allow_empty: bool) -> Result<Vec<KeyChange>> {
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
pub fn table(tenants: &[TenantStatus]) -> String {
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
    let mut out = table_aligned(&header, &rows, |i| !matches!(i, 1 | 2 | 4));
    if tenants.is_empty() {
        out.push_str("(no tenants)\n");
    }
    out
}

/// The engines, their capacities and reservations, as a table for people.
pub fn engines_table(engines: &[isola_wire::admin::EngineStatus]) -> String {
    let header = [
        "engine", "kind", "policy", "workers", "capacity", "reserved", "ops",
    ];
    let rate = |v: Option<f64>, unit: &str| match v {
        Some(v) => format!("{}{unit}", isola_report::text::si(v)),
        None => format!("unbounded {unit}"),
    };
    let rows: Vec<Vec<String>> = engines
        .iter()
        .map(|e| {
            vec![
                e.name.clone(),
                e.kind.clone(),
                e.policy.clone(),
                e.workers.to_string(),
                format!(
                    "{}, {}",
                    rate(e.capacity.tasks_per_s, "tasks/s"),
                    rate(e.capacity.bytes_per_s, "B/s")
                ),
                format!(
                    "{}, {}",
                    rate(e.reserved.tasks_per_s, "tasks/s"),
                    rate(e.reserved.bytes_per_s, "B/s")
                ),
                if e.ops.is_empty() {
                    "every one".into()
                } else {
                    e.ops.join(",")
                },
            ]
        })
        .collect();
    table_aligned(&header, &rows, |i| i == 3)
}

/// What the engines learned, as a table for people.
pub fn costs_table(engines: &[EngineCosts]) -> String {
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
    let mut out = table_aligned(&header, &rows, |i| !matches!(i, 0 | 1 | 7));
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
