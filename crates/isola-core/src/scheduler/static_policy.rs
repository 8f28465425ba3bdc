//! An engine's policy, called statically where it is one of the policies
//! the common runs use (`fcfs`, `sfq`), and through the [`Policy`] trait
//! object otherwise.
//!
//! The scheduler calls its engine's policy five times or so a task
//! (`on_ready`, `next_tick`, `pick`, `on_dispatch`, `on_complete`). Through
//! a `Box<dyn Policy>` each is an indirect call that the compiler cannot
//! inline: the arguments (a 56-byte head, the 56-byte context) are written
//! to memory, and a policy that does nothing in a hook (FCFS has no
//! `on_complete` and no tick) still costs the call. For the built-in
//! `fcfs` and `sfq` the engine holds the policy by value and each call is a
//! `match` on which: the same code runs, inlined (issue 34). Any other
//! policy, or one registered under those names by an embedder, stays
//! behind the trait object; a decision does not depend on which way it
//! was called.

use crate::policy::fcfs::Fcfs;
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::sfq::StartTimeFairQueuing;
use crate::policy::{AtLimit, HeadInfo, Params, Policy, PolicyContext, PolicyError};
use crate::units::{Bytes, Nanos};

/// An engine's policy instance (see the module documentation).
pub(super) enum StaticPolicy {
    /// The built-in `fcfs`, by value.
    Fcfs(Fcfs),
    /// The built-in `sfq`, by value.
    Sfq(StartTimeFairQueuing),
    /// Any other policy.
    Dyn(Box<dyn Policy>),
}

/// Whether `info` is the built-in policy `builtin` (the same name and the
/// same build function): a policy an embedder registers under that name
/// with its own build is not.
fn is(info: &PolicyInfo, builtin: &PolicyInfo) -> bool {
    info.name == builtin.name && std::ptr::fn_addr_eq(info.build, builtin.build)
}

impl StaticPolicy {
    /// Builds `info`'s policy from its checked parameters for `setup`: by
    /// value for the built-in `fcfs` and `sfq`, else with `info.build`.
    pub(super) fn build(
        info: &PolicyInfo,
        params: &Params<'_>,
        setup: &PolicySetup<'_>,
    ) -> Result<StaticPolicy, PolicyError> {
        if is(info, &crate::policy::fcfs::INFO) {
            return Ok(StaticPolicy::Fcfs(Fcfs::new(setup.tenants.len())));
        }
        if is(info, &crate::policy::sfq::INFO) {
            return crate::policy::sfq::build_sfq(params, setup).map(StaticPolicy::Sfq);
        }
        (info.build)(params, setup).map(StaticPolicy::Dyn)
    }
}

/// Calls `$call` on the policy inside, whichever it is.
macro_rules! each {
    ($self:expr, $p:ident => $call:expr) => {
        match $self {
            StaticPolicy::Fcfs($p) => $call,
            StaticPolicy::Sfq($p) => $call,
            StaticPolicy::Dyn($p) => $call,
        }
    };
}

// Every method is forwarded, those with defaults too: a default here
// would hide the policy's own. The context is built only in the arm of a
// policy that may read it, from a closure over the engine's fields: built
// before the `match`, its seven words were written to memory for `fcfs`
// and `sfq` too, which read none of them (about 18 instructions a task,
// issue 34).
impl StaticPolicy {
    /// [`Policy::on_ready`], with the context built on demand.
    #[inline]
    pub(super) fn on_ready<'c>(
        &mut self,
        now: Nanos,
        tenant: usize,
        head: &HeadInfo,
        cx: impl FnOnce() -> PolicyContext<'c>,
    ) {
        each!(self, p => p.on_ready(now, tenant, head, &cx()))
    }

    /// [`Policy::admits`], with the context built on demand.
    #[inline]
    pub(super) fn admits<'c>(&self, tenant: usize, cx: impl FnOnce() -> PolicyContext<'c>) -> bool {
        each!(self, p => p.admits(tenant, &cx()))
    }

    /// [`Policy::pick`], with the context built on demand.
    #[inline]
    pub(super) fn pick<'c>(&mut self, now: Nanos, cx: impl FnOnce() -> PolicyContext<'c>) -> Option<usize> {
        each!(self, p => p.pick(now, &cx()))
    }

    /// [`Policy::on_dispatch`], with the context built on demand.
    #[inline]
    pub(super) fn on_dispatch<'c>(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        next: Option<&HeadInfo>,
        cx: impl FnOnce() -> PolicyContext<'c>,
    ) {
        each!(self, p => p.on_dispatch(now, tenant, served, next, &cx()))
    }

    /// [`Policy::on_complete`], with the context built on demand.
    #[inline]
    pub(super) fn on_complete<'c>(
        &mut self,
        now: Nanos,
        tenant: usize,
        served: &HeadInfo,
        measured: Nanos,
        cx: impl FnOnce() -> PolicyContext<'c>,
    ) {
        each!(self, p => p.on_complete(now, tenant, served, measured, &cx()))
    }

    /// [`Policy::next_tick`].
    #[inline]
    pub(super) fn next_tick(&self) -> Option<Nanos> {
        each!(self, p => p.next_tick())
    }

    /// [`Policy::on_tick`], with the context built on demand.
    #[inline]
    pub(super) fn on_tick<'c>(&mut self, now: Nanos, cx: impl FnOnce() -> PolicyContext<'c>) {
        each!(self, p => p.on_tick(now, &cx()))
    }

    /// [`Policy::at_limit`].
    #[inline]
    pub(super) fn at_limit(&self) -> AtLimit {
        each!(self, p => p.at_limit())
    }

    /// [`Policy::split_bytes`].
    #[inline]
    pub(super) fn split_bytes(&self, now: Nanos, tenant: usize, default: Bytes) -> Bytes {
        each!(self, p => p.split_bytes(now, tenant, default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::TenantShare;
    use std::collections::BTreeMap;

    fn built(name: &str) -> StaticPolicy {
        let info = crate::policy::find_policy(name).expect("a built-in policy");
        let none = BTreeMap::new();
        let params = Params::new(format!("policy `{name}`"), info.params, &none).expect("no parameters");
        let shares = [TenantShare {
            weight: 1.0,
            class: crate::TenantClass::BestEffort,
            latency: None,
        }];
        let setup = PolicySetup {
            tenants: &shares,
            slots: 1,
        };
        StaticPolicy::build(info, &params, &setup).expect("builds")
    }

    /// The built-in `fcfs` and `sfq` are held by value, every other policy
    /// (and one registered under their names with another build) behind
    /// the trait object.
    #[test]
    fn only_the_builtins_are_held_by_value() {
        assert!(matches!(built("fcfs"), StaticPolicy::Fcfs(_)));
        assert!(matches!(built("sfq"), StaticPolicy::Sfq(_)));
        assert!(matches!(built("wfq"), StaticPolicy::Sfq(_)));
        assert!(matches!(built("drr"), StaticPolicy::Dyn(_)));
        let mut impostor = crate::policy::fcfs::INFO;
        impostor.build = crate::policy::find_policy("drr").expect("built in").build;
        assert!(!is(&impostor, &crate::policy::fcfs::INFO));
    }
}
