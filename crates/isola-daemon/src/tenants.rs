//! The daemon's tenant table, live: which tenant holds each seat of the
//! core (configured tenants first, then spare seats for tenants added
//! while the daemon runs), how many connections each holds, and the
//! operator's changes: add, change keys (SLO, quota, users, groups,
//! connection limit), drain and remove, reload the file.
//!
//! Every change is checked by the code that checks the configuration
//! file, and a tenant's SLO goes to the core (`Runtime::set_slo`) before
//! the table shows it, so what `isola ctl list` shows is what the core
//! schedules by. A removed tenant's seat is vacated once its last
//! connection has closed; then its name is free for a new tenant (its
//! Prometheus counters stay under that name; `list` shows a new tenant's
//! own figures from zero).

use crate::config::{DaemonConfig, DaemonTenant};
use crate::Shared;
use isola_core::{Slo, TenantId};
use isola_model::ScenarioError;
use isola_wire::admin::{KeyChange, SloStatus, TenantFigures, TenantStatus, TENANTS_PER_PAGE};
use isola_wire::EventKind;
use serde::Deserialize;

/// One seat of the core's tenants.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seat {
    /// The tenant in it; `None`: vacant.
    pub(crate) config: Option<DaemonTenant>,
    /// Connections it holds now.
    pub(crate) connections: u32,
    /// It is being removed: no new connections, its own drain.
    pub(crate) removing: bool,
    /// The seat's counters when its tenant was added: an earlier
    /// tenant's of the same name (its Prometheus counters), and the
    /// runtime's of the seat, not this one's.
    pub(crate) baseline: TenantFigures,
}

/// Every seat, by tenant id.
#[derive(Debug)]
pub(crate) struct TenantTable {
    pub(crate) seats: Vec<Seat>,
}

impl TenantTable {
    /// The configured tenants in seats `0..n`, then `spare` vacant ones.
    pub(crate) fn new(config: &DaemonConfig) -> TenantTable {
        let mut seats: Vec<Seat> = config
            .tenants
            .iter()
            .map(|t| Seat {
                config: Some(t.clone()),
                ..Seat::default()
            })
            .collect();
        seats.resize(config.tenants.len() + config.spare_tenants, Seat::default());
        TenantTable { seats }
    }

    /// The seat of the tenant named `name` (being removed or not).
    fn find(&self, name: &str) -> Option<usize> {
        self.seats
            .iter()
            .position(|s| s.config.as_ref().is_some_and(|c| c.name() == name))
    }

    /// Admits a connection of process `pid` (`uid`, `gid`) as tenant
    /// `name`: the tenant exists, is granted to that uid or gid, and is
    /// under its connection limit. Returns its seat, its configuration and
    /// how many connections it holds now.
    pub(crate) fn admit(
        &mut self,
        name: &str,
        uid: u32,
        gid: u32,
        pid: i32,
        by_possession: bool,
    ) -> Result<(usize, DaemonTenant, u32), String> {
        let Some(t) = self.find(name).filter(|&t| !self.seats[t].removing) else {
            return Err(format!("no tenant `{name}`"));
        };
        let seat = &mut self.seats[t];
        let config = seat.config.as_ref().expect("found by its configuration");
        let granted = config.tenant.access.users.contains(&uid) || config.tenant.access.groups.contains(&gid);
        if !(by_possession || granted) {
            return Err(format!(
                "process {pid} (uid {uid}, gid {gid}) may not act as tenant `{name}`"
            ));
        }
        if seat.connections >= config.tenant.access.max_connections {
            return Err(format!(
                "tenant `{name}` holds {} connections already (its max_connections)",
                config.tenant.access.max_connections
            ));
        }
        seat.connections += 1;
        Ok((t, config.clone(), seat.connections))
    }
}

