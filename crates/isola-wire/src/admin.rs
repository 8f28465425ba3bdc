//! The admin conversation, on the daemon's admin socket (owner-only, the
//! same `SOCK_SEQPACKET` JSON framing as [`crate::control`]): what
//! `isola ctl` asks and what the daemon answers. Each request gets exactly
//! one reply; the connection may carry many.
//!
//! A tenant's keys travel as typed values (JSON numbers, strings, lists
//! and tables, each the value its TOML key takes), and the daemon puts
//! each in the tenant's keys and checks the whole tenant with the very
//! code that checks its configuration file, so a refusal names the key as
//! the file's would. A whole tenant table from a file travels as the
//! file's text, so its mistakes are reported at their line.

use serde::{Deserialize, Serialize};

/// Tenants listed per reply: a page stays well under the message limit.
pub const TENANTS_PER_PAGE: usize = 64;

/// What `isola ctl` asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdminRequest {
    /// The tenants from seat `from` on, with their SLOs and live figures
    /// (one page: [`AdminReply::Tenants`] says where the next starts).
    List {
        /// The first tenant seat to list.
        #[serde(default)]
        from: u32,
    },
    /// Adds tenant `tenant` with these keys (as in the configuration
    /// file's `[[tenant]]`).
    Add {
        /// The tenant's name.
        tenant: String,
        /// Its keys.
        keys: Vec<KeyChange>,
    },
    /// Adds the tenant a file describes: `table` is the text of a
    /// `[[tenant]]` table's body, `origin` the file, as errors name it.
    AddTable {
        /// The table's text.
        table: String,
        /// The file it was read from.
        origin: String,
    },
    /// Changes some of a tenant's keys (its SLO, quota, users, groups,
    /// connection limit, flows); a key with no value returns to its
    /// default.
    Set {
        /// The tenant's name.
        tenant: String,
        /// The keys to change.
        changes: Vec<KeyChange>,
    },
    /// Drains a tenant (its connections take no more work, answer what
    /// they took, and close) and removes it.
    Remove {
        /// The tenant's name.
        tenant: String,
    },
    /// Reads the configuration file again (as SIGHUP does).
    Reload,
    /// What each engine learned of its operators' costs.
    Costs,
    /// Each engine: what it serves, its capacity (from its cost model, as
    /// admission control counts it) and what admitted tenants reserve.
    Engines,
}

/// One key of a tenant and its new value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyChange {
    /// The key, as in the configuration file (`weight`, `limit`, `on`...).
    pub key: String,
    /// Its value, of the type its TOML key takes (a number, a quantity
    /// such as `"100MB/s"`, a list, a table); `None`: back to its default.
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

/// What the daemon answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdminReply {
    /// A page of tenants.
    Tenants {
        /// The tenants on this page.
        tenants: Vec<TenantStatus>,
        /// Where the next page starts, if there is one.
        next: Option<u32>,
    },
    /// The change was made.
    Done {
        /// What was done, for a person.
        message: String,
    },
    /// What each engine learned of its operators' costs.
    Costs {
        /// Every engine, in the configuration's order.
        engines: Vec<EngineCosts>,
    },
    /// Each engine, its capacity and its reservations.
    Engines {
        /// Every engine, in the configuration's order.
        engines: Vec<EngineStatus>,
    },
    /// The request was refused; nothing changed.
    Failed {
        /// Why, naming the key where a key is at fault.
        reason: String,
    },
}

/// One tenant as `isola ctl list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantStatus {
    /// Its seat (the tenant id in the core).
    pub id: u32,
    /// Its name.
    pub name: String,
    /// `active`, or `removing` while its connections drain.
    pub state: String,
    /// Its SLO, as the keys of its table would write it.
    pub slo: SloStatus,
    /// Connections it holds now.
    pub connections: u32,
    /// Most it may hold.
    pub max_connections: u32,
    /// Its live figures since the daemon started (they outlive its
    /// connections).
    pub figures: TenantFigures,
    /// Per engine it used: its tasks' predicted and measured service.
    #[serde(default)]
    pub engines: Vec<EngineService>,
}

/// A tenant's service on one engine: predicted when each task was
/// dispatched, and measured. `measured / predicted` far from 1 is a tenant
/// whose tasks cost other than the engine's model says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineService {
    /// The engine.
    pub engine: String,
    /// Predicted service of its completed tasks, ns.
    pub predicted_ns: u64,
    /// Measured service of the same tasks, ns.
    pub measured_ns: u64,
}

