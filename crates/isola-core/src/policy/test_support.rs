//! Helpers shared by the policies' unit tests: a scheduler with one engine
//! (1 ns of predicted cost per byte) running one policy, and task
//! submission.

use crate::engine::{EngineId, EngineKind, EngineSpec};
use crate::scheduler::{Dispatch, Scheduler, SchedulerBuilder};
use crate::task::{OpSpec, Task, TaskId};
use crate::tenant::{Slo, TenantId};
use crate::units::Nanos;
use crate::AffineCost;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A scheduler builder with one engine `e` of `kind` with `slots`
/// (fragmenting at `fragment`, 1 ns of predicted cost per byte) and tenants
/// `t0, t1, ...` with `slos`; the caller sets the policy.
pub(crate) fn builder(kind: EngineKind, slots: u32, fragment: Option<u64>, slos: &[Slo]) -> SchedulerBuilder {
    let mut b = SchedulerBuilder::new();
    b.engine(
        EngineSpec::new("e", kind, slots, Arc::new(AffineCost::new(0.0, 1.0).unwrap())).with_split(fragment),
    );
    for (i, s) in slos.iter().enumerate() {
        b.tenant(format!("t{i}"), s.clone());
    }
    b
}

/// Parameters of a policy, by name, as a scenario gives them.
pub(crate) fn params<K: ToString, V: ToString>(
    pairs: impl IntoIterator<Item = (K, V)>,
) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A scheduler running `policy` with `params` on one engine of `kind` with
/// `slots` (fragmenting at `fragment`), for tenants with `slos`.
pub(crate) fn scheduler(
    policy: &str,
    kind: EngineKind,
    slots: u32,
    fragment: Option<u64>,
    slos: &[Slo],
    params: &[(&str, &str)],
) -> Scheduler {
    let mut b = builder(kind, slots, fragment, slos);
    b.policy(policy, self::params(params.iter().copied()));
    b.build().unwrap()
}

/// Task `id` of `tenant` for engine 0, submitted at `now`: `bytes` bytes,
/// so `bytes` ns of predicted service, due `deadline` ns after `now` if
/// given.
pub(crate) fn task(id: u64, tenant: usize, bytes: u64, now: Nanos, deadline: Option<Nanos>) -> Task {
    Task {
        id: TaskId(id),
        tenant: TenantId(tenant as u32),
        engine: EngineId(0),
        op: OpSpec::named("generic"),
        bytes,
        arrival: now,
        deadline: deadline.map(|d| now + d),
        predicted_cost: None,
        planner: None,
        flow: 0,
    }
}

/// Submits [`task`] `id` of `tenant` at `now`, with no deadline.
pub(crate) fn submit(s: &mut Scheduler, now: Nanos, id: u64, tenant: usize, bytes: u64) {
    s.submit(now, task(id, tenant, bytes, now, None)).unwrap();
}

/// Serves engine 0 of `s` from `now` until `until`, one dispatch at a time,
/// each taking exactly its predicted cost; `arrivals` may submit work before
/// every decision. Returns the end time and `(start, tenant, dispatch)` for
/// every dispatch.
pub(crate) fn serve(
    s: &mut Scheduler,
    now: Nanos,
    until: Nanos,
    arrivals: impl FnMut(&mut Scheduler, Nanos),
) -> (Nanos, Vec<(Nanos, usize, Dispatch)>) {
    serve_with(s, now, until, arrivals, |d| d.predicted)
}

/// [`serve`], each dispatch taking `service(dispatch)` ns.
pub(crate) fn serve_with(
    s: &mut Scheduler,
    mut now: Nanos,
    until: Nanos,
    mut arrivals: impl FnMut(&mut Scheduler, Nanos),
    service: impl Fn(&Dispatch) -> Nanos,
) -> (Nanos, Vec<(Nanos, usize, Dispatch)>) {
    let mut out = Vec::new();
    while now < until {
        arrivals(s, now);
        match s.next(now, EngineId(0)) {
            Some(d) => {
                let end = now + service(&d);
                s.complete(end, d.id, end - now).unwrap();
                out.push((now, d.task.tenant.index(), d));
                now = end;
            }
            None => now += 100,
        }
    }
    (now, out)
}