impl Shared {
    /// Uncounts a connection of tenant `t`; the last one of a tenant being
    /// removed vacates its seat.
    pub(crate) fn release(&self, t: usize) {
        let Ok(mut table) = self.tenants.lock() else {
            return;
        };
        let seat = &mut table.seats[t];
        seat.connections = seat.connections.saturating_sub(1);
        self.metrics.set_connections(t, seat.connections);
        if seat.removing && seat.connections == 0 {
            self.vacate(&mut table, t);
        }
    }

    /// Empties seat `t`: the core serves it by a default SLO again.
    fn vacate(&self, table: &mut TenantTable, t: usize) {
        let _ = self
            .runtime
            .set_slo(TenantId(t as u32), Slo::default(), Vec::new());
        self.host_windows.clear(t);
        table.seats[t] = Seat::default();
    }

    /// Tells every connection of tenant `t` of `kind`.
    fn tell_tenant(&self, t: usize, kind: EventKind) {
        self.tell_tenant_of(t, kind, 0, 0);
    }

    /// Tells every connection of tenant `t` of `kind`, with its `value`
    /// and `detail`.
    pub(crate) fn tell_tenant_of(&self, t: usize, kind: EventKind, value: u64, detail: u64) {
        let now = self.now_ns();
        for conn in self.connections_of(t) {
            conn.tell(kind, value, detail, now);
        }
    }

    /// Adds tenant `name` with `keys` in a vacant seat.
    pub(crate) fn add_tenant(&self, name: &str, keys: &[KeyChange]) -> Result<String, String> {
        let origin = "isola ctl add";
        let changes = typed_changes(keys, origin)?;
        let config = self
            .config
            .check_changes(isola_model::tenant::RawTenant::named(name), &changes, origin)
            .map_err(|e| e.to_string())?;
        self.add_config(config)
    }

    /// Adds the tenant `text` describes (a tenant table read from file
    /// `origin`) in a vacant seat.
    pub(crate) fn add_table(&self, text: &str, origin: &str) -> Result<String, String> {
        let config = self
            .config
            .parse_tenant(text, origin)
            .map_err(|e| e.to_string())?;
        self.add_config(config)
    }

    fn add_config(&self, config: DaemonTenant) -> Result<String, String> {
        let mut table = self
            .tenants
            .lock()
            .map_err(|_| "daemon state poisoned".to_string())?;
        self.add_checked(&mut table, config)
    }

    fn add_checked(&self, table: &mut TenantTable, config: DaemonTenant) -> Result<String, String> {
        if table.find(config.name()).is_some() {
            return Err(format!("tenant `{}` exists already", config.name()));
        }
        self.admit(table, None, &config)?;
        let Some(t) = table
            .seats
            .iter()
            .position(|s| s.config.is_none() && s.connections == 0)
        else {
            return Err(format!(
                "no spare tenant seat left ({} seats; raise [daemon] spare_tenants and restart)",
                table.seats.len()
            ));
        };
        self.runtime
            .set_slo(
                TenantId(t as u32),
                config.slo().clone(),
                config.overrides().to_vec(),
            )
            .map_err(|e| e.to_string())?;
        let message = format!("added tenant `{}` (id {t})", config.name());
        self.metrics.set_tenant(t, Some(&config));
        table.seats[t].config = Some(config);
        table.seats[t].baseline = self.figures(t, TenantFigures::default());
        self.packets.rebuild(table);
        Ok(message)
    }

    /// Whether the engines can promise `candidate` its reservations beside
    /// every tenant in the table (but seat `replacing`'s, which it would
    /// replace): admission control, as at load.
    fn admit(
        &self,
        table: &TenantTable,
        replacing: Option<usize>,
        candidate: &DaemonTenant,
    ) -> Result<(), String> {
        let others = table
            .seats
            .iter()
            .enumerate()
            .filter(|&(t, s)| Some(t) != replacing && !s.removing)
            .filter_map(|(_, s)| s.config.as_ref());
        let all: Vec<&DaemonTenant> = others.chain(std::iter::once(candidate)).collect();
        crate::config::admit(&self.config.engines, all.iter().copied()).map_err(|e| e.to_string())
    }

