//! The policy registry: every policy by name, with its description, source and
//! parameters, so scenarios and the CLI can list and build them.

use super::{
    astraea, bvt, drr, fcfs, ipipe, mclock, mtda, sfq, slack, static_partition, wlbvt, Policy, TenantShare,
};
use crate::params::{ParamError, ParamSpec, Params};
use serde::Serialize;
use std::collections::BTreeMap;

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No policy has this name.
    #[error("unknown policy `{name}`; known policies: {known}")]
    UnknownPolicy {
        /// The name asked for.
        name: String,
        /// Comma-separated registered names.
        known: String,
    },
    /// A parameter is unknown, missing or invalid.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A registered policy takes a name (or alias) already taken.
    #[error("policy name `{name}` is taken by policy `{by}`")]
    NameTaken {
        /// The name.
        name: String,
        /// The policy that has it.
        by: String,
    },
    /// The policy cannot serve this engine and these tenants.
    #[error("policy `{policy}` cannot be used here: {reason}")]
    Infeasible {
        /// Policy name.
        policy: String,
        /// Why.
        reason: String,
    },
}

/// What a policy is built for: the engine's tenants and its slot count.
#[derive(Debug, Clone, Copy)]
pub struct PolicySetup<'a> {
    /// Every tenant, by index.
    pub tenants: &'a [TenantShare],
    /// Slots of the engine.
    pub slots: u32,
}

/// Builds a policy from checked parameters.
pub type BuildPolicy = fn(&Params<'_>, &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError>;

/// A registered policy.
#[derive(Clone, Copy, Serialize)]
pub struct PolicyInfo {
    /// Name used in scenarios and on the command line.
    pub name: &'static str,
    /// Other names that resolve to this policy.
    pub aliases: &'static [&'static str],
    /// One line on what it does.
    pub description: &'static str,
    /// Where the algorithm comes from.
    pub source: &'static str,
    /// Whether a free slot is never left idle while a ready tenant waits.
    pub work_conserving: bool,
    /// Parameters it accepts.
    pub params: &'static [ParamSpec],
    /// Constructor.
    #[serde(skip)]
    pub build: BuildPolicy,
}

impl std::fmt::Debug for PolicyInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyInfo")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Every registered policy, in the order `isola policies` lists them.
pub static POLICIES: &[PolicyInfo] = &[
    fcfs::INFO,
    drr::RR_INFO,
    drr::WRR_INFO,
    drr::DRR_INFO,
    sfq::INFO,
    bvt::INFO,
    wlbvt::INFO,
    mclock::INFO,
    static_partition::INFO,
    ipipe::INFO,
    mtda::INFO,
    astraea::INFO,
    slack::INFO,
];

/// The policy registered as `name` (or with `name` as an alias).
pub fn find_policy(name: &str) -> Result<&'static PolicyInfo, PolicyError> {
    find_policy_in(&[], name)
}

