//! A `[[tenant]]` table as TOML gives it, in every file and command that
//! describes a tenant: one raw type for a scenario's tenants, isolad's
//! configuration, `isola ctl add` and `isola ctl set`. Positions
//! (`Spanned`) are kept so that a file's mistakes are reported at their
//! line. Keys that only one context takes (a scenario's `workload` and
//! `match`, isolad's `users` and flows) are fields here too, refused by the
//! check where they do not apply, never by a copy of this type.
//!
//! A live change (`isola ctl set`) arrives as typed values, not text:
//! [`RawTenant::set`] puts one value in its field with the field's own
//! deserializer, and the whole tenant is checked again by the same
//! function that checks a file's.

use crate::quantity::{Duration, RateValue, Size};
use crate::scenario::raw::RawWorkloads;
use crate::scenario::{Direction, FlowMatch};
use isola_core::TenantClass;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// `[tenant.on.NAME]`: the SLO keys that may differ per engine, as read.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOverride {
    pub(crate) weight: Option<f64>,
    pub(crate) reservation: Option<RateValue>,
    pub(crate) reservation_burst: Option<f64>,
    pub(crate) limit: Option<RateValue>,
    pub(crate) burst: Option<Size>,
    pub(crate) budget: Option<Duration>,
    pub(crate) budget_action: Option<String>,
}

/// `[[tenant.flow]]` (isolad): one of a tenant's flow queues on the packet
/// path, as read. Its mistakes are reported at the flow's table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFlow {
    #[serde(rename = "match")]
    pub(crate) flow_match: Option<FlowMatch>,
    pub(crate) kernel: String,
    #[serde(default)]
    pub(crate) params: BTreeMap<String, toml::Value>,
    #[serde(default = "yes")]
    pub(crate) reply: bool,
    #[serde(default)]
    pub(crate) error_reply: bool,
    /// A WebAssembly kernel's fuel per packet (its cycle limit).
    pub(crate) fuel: Option<u64>,
    /// A WebAssembly kernel's memory cap.
    pub(crate) kernel_memory: Option<Size>,
    /// An IO flow's transfer direction.
    pub(crate) dma: Option<Direction>,
    // Its flow queue's place in its tenant's turn, and its own ECN mark.
    pub(crate) weight: Option<Spanned<f64>>,
    pub(crate) priority: Option<Spanned<i64>>,
    pub(crate) queue_cap: Option<Spanned<i64>>,
    pub(crate) ecn_threshold: Option<Spanned<usize>>,
}

fn yes() -> bool {
    true
}

/// A uid or gid as written: a number, or `"self"` (the daemon's own
/// effective uid or gid: a single user's setup needs no number).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A uid or gid.
    Number(u32),
    /// `"self"` (anything else is refused by the check).
    Name(String),
}

/// A `[[tenant]]` table, as read (see the module's doc; the keys are
/// documented in docs/scenario-format.md and docs/daemon.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTenant {
    pub(crate) name: Spanned<String>,
    // The service-level objective, in every context.
    pub(crate) weight: Option<Spanned<f64>>,
    pub(crate) class: Option<Spanned<TenantClass>>,
    pub(crate) reservation: Option<Spanned<RateValue>>,
    pub(crate) reservation_burst: Option<Spanned<f64>>,
    pub(crate) limit: Option<Spanned<RateValue>>,
    pub(crate) burst: Option<Spanned<Size>>,
    pub(crate) latency: Option<Spanned<Duration>>,
    pub(crate) latency_multiple: Option<Spanned<f64>>,
    pub(crate) budget: Option<Spanned<Duration>>,
    pub(crate) budget_action: Option<Spanned<String>>,
    pub(crate) queue_cap: Option<Spanned<usize>>,
    pub(crate) memory_quota: Option<Spanned<Size>>,
    #[serde(default)]
    pub(crate) on: BTreeMap<String, Spanned<RawOverride>>,
    // isolad's: who may act as the tenant, its rings, its packet path.
    #[serde(default)]
    pub(crate) users: Vec<Spanned<Id>>,
    #[serde(default)]
    pub(crate) groups: Vec<Spanned<Id>>,
    pub(crate) max_connections: Option<Spanned<u32>>,
    pub(crate) attach_socket: Option<Spanned<String>>,
    pub(crate) sq_entries: Option<Spanned<u32>>,
    pub(crate) cq_entries: Option<Spanned<u32>>,
    pub(crate) ecn_threshold: Option<Spanned<usize>>,
    #[serde(default)]
    pub(crate) flow: Vec<Spanned<RawFlow>>,
    // A scenario's: the packets its workload arrives as, and the workload.
    #[serde(rename = "match")]
    pub(crate) flow_match: Option<FlowMatch>,
    pub(crate) workload: Option<Spanned<RawWorkloads>>,
}