    /// Changes tenant `name`'s keys by `changes`.
    pub(crate) fn set_tenant(&self, name: &str, changes: &[KeyChange]) -> Result<String, String> {
        let origin = format!("isola ctl set {name}");
        let changes = typed_changes(changes, &origin)?;
        let mut table = self
            .tenants
            .lock()
            .map_err(|_| "daemon state poisoned".to_string())?;
        let Some(t) = table.find(name) else {
            return Err(format!("no tenant `{name}`"));
        };
        let current = table.seats[t].config.clone().expect("found by its configuration");
        let changed = current
            .with_changes(&changes, &origin, &self.config)
            .map_err(|e| e.to_string())?;
        self.change_checked(&mut table, t, changed)
    }

    fn change_checked(
        &self,
        table: &mut TenantTable,
        t: usize,
        changed: DaemonTenant,
    ) -> Result<String, String> {
        match table.seats[t].config.as_ref() {
            None => return Err(format!("tenant seat {t} is vacant")),
            Some(current) if *current == changed => {
                return Ok(format!("tenant `{}` unchanged", changed.name()))
            }
            Some(_) => self.admit(table, Some(t), &changed)?,
        }
        let seat = &mut table.seats[t];
        let current = seat.config.as_ref().expect("checked above");
        let slo_changed = (&current.slo(), &current.overrides()) != (&changed.slo(), &changed.overrides());
        if slo_changed {
            self.runtime
                .set_slo(
                    TenantId(t as u32),
                    changed.slo().clone(),
                    changed.overrides().to_vec(),
                )
                .map_err(|e| e.to_string())?;
        }
        let message = format!("changed tenant `{}`", changed.name());
        if slo_changed {
            self.metrics.set_tenant(t, Some(&changed));
        }
        seat.config = Some(changed);
        self.packets.rebuild(table);
        if slo_changed {
            self.tell_tenant(t, EventKind::SloChanged);
        }
        Ok(message)
    }

    /// Drains tenant `name` and removes it once its connections are closed.
    pub(crate) fn remove_tenant(&self, name: &str) -> Result<String, String> {
        let mut table = self
            .tenants
            .lock()
            .map_err(|_| "daemon state poisoned".to_string())?;
        let Some(t) = table.find(name).filter(|&t| !table.seats[t].removing) else {
            return Err(format!("no tenant `{name}`"));
        };
        Ok(self.remove_checked(&mut table, t))
    }

    fn remove_checked(&self, table: &mut TenantTable, t: usize) -> String {
        let name = table.seats[t]
            .config
            .as_ref()
            .map_or(String::new(), |c| c.name().to_string());
        table.seats[t].removing = true;
        self.packets.rebuild(table);
        let connections = table.seats[t].connections;
        if connections == 0 {
            self.vacate(table, t);
            return format!("removed tenant `{name}`");
        }
        let now = self.now_ns();
        for conn in self.connections_of(t) {
            conn.drain(now);
        }
        format!("draining tenant `{name}`'s {connections} connection(s); it is removed when they close")
    }