/// One engine as `isola ctl engines` shows it, and as the Kubernetes
/// driver publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineStatus {
    /// Its name.
    pub name: String,
    /// `accelerator`, `pu`, `dma` or `egress`.
    pub kind: String,
    /// Its policy.
    pub policy: String,
    /// The operators it serves (empty: every one).
    pub ops: Vec<String>,
    /// Its worker threads (0: the dispatcher runs its tasks).
    pub workers: u32,
    /// The most it serves, by its cost model (what reservations are
    /// admitted against).
    pub capacity: Capacity,
    /// What the tenants admitted reserve of it, in each unit.
    pub reserved: Capacity,
}

/// A rate in each of a reservation's units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// Tasks per second (`None`: not bounded).
    pub tasks_per_s: Option<f64>,
    /// Bytes per second (`None`: not bounded).
    pub bytes_per_s: Option<f64>,
}

/// What one engine learned of its operators' costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineCosts {
    /// The engine.
    pub engine: String,
    /// Whether it learns costs (`learn = true`); if not, `ops` is empty
    /// and its configured model alone predicts.
    pub learning: bool,
    /// Each operator (and parameters) it served, by name.
    pub ops: Vec<OpCost>,
}

/// An engine's fit of one operator's cost, and how right its predictions were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpCost {
    /// `name` or `name(key=value,...)`.
    pub op: String,
    /// Completed dispatches seen.
    pub samples: u64,
    /// The fit: fixed part, ns.
    pub base_ns: f64,
    /// The fit: ns per input byte.
    pub per_byte_ns: f64,
    /// Recent measured service over the predictions in use when those
    /// dispatches were made (1: right).
    pub measured_over_predicted: f64,
    /// Recent mean absolute error of those predictions, as a fraction of
    /// the measured service.
    pub error: f64,
    /// Whether the fit predicts this operator's tasks now.
    pub in_use: bool,
}

/// A tenant's SLO, for people and scripts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloStatus {
    /// Its weight.
    pub weight: f64,
    /// `latency-sensitive`, `bandwidth-sensitive` or `best-effort`.
    pub class: String,
    /// Its reservation, if any (e.g. `100MB/s`).
    pub reservation: Option<String>,
    /// Its limit, if any.
    pub limit: Option<String>,
    /// Its latency objective, if any (`2ms`, or `x3` of predicted service).
    pub latency: Option<String>,
    /// Its per-task service budget, ns, if any.
    pub budget_ns: Option<u64>,
    /// What happens at that budget: `flag`, `stop`, or `default` (the
    /// engine kind's: `stop` on processing units, `flag` elsewhere).
    #[serde(default)]
    pub budget_action: String,
    /// Tasks its channel holds per engine.
    pub queue_cap: u64,
    /// Its memory quota, bytes.
    pub memory_quota: u64,
    /// Engines where some of it differs (`[tenant.on.NAME]`).
    pub per_engine: Vec<String>,
}

/// A tenant's counters. The task figures count what its connections
/// submitted through their rings, exactly as isolad's Prometheus series
/// `isola_tasks_*{tenant}` summed over engines do (since this tenant was
/// added: a name used before keeps its Prometheus counters); its packets
/// are counted apart, as `isola_packets_total{tenant, outcome}` does
/// (docs/daemon.md, "Two counts, one source").
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantFigures {
    /// Ring tasks submitted (accepted or refused).
    pub submitted: u64,
    /// Ring tasks completed with their output.
    pub succeeded: u64,
    /// Ring tasks that failed (the operator's error, an output too large,
    /// a panic).
    pub failed: u64,
    /// Ring tasks refused before running (bad entry, channel full, over
    /// quota, no engine).
    pub rejected: u64,
    /// Ring tasks given up (a dead connection's queued work, a drain).
    pub cancelled: u64,
    /// Tasks over their service budget (ring tasks and packets' tasks).
    pub over_budget: u64,
    /// Input bytes of the ring tasks handed to the runtime.
    pub bytes: u64,
    /// Engine time its tasks and its packets' tasks used, ns.
    pub busy_ns: u64,
    /// What the same tasks were predicted to use when dispatched, ns
    /// (`busy_ns / predicted_ns`: how far its tasks ran over predictions).
    #[serde(default)]
    pub predicted_ns: u64,
    /// Packets of its flows received (matched).
    #[serde(default)]
    pub packets_received: u64,
    /// Packets whose reply went back.
    #[serde(default)]
    pub packets_replied: u64,
    /// Packets dropped (a full flow queue, a refused reply).
    #[serde(default)]
    pub packets_dropped: u64,
    /// Packets aborted (a kernel stopped, a DMA request refused).
    #[serde(default)]
    pub packets_aborted: u64,
    /// Packets whose kernel ran with no reply asked for.
    #[serde(default)]
    pub packets_consumed: u64,
}
