//! What iPipe's decisions read of each tenant's last `window` completions,
//! and the incremental way of keeping it (issue 17).
//!
//! The decisions ask three things: is an FCFS tenant's tail latency above
//! `tail_threshold`, is a DRR tenant's below `return_threshold`, and which
//! FCFS tenant has the largest tail service time. The tail is the
//! nearest-rank percentile: the `k`-th smallest of the window's `len`
//! samples, `k = ceil(percentile / 100 x len)` clamped to `1..=len`.
//!
//! [`TailCounts`] answers the first two without the samples' order. The
//! comparison `x as f64 > tail_threshold` is monotone in the sample `x`
//! (integer to float conversion rounds to nearest and never inverts an
//! order), so the samples above the threshold are the window's largest
//! ones, and the `k`-th smallest is above it exactly when fewer than `k`
//! samples are not: `len - above < k`. Likewise the `k`-th smallest is
//! below `return_threshold` exactly when at least `k` samples are:
//! `below >= k`. Each sample is compared once, when it enters; the counts
//! change when it enters and when it leaves. No float is summed, so the
//! answers are the percentile's, exactly.
//!
//! The service tail is only read when an FCFS tenant's tail latency is
//! too high, of every FCFS tenant, and is then selected from its window as
//! before. That decision moves a tenant to DRR and clears every FCFS
//! tenant's windows, so the FCFS windows read at the next one hold only
//! samples recorded since: the selections cost O(1) per completion,
//! amortized, plus a pass over the tenants per move. "Clear the windows of
//! every FCFS tenant" starts a new epoch; an FCFS tenant whose windows are
//! of an older epoch counts as empty and is emptied at its next completion.

use super::{nearest_rank, IpipeParams};
use crate::units::Nanos;

/// Each tenant's latency and service-time windows, as iPipe's decisions
/// read them. Every method but [`TailWindows::new`] concerns tenants by
/// index; `in_drr` is each tenant's group now.
pub trait TailWindows: Send {
    /// Empty windows for `tenants` tenants under `params`.
    fn new(tenants: usize, params: &IpipeParams) -> Self
    where
        Self: Sized;

    /// Records a completion of `tenant` (in the DRR group if `in_drr`):
    /// its latency and measured service time, the oldest sample dropped
    /// from a full window. Returns the samples now in its latency window.
    fn record(&mut self, tenant: usize, in_drr: bool, latency: Nanos, service: Nanos) -> usize;

    /// Whether `tenant`'s tail latency is above `tail_threshold` (asked
    /// right after [`TailWindows::record`], of a tenant with samples).
    fn tail_above_threshold(&mut self, tenant: usize) -> bool;

    /// Whether `tenant`'s tail latency is below `return_threshold` (asked
    /// right after [`TailWindows::record`], of a tenant with samples).
    fn tail_below_return(&mut self, tenant: usize) -> bool;

    /// The FCFS tenant with service samples whose tail service time is the
    /// largest, the lowest index among equals; `None` if there is none.
    fn culprit(&mut self, in_drr: &[bool]) -> Option<usize>;

    /// Empties `tenant`'s windows.
    fn clear(&mut self, tenant: usize);

    /// Empties the windows of every FCFS tenant.
    fn clear_fcfs(&mut self, in_drr: &[bool]);
}

/// The `p`-th percentile (nearest rank) of `samples`; 0 if there are none.
/// `scratch` is reused between calls.
pub(super) fn percentile(samples: impl Iterator<Item = Nanos>, p: f64, scratch: &mut Vec<Nanos>) -> Nanos {
    scratch.clear();
    scratch.extend(samples);
    if scratch.is_empty() {
        return 0;
    }
    let rank = nearest_rank(p, scratch.len());
    *scratch.select_nth_unstable(rank - 1).1
}

/// Per latency sample: above `tail_threshold`.
const ABOVE: u64 = 1;
/// Per latency sample: below `return_threshold`.
const BELOW: u64 = 2;
/// Samples per word of flags (two bits each).
const PER_WORD: usize = 32;

/// One tenant's windows: a ring of `window` slots, filled from slot 0
/// after a clear and then overwritten oldest first, so the samples are
/// always the slots `0..len` (a percentile needs no order). The leaving
/// sample's flags are read when a full window takes a new one; two bits
/// per sample keep every tenant's flags in a few cache lines (the service
/// times, read only when a culprit is sought, are only written here).
#[derive(Debug, Clone, Default)]
struct Window {
    /// Samples in the window.
    len: usize,
    /// The oldest sample's slot once the window is full (0 before).
    oldest: usize,
    /// Per slot: its latency's [`ABOVE`] and [`BELOW`] flags, two bits.
    flags: Vec<u64>,
    /// Per slot: the measured service time.
    service: Vec<Nanos>,
    /// Samples with [`ABOVE`].
    above: usize,
    /// Samples with [`BELOW`].
    below: usize,
    /// The epoch the windows belong to (see the module documentation).
    epoch: u64,
}