/// A field [`RawTenant::set`] can change: parsed from a typed value by
/// the field's own deserializer, or returned to its default.
trait Settable: Sized {
    /// The field holding `value`.
    fn from_value(value: toml::Value) -> Result<Self, String>;
    /// The field left out.
    fn unset() -> Self;
}

/// Where a live change is written: nowhere in a file.
const NOWHERE: std::ops::Range<usize> = 0..0;

fn parse<T: DeserializeOwned>(value: toml::Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| e.message().trim().to_string())
}

impl<T: DeserializeOwned> Settable for Option<Spanned<T>> {
    fn from_value(value: toml::Value) -> Result<Self, String> {
        Ok(Some(Spanned::new(NOWHERE, parse(value)?)))
    }
    fn unset() -> Self {
        None
    }
}

impl<T: DeserializeOwned> Settable for Vec<Spanned<T>> {
    fn from_value(value: toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::Array(items) => items
                .into_iter()
                .map(|v| Ok(Spanned::new(NOWHERE, parse(v)?)))
                .collect(),
            other => Err(format!("expected a list, got {}", other.type_str())),
        }
    }
    fn unset() -> Self {
        Vec::new()
    }
}

impl<T: DeserializeOwned> Settable for BTreeMap<String, Spanned<T>> {
    fn from_value(value: toml::Value) -> Result<Self, String> {
        match value {
            toml::Value::Table(table) => table
                .into_iter()
                .map(|(k, v)| Ok((k, Spanned::new(NOWHERE, parse(v)?))))
                .collect(),
            other => Err(format!("expected a table, got {}", other.type_str())),
        }
    }
    fn unset() -> Self {
        BTreeMap::new()
    }
}

/// Declares the keys a live change may set: each is the field of the
/// same name (one list; a key added to [`RawTenant`] and not here cannot
/// be changed live, and `every_key_but_the_contexts_own_is_settable`
/// says so).
macro_rules! settable_keys {
    ($($field:ident),* $(,)?) => {
        impl RawTenant {
            /// The keys [`RawTenant::set`] changes: every key of a tenant
            /// but its `name` and a scenario's `match` and `workload`.
            pub const SETTABLE_KEYS: &'static [&'static str] = &[$(stringify!($field)),*];

            fn set_field(&mut self, key: &str, value: Option<toml::Value>) -> Option<Result<(), String>> {
                $(
                    if key == stringify!($field) {
                        return Some(match value {
                            None => {
                                self.$field = Settable::unset();
                                Ok(())
                            }
                            Some(v) => Settable::from_value(v).map(|f| self.$field = f),
                        });
                    }
                )*
                None
            }
        }
    };
}

settable_keys!(
    weight,
    class,
    reservation,
    reservation_burst,
    limit,
    burst,
    latency,
    latency_multiple,
    budget,
    budget_action,
    queue_cap,
    memory_quota,
    on,
    users,
    groups,
    max_connections,
    attach_socket,
    sq_entries,
    cq_entries,
    ecn_threshold,
    flow,
);

impl RawTenant {
    /// A tenant named `name` with no other key set (what `isola ctl add
    /// NAME KEY=VALUE...` starts from).
    pub fn named(name: &str) -> RawTenant {
        RawTenant {
            name: Spanned::new(NOWHERE, name.to_string()),
            weight: None,
            class: None,
            reservation: None,
            reservation_burst: None,
            limit: None,
            burst: None,
            latency: None,
            latency_multiple: None,
            budget: None,
            budget_action: None,
            queue_cap: None,
            memory_quota: None,
            on: BTreeMap::new(),
            users: Vec::new(),
            groups: Vec::new(),
            max_connections: None,
            attach_socket: None,
            sq_entries: None,
            cq_entries: None,
            ecn_threshold: None,
            flow: Vec::new(),
            flow_match: None,
            workload: None,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.name.get_ref()
    }

    /// Its keys without a scenario's own (`match`, `workload`): what a
    /// live driver starts a daemon's tenant from.
    pub fn without_scenario_keys(&self) -> RawTenant {
        RawTenant {
            flow_match: None,
            workload: None,
            ..self.clone()
        }
    }

    /// Sets key `key` to `value` (`None`: back to its default), parsed as
    /// the file's key is. The tenant is not checked here: check it whole
    /// afterwards. Errors name no key (the caller knows it).
    pub fn set(&mut self, key: &str, value: Option<toml::Value>) -> Result<(), String> {
        match key {
            "name" => Err("a tenant's name cannot change (remove it and add another)".into()),
            "match" | "workload" => Err("is a scenario's key: a running tenant has no workload".into()),
            _ => self.set_field(key, value).unwrap_or_else(|| {
                Err(format!(
                    "unknown field `{key}`, expected one of {}",
                    Self::SETTABLE_KEYS
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }),
        }
    }
}
