//! First come, first served across tenants: the oldest queued task wins,
//! whoever submitted it. This is what a DPU accelerator or DOCA/DPDK queue
//! does natively, and the baseline every isolation policy is compared with.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::Params;
use crate::ready_heap::{HeapKey, IndexedHeap};
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "fcfs",
    aliases: &[],
    description: "First come, first served: the oldest queued task of any tenant goes next.",
    source: "DPU hardware queues, DOCA/DPDK (baseline)",
    work_conserving: true,
    params: &[],
    build,
};

fn build(_: &Params<'_>, setup: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    Ok(Box::new(Fcfs::new(setup.tenants.len())))
}

/// FCFS over per-tenant FIFOs: a heap of ready tenants keyed by their head's
/// submission sequence number. Since each channel is FIFO, the smallest head
/// is the oldest task overall.
#[derive(Debug, Clone)]
pub struct Fcfs {
    heads: IndexedHeap,
}

impl Fcfs {
    /// FCFS for `tenants` tenants.
    pub fn new(tenants: usize) -> Self {
        Fcfs {
            heads: IndexedHeap::new(tenants),
        }
    }
}

impl Policy for Fcfs {
    fn on_ready(&mut self, _: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.heads.set(tenant, HeapKey::new(0.0, head.seq));
    }

    fn pick(&mut self, _: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        self.heads.peek().map(|(t, _)| t)
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        match next {
            Some(h) => self.heads.set(tenant, HeapKey::new(0.0, h.seq)),
            None => self.heads.remove(tenant),
        }
    }
}