/// The policy `name` among `extra` (policies a caller registered, see
/// `SchedulerBuilder::register_policy`) and the built-in ones.
pub fn find_policy_in<'a>(extra: &'a [PolicyInfo], name: &str) -> Result<&'a PolicyInfo, PolicyError> {
    extra
        .iter()
        .chain(POLICIES)
        .find(|p| p.name == name || p.aliases.contains(&name))
        .ok_or_else(|| PolicyError::UnknownPolicy {
            name: name.into(),
            known: extra
                .iter()
                .chain(POLICIES)
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Checks that `info`, registered beside the built-in policies and
/// `others`, takes none of their names or aliases.
pub fn check_unique(info: &PolicyInfo, others: &[PolicyInfo]) -> Result<(), PolicyError> {
    let names = |p: &PolicyInfo| {
        std::iter::once(p.name)
            .chain(p.aliases.iter().copied())
            .collect::<Vec<_>>()
    };
    let ours = names(info);
    for other in others.iter().chain(POLICIES) {
        if let Some(clash) = names(other).into_iter().find(|n| ours.contains(n)) {
            return Err(PolicyError::NameTaken {
                name: clash.to_string(),
                by: other.name.to_string(),
            });
        }
    }
    Ok(())
}

/// Builds policy `name` with `params` (`key -> value`) for `setup`.
pub fn build_policy(
    name: &str,
    params: &BTreeMap<String, String>,
    setup: &PolicySetup<'_>,
) -> Result<Box<dyn Policy>, PolicyError> {
    build_policy_in(&[], name, params, setup)
}

/// [`build_policy`] among `extra` and the built-in policies.
pub fn build_policy_in(
    extra: &[PolicyInfo],
    name: &str,
    params: &BTreeMap<String, String>,
    setup: &PolicySetup<'_>,
) -> Result<Box<dyn Policy>, PolicyError> {
    let info = find_policy_in(extra, name)?;
    let checked = Params::new(format!("policy `{}`", info.name), info.params, params)?;
    (info.build)(&checked, setup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::TenantClass;

    fn setup() -> Vec<TenantShare> {
        vec![
            TenantShare {
                weight: 1.0,
                class: TenantClass::BestEffort,
                latency: None,
            };
            3
        ]
    }

    #[test]
    fn every_policy_builds_with_defaults_and_names_are_unique() {
        let t = setup();
        let s = PolicySetup {
            tenants: &t,
            slots: 4,
        };
        for p in POLICIES {
            assert!(build_policy(p.name, &BTreeMap::new(), &s).is_ok(), "{}", p.name);
            assert!(!p.description.is_empty() && !p.source.is_empty());
            let same = POLICIES.iter().filter(|q| q.name == p.name).count();
            assert_eq!(same, 1, "{} registered twice", p.name);
        }
        assert_eq!(find_policy("fairnic").unwrap().name, "static");
    }

    #[test]
    fn bad_names_and_params_are_typed_errors() {
        let t = setup();
        let s = PolicySetup {
            tenants: &t,
            slots: 4,
        };
        assert!(matches!(
            build_policy("nope", &BTreeMap::new(), &s),
            Err(PolicyError::UnknownPolicy { .. })
        ));
        let mut p = BTreeMap::new();
        p.insert("quantum".to_string(), "-3".to_string());
        let err = build_policy("drr", &p, &s).err().unwrap();
        assert!(
            matches!(&err, PolicyError::Param(ParamError::Bad { param, .. }) if param == "quantum"),
            "{err}"
        );
        p.clear();
        p.insert("bogus".to_string(), "1".to_string());
        assert!(matches!(
            build_policy("fcfs", &p, &s),
            Err(PolicyError::Param(ParamError::Unknown { .. }))
        ));
        p.clear();
        p.insert("at_limit".to_string(), "sometimes".to_string());
        let err = build_policy("mclock", &p, &s).err().unwrap();
        assert!(err.to_string().contains("wait, allow"), "{err}");
        // The papers' policies check their parameters' ranges.
        for (policy, param, value) in [
            ("astraea", "alpha", "0"),
            ("astraea", "reserve", "1"),
            ("astraea", "period", "0"),
            ("mtda", "credits", "-1"),
            ("ipipe", "percentile", "0"),
            ("ipipe", "return_threshold", "200000"),
        ] {
            p.clear();
            p.insert(param.to_string(), value.to_string());
            let err = build_policy(policy, &p, &s).err().unwrap();
            assert!(
                matches!(&err, PolicyError::Param(ParamError::Bad { param: got, .. }) if got == param),
                "{policy}: {err}"
            );
        }
        // A slot partition needs a slot per tenant; by default static
        // time-slices the engine instead.
        let s1 = PolicySetup {
            tenants: &t,
            slots: 2,
        };
        let slots: BTreeMap<String, String> = [("mode".to_string(), "slots".to_string())].into();
        assert!(matches!(
            build_policy("static", &slots, &s1),
            Err(PolicyError::Infeasible { .. })
        ));
        assert!(build_policy("static", &BTreeMap::new(), &s1).is_ok());
    }
}