    /// Reads the configuration file again and applies what changed in its
    /// tenants (added, changed, removed). The rest of the file must be as
    /// the daemon started with it; if it is not, or any tenant is refused,
    /// nothing changes.
    pub(crate) fn reload(&self) -> Result<String, String> {
        let new = DaemonConfig::load(&self.config.path).map_err(|e| e.to_string())?;
        let old = &self.config;
        let fixed = [
            ("socket", new.socket == old.socket),
            ("admin_socket", new.admin_socket == old.admin_socket),
            ("udp", new.udp == old.udp),
            ("max_input", new.max_input == old.max_input),
            ("spare_tenants", new.spare_tenants == old.spare_tenants),
            ("spin", new.spin == old.spin),
            ("pin_threads", new.pin_threads == old.pin_threads),
            ("realtime", new.realtime == old.realtime),
            ("engine", new.engines == old.engines),
        ];
        if let Some((key, _)) = fixed.iter().find(|(_, same)| !same) {
            return Err(format!(
                "{}: `{key}` changed; only tenants change on a reload (restart the daemon for the rest)",
                old.path.display()
            ));
        }
        let mut table = self
            .tenants
            .lock()
            .map_err(|_| "daemon state poisoned".to_string())?;
        let gone: Vec<usize> = (0..table.seats.len())
            .filter(|&t| {
                let s = &table.seats[t];
                !s.removing
                    && s.config
                        .as_ref()
                        .is_some_and(|c| !new.tenants.iter().any(|n| n.name() == c.name()))
            })
            .collect();
        let added = new
            .tenants
            .iter()
            .filter(|n| table.find(n.name()).is_none())
            .count();
        let vacant = table
            .seats
            .iter()
            .filter(|s| s.config.is_none() && s.connections == 0)
            .count();
        if added > vacant {
            return Err(format!(
                "{}: {added} new tenants but {vacant} spare seats",
                old.path.display()
            ));
        }
        let mut done = Vec::new();
        for t in gone {
            done.push(self.remove_checked(&mut table, t));
        }
        for tenant in new.tenants {
            let result = match table.find(tenant.name()) {
                Some(t) if table.seats[t].removing => {
                    Err(format!("tenant `{}` is still being removed", tenant.name()))
                }
                Some(t) => self.change_checked(&mut table, t, tenant),
                None => self.add_checked(&mut table, tenant),
            };
            done.push(result?);
        }
        Ok(done.join("; "))
    }

    /// Seat `t`'s counters, less `baseline`: the metrics' (what
    /// Prometheus scrapes), with the runtime's count of tasks over budget.
    fn figures(&self, t: usize, baseline: TenantFigures) -> TenantFigures {
        let mut f = self.metrics.figures(t);
        f.over_budget = self
            .runtime
            .stats()
            .into_iter()
            .nth(t)
            .map_or(0, |s| s.over_budget);
        let b = baseline;
        TenantFigures {
            submitted: f.submitted.saturating_sub(b.submitted),
            succeeded: f.succeeded.saturating_sub(b.succeeded),
            failed: f.failed.saturating_sub(b.failed),
            rejected: f.rejected.saturating_sub(b.rejected),
            cancelled: f.cancelled.saturating_sub(b.cancelled),
            over_budget: f.over_budget.saturating_sub(b.over_budget),
            bytes: f.bytes.saturating_sub(b.bytes),
            busy_ns: f.busy_ns.saturating_sub(b.busy_ns),
            predicted_ns: f.predicted_ns.saturating_sub(b.predicted_ns),
            packets_received: f.packets_received.saturating_sub(b.packets_received),
            packets_replied: f.packets_replied.saturating_sub(b.packets_replied),
            packets_dropped: f.packets_dropped.saturating_sub(b.packets_dropped),
            packets_aborted: f.packets_aborted.saturating_sub(b.packets_aborted),
            packets_consumed: f.packets_consumed.saturating_sub(b.packets_consumed),
        }
    }

    /// What each engine learned of its operators' costs (`isola ctl costs`).
    /// Each engine, its capacity and what the tenants admitted reserve.
    pub(crate) fn engines(&self) -> Vec<isola_wire::admin::EngineStatus> {
        use isola_wire::admin::{Capacity, EngineStatus};
        let table = self
            .tenants
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let admitted: Vec<&DaemonTenant> = table
            .seats
            .iter()
            .filter(|s| !s.removing)
            .filter_map(|s| s.config.as_ref())
            .collect();
        self.config
            .engines
            .iter()
            .map(|e| {
                let capacity = e.capacity();
                let (tasks, bytes) = crate::config::reserved(e, admitted.iter().copied());
                EngineStatus {
                    name: e.name.clone(),
                    kind: e.kind.to_string(),
                    policy: e.policy.clone(),
                    ops: e.ops.clone(),
                    workers: e.workers as u32,
                    capacity: Capacity {
                        tasks_per_s: capacity.tasks_per_sec,
                        bytes_per_s: capacity.bytes_per_sec,
                    },
                    reserved: Capacity {
                        tasks_per_s: Some(tasks),
                        bytes_per_s: Some(bytes),
                    },
                }
            })
            .collect()
    }

