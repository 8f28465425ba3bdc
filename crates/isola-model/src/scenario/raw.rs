//! The scenario file as TOML gives it: serde types that mirror the file's
//! tables and keys, with their positions (`Spanned`) kept so the checks in
//! `check` can name the line of a mistake. Nothing here judges a
//! value beyond its type; a quantity's own parse (`crate::quantity`) is the
//! one exception, reported by serde at the value.

use super::{Direction, FlowMatch};
use crate::quantity::{parse_size, Duration, Frequency, RateValue, Size};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

/// A parameter value as text: strings as written, other values as TOML.
pub(crate) fn value_text(v: toml::Value) -> String {
    match v {
        toml::Value::String(s) => s,
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) run: Option<Spanned<RawRun>>,
    #[serde(default)]
    pub(super) engine: Vec<Spanned<RawEngine>>,
    #[serde(default)]
    pub(super) tenant: Vec<Spanned<crate::tenant::RawTenant>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    pub(super) seed: Option<u64>,
    pub(super) duration: Option<Spanned<Duration>>,
    pub(super) policies: Option<Spanned<Vec<Spanned<RawPolicy>>>>,
    pub(super) window: Option<Spanned<Duration>>,
    pub(super) max_events: Option<Spanned<u64>>,
    pub(super) max_windows: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) solo: bool,
}

pub(super) struct RawPolicy {
    pub(super) name: String,
    pub(super) label: Option<String>,
    pub(super) params: BTreeMap<String, String>,
    pub(super) split: Option<u64>,
    pub(super) on: BTreeMap<String, super::per_engine::RawPolicyChoice>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicyTable {
    name: String,
    label: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    #[serde(alias = "fragment")]
    split: Option<Size>,
    #[serde(default)]
    on: BTreeMap<String, super::per_engine::RawPolicyChoice>,
}

impl<'de> Deserialize<'de> for RawPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPolicy;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a policy name, or a table { name, label, params, split, on }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPolicy, E> {
                Ok(RawPolicy {
                    name: v.into(),
                    label: None,
                    params: BTreeMap::new(),
                    split: None,
                    on: BTreeMap::new(),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPolicy, A::Error> {
                let t = RawPolicyTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let params = t.params.into_iter().map(|(k, v)| (k, value_text(v))).collect();
                Ok(RawPolicy {
                    name: t.name,
                    label: t.label,
                    params,
                    split: t.split.map(|s| s.0),
                    on: t.on,
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEngine {
    pub(super) name: Spanned<String>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) slots: Option<Spanned<u32>>,
    pub(super) queue_depth: Option<Spanned<u32>>,
    pub(super) service: Option<Spanned<toml::Value>>,
    pub(super) clock: Option<Spanned<Frequency>>,
    pub(super) dispatch_overhead: Option<Spanned<Duration>>,
    pub(super) egress_ratio: Option<Spanned<f64>>,
    pub(super) split_when: Option<Spanned<String>>,
    pub(super) contention_window: Option<Spanned<Duration>>,
    pub(super) split_time: Option<Spanned<Duration>>,
    pub(super) batch: Option<Spanned<crate::engine::RawBatch>>,
    pub(super) learn: Option<bool>,
    pub(super) bandwidth: Option<Spanned<RateValue>>,
    pub(super) max_payload: Option<Spanned<Size>>,
    pub(super) max_read_request: Option<Spanned<Size>>,
    pub(super) tlp_overhead: Option<Spanned<Size>>,
    pub(super) tlp_rate: Option<Spanned<RateValue>>,
    pub(super) request_overhead: Option<Spanned<Duration>>,
    pub(super) pcie: Option<Spanned<super::pcie::RawPcie>>,
    pub(super) packet_overhead: Option<Spanned<Size>>,
    pub(super) steering: Option<Spanned<String>>,
    pub(super) ring: Option<Spanned<u32>>,
}

#[derive(Deserialize, Clone)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub(super) enum RawService {
    Constant { time: Duration },
    Exponential { mean: Duration },
    Affine { base: Duration, per_byte_ns: f64 },
    Table { points: Vec<(Size, Duration)> },
    Cycles { base: f64, per_byte: f64 },
}

/// A `[tenant.workload]` table, as read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorkload {
    pub(super) engine: Option<Spanned<String>>,
    pub(super) pipeline: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) op: Option<String>,
    #[serde(default)]
    pub(super) params: BTreeMap<String, toml::Value>,
    pub(super) size: Option<Spanned<RawSize>>,
    pub(super) arrival: Spanned<RawArrival>,
    pub(super) count: Option<Spanned<u64>>,
    pub(super) start: Option<Duration>,
    pub(super) service: Option<Spanned<toml::Value>>,
    pub(super) direction: Option<Spanned<Direction>>,
    pub(super) flow: Option<FlowMatch>,
    pub(super) flows: Option<Spanned<u32>>,
    pub(super) flow_life: Option<Spanned<Duration>>,
    pub(super) measured_over_predicted: Option<Spanned<f64>>,
    pub(super) migrate: Option<Spanned<super::migrate::RawMigrate>>,
    // Its flow queue's place in its tenant's turn (`crate::tenant::flow_queue`).
    pub(crate) weight: Option<Spanned<f64>>,
    pub(crate) priority: Option<Spanned<i64>>,
    pub(crate) queue_cap: Option<Spanned<i64>>,
}

/// A tenant's workloads as written: one `[tenant.workload]` table, or an
/// array of `[[tenant.workload]]` tables (each its own flow queue).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawWorkloads {
    One(Box<RawWorkload>),
    Many(Vec<Spanned<RawWorkload>>),
}

impl<'de> Deserialize<'de> for RawWorkloads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // By hand rather than `untagged`, so that a mistake inside a
        // workload is reported at its key, not as "no variant matched".
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawWorkloads;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a [tenant.workload] table or [[tenant.workload]] tables")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawWorkloads, A::Error> {
                RawWorkload::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|w| RawWorkloads::One(Box::new(w)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<RawWorkloads, A::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(RawWorkloads::Many)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum RawSize {
    Fixed(u64),
    Dist(RawSizeDist),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub(super) enum RawSizeDist {
    Fixed {
        size: Size,
    },
    Uniform {
        min: Size,
        max: Size,
    },
    LogNormal {
        mu: f64,
        sigma: f64,
        min: Size,
        max: Size,
    },
    Empirical {
        points: Vec<(Size, f64)>,
    },
}

impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"64B\", or a table { dist = ... }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawSize, E> {
                parse_size(v).map(RawSize::Fixed).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawSize, E> {
                parse_size(&v.to_string()).map(RawSize::Fixed).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawSize, E> {
                parse_size(&v.to_string()).map(RawSize::Fixed).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawSize, A::Error> {
                RawSizeDist::deserialize(de::value::MapAccessDeserializer::new(map)).map(RawSize::Dist)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub(super) enum RawArrival {
    Poisson(RateValue),
    Constant(RateValue),
    Uniform(RateValue),
    OnOff {
        on: Duration,
        off: Duration,
        rate: RateValue,
    },
    Steps(Vec<(Duration, RateValue)>),
    Closed(u32),
    Trace(String),
}
