//! iPipe's tail measurement as it was before issue 17, kept as the
//! reference [`super::windows::TailCounts`] is tested (`tests.rs`) and
//! benchmarked against (`next_ref/ipipe/N` in `benches/scheduler_next.rs`):
//! every tenant keeps its last `window` latencies and service times, and
//! each question selects the percentile from a copy of the window; clearing
//! the FCFS tenants' windows walks every tenant. The groups, turns and
//! moves are [`Ipipe`]'s own; only the windows differ.

use super::windows::{percentile, TailWindows};
use super::{Ipipe, IpipeParams};
use crate::policy::registry::{PolicyInfo, PolicySetup};
use crate::policy::{Params, Policy, PolicyError};
use crate::units::Nanos;
use std::collections::VecDeque;

/// Registry entry, for registering with
/// [`crate::SchedulerBuilder::register_policy`]; not in [`crate::POLICIES`].
/// Takes `ipipe`'s parameters.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "ipipe_select",
    aliases: &[],
    description: "iPipe with the pre-issue-17 tail measurement, a percentile selection per completion (reference for tests and benchmarks).",
    source: "iPipe (Liu et al., SIGCOMM 2019), as described by MTDA (IEEE TSC 2024)",
    work_conserving: true,
    params: super::INFO.params,
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Ipipe::<PercentileWindows>::new(s, super::params(p)?)))
}

/// Every tenant's last `window` samples, the percentile selected per question.
#[derive(Debug, Clone)]
pub struct PercentileWindows {
    params: IpipeParams,
    latency: Vec<VecDeque<Nanos>>,
    service: Vec<VecDeque<Nanos>>,
    scratch: Vec<Nanos>,
}

impl PercentileWindows {
    fn tail_latency(&mut self, tenant: usize) -> f64 {
        percentile(
            self.latency[tenant].iter().copied(),
            self.params.percentile,
            &mut self.scratch,
        ) as f64
    }
}

impl TailWindows for PercentileWindows {
    fn new(tenants: usize, params: &IpipeParams) -> Self {
        PercentileWindows {
            params: *params,
            latency: vec![VecDeque::new(); tenants],
            service: vec![VecDeque::new(); tenants],
            scratch: Vec::with_capacity(params.window),
        }
    }

    fn record(&mut self, tenant: usize, _: bool, latency: Nanos, service: Nanos) -> usize {
        let window = self.params.window;
        let push = |q: &mut VecDeque<Nanos>, v| {
            if q.len() == window {
                q.pop_front();
            }
            q.push_back(v);
        };
        push(&mut self.latency[tenant], latency);
        push(&mut self.service[tenant], service);
        self.latency[tenant].len()
    }

    fn tail_above_threshold(&mut self, tenant: usize) -> bool {
        self.tail_latency(tenant) > self.params.tail_threshold
    }

    fn tail_below_return(&mut self, tenant: usize) -> bool {
        self.tail_latency(tenant) < self.params.return_threshold
    }

    fn culprit(&mut self, in_drr: &[bool]) -> Option<usize> {
        let p = self.params.percentile;
        let mut culprit: Option<(usize, Nanos)> = None;
        for (t, &drr) in in_drr.iter().enumerate() {
            if drr || self.service[t].is_empty() {
                continue;
            }
            let s = percentile(self.service[t].iter().copied(), p, &mut self.scratch);
            if culprit.is_none_or(|(_, b)| s > b) {
                culprit = Some((t, s));
            }
        }
        culprit.map(|(t, _)| t)
    }

    fn clear(&mut self, tenant: usize) {
        self.latency[tenant].clear();
        self.service[tenant].clear();
    }

    fn clear_fcfs(&mut self, in_drr: &[bool]) {
        for (t, &drr) in in_drr.iter().enumerate() {
            if !drr {
                self.clear(t);
            }
        }
    }
}