impl Window {
    fn clear(&mut self, epoch: u64) {
        self.len = 0;
        self.oldest = 0;
        self.service.clear();
        self.above = 0;
        self.below = 0;
        self.epoch = epoch;
    }

    /// The flags of `slot`.
    fn flags_at(&self, slot: usize) -> u64 {
        (self.flags[slot / PER_WORD] >> (slot % PER_WORD * 2)) & 3
    }

    /// Adds a sample with `flags` and `service`, the oldest leaving a
    /// window of `window` samples that is full.
    fn push(&mut self, window: usize, flags: u64, service: Nanos) {
        let slot = if self.len == window {
            let slot = self.oldest;
            let old = self.flags_at(slot);
            self.above -= usize::from(old & ABOVE != 0);
            self.below -= usize::from(old & BELOW != 0);
            self.oldest = if slot + 1 == window { 0 } else { slot + 1 };
            self.service[slot] = service;
            slot
        } else {
            let slot = self.len;
            self.len += 1;
            self.service.push(service);
            if slot / PER_WORD == self.flags.len() {
                self.flags.push(0);
            }
            slot
        };
        let (word, shift) = (slot / PER_WORD, slot % PER_WORD * 2);
        self.flags[word] = (self.flags[word] & !(3 << shift)) | (flags << shift);
        self.above += usize::from(flags & ABOVE != 0);
        self.below += usize::from(flags & BELOW != 0);
    }
}

/// Counts of latency samples on either side of the thresholds, and the
/// service tail selected only when a culprit is sought (see the module
/// documentation): O(1) per completion.
#[derive(Debug, Clone)]
pub struct TailCounts {
    window: usize,
    percentile: f64,
    tail_threshold: f64,
    return_threshold: f64,
    tenants: Vec<Window>,
    /// Advanced when every FCFS tenant's windows are cleared.
    epoch: u64,
    scratch: Vec<Nanos>,
}

impl TailCounts {
    /// `tenant`'s tail rank among its latency samples.
    fn rank(&self, tenant: usize) -> usize {
        nearest_rank(self.percentile, self.tenants[tenant].len)
    }
}

impl TailWindows for TailCounts {
    fn new(tenants: usize, params: &IpipeParams) -> Self {
        TailCounts {
            window: params.window,
            percentile: params.percentile,
            tail_threshold: params.tail_threshold,
            return_threshold: params.return_threshold,
            tenants: vec![Window::default(); tenants],
            epoch: 0,
            scratch: Vec::with_capacity(params.window),
        }
    }

    fn record(&mut self, tenant: usize, in_drr: bool, latency: Nanos, service: Nanos) -> usize {
        let w = &mut self.tenants[tenant];
        if !in_drr && w.epoch != self.epoch {
            w.clear(self.epoch);
        }
        let x = latency as f64;
        let flags =
            (u64::from(x > self.tail_threshold) * ABOVE) | (u64::from(x < self.return_threshold) * BELOW);
        w.push(self.window, flags, service);
        w.len
    }

    fn tail_above_threshold(&mut self, tenant: usize) -> bool {
        let w = &self.tenants[tenant];
        w.len - w.above < self.rank(tenant)
    }

    fn tail_below_return(&mut self, tenant: usize) -> bool {
        self.tenants[tenant].below >= self.rank(tenant)
    }

    fn culprit(&mut self, in_drr: &[bool]) -> Option<usize> {
        let mut culprit: Option<(usize, Nanos)> = None;
        for (t, w) in self.tenants.iter().enumerate() {
            if in_drr[t] || w.epoch != self.epoch || w.len == 0 {
                continue;
            }
            let s = percentile(w.service.iter().copied(), self.percentile, &mut self.scratch);
            if culprit.is_none_or(|(_, b)| s > b) {
                culprit = Some((t, s));
            }
        }
        culprit.map(|(t, _)| t)
    }

    fn clear(&mut self, tenant: usize) {
        self.tenants[tenant].clear(self.epoch);
    }

    fn clear_fcfs(&mut self, _: &[bool]) {
        self.epoch += 1;
    }
}