    pub(crate) fn costs(&self) -> Vec<isola_wire::admin::EngineCosts> {
        self.config
            .engines
            .iter()
            .zip(self.runtime.learned_costs())
            .map(|(e, ops)| isola_wire::admin::EngineCosts {
                engine: e.name.clone(),
                learning: e.learn,
                ops: ops
                    .into_iter()
                    .map(|o| isola_wire::admin::OpCost {
                        op: o.op,
                        samples: o.samples,
                        base_ns: o.base_ns,
                        per_byte_ns: o.per_byte_ns,
                        measured_over_predicted: o.measured_over_predicted,
                        error: o.error,
                        in_use: o.in_use,
                    })
                    .collect(),
            })
            .collect()
    }

    /// A page of the tenant table from seat `from`, with live figures.
    pub(crate) fn list(&self, from: u32) -> (Vec<TenantStatus>, Option<u32>) {
        let Ok(table) = self.tenants.lock() else {
            return (Vec::new(), None);
        };
        let mut out = Vec::new();
        let mut t = from as usize;
        while t < table.seats.len() && out.len() < TENANTS_PER_PAGE {
            let seat = &table.seats[t];
            if let Some(c) = &seat.config {
                out.push(TenantStatus {
                    id: t as u32,
                    name: c.name().to_string(),
                    state: if seat.removing { "removing" } else { "active" }.into(),
                    slo: slo_status(c),
                    connections: seat.connections,
                    max_connections: c.tenant.access.max_connections,
                    figures: self.figures(t, seat.baseline),
                    engines: self.metrics.engine_service(t),
                });
            }
            t += 1;
        }
        let next = (t < table.seats.len()).then_some(t as u32);
        (out, next)
    }
}

/// `c`'s SLO as `isola ctl list` shows it.
fn slo_status(c: &DaemonTenant) -> SloStatus {
    let class = match c.slo().class {
        isola_core::TenantClass::LatencySensitive => "latency-sensitive",
        isola_core::TenantClass::BandwidthSensitive => "bandwidth-sensitive",
        isola_core::TenantClass::BestEffort => "best-effort",
    }
    .to_string();
    let latency = c.slo().latency.map(|l| match l {
        isola_core::LatencyObjective::Absolute(ns) => isola_core::quantity::format_duration(ns),
        isola_core::LatencyObjective::ServiceMultiple(k) => format!("x{k} predicted service"),
    });
    SloStatus {
        weight: c.slo().weight,
        class,
        reservation: c.slo().reservation.map(|r| r.rate.to_string()),
        limit: c.slo().limit.map(|r| r.rate.to_string()),
        latency,
        budget_ns: c.slo().service_budget,
        budget_action: c
            .slo()
            .budget_action
            .map_or_else(|| "default".to_string(), |a| a.to_string()),
        queue_cap: c.slo().queue_cap as u64,
        memory_quota: c.memory_quota(),
        per_engine: c.overrides().iter().map(|(on, _)| on.to_string()).collect(),
    }
}

/// `changes` with each value as the TOML value its key takes (a JSON
/// number, string, list or table is the same value in TOML; `null` has
/// no TOML form and is refused).
fn typed_changes<'c>(
    changes: &'c [KeyChange],
    origin: &str,
) -> Result<Vec<(&'c str, Option<toml::Value>)>, String> {
    changes
        .iter()
        .map(|c| {
            let value = match &c.value {
                None => None,
                Some(v) => Some(toml::Value::deserialize(v.clone()).map_err(|e| {
                    ScenarioError::whole_file(origin, Some(&c.key), format!("not a TOML value: {e}"))
                        .to_string()
                })?),
            };
            Ok((c.key.as_str(), value))
        })
        .collect()
}
