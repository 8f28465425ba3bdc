//! Where a task's latency went. Every engine keeps, per tenant, how long
//! its workers have served that tenant's work (an integral of busy time
//! that any thread can read at any instant); a task reads it when it is
//! submitted and when its last piece ends, and its latency is split
//! into the hand-off of its submission to the dispatcher (where a
//! tenant thread the host preempted in the middle of submitting shows), its
//! own service, the time the engine served its own tenant's
//! earlier work (its channel), other tenants' work (the slot it waited
//! for), the time nothing was in service yet it waited (the dispatch path:
//! the dispatcher picking it up and handing it over, where a thread the
//! host took away shows), and the delivery of its completion.

use isola_core::Nanos;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Where a task's latency went, ns; the parts add up to its latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencyBreakdown {
    /// Its own pieces in service (wall time, summed over pieces).
    pub service_ns: Nanos,
    /// Of `service_ns`: time its worker was off its CPU while serving it
    /// (the host ran something else: another thread, or the hypervisor).
    pub service_off_cpu_ns: Nanos,
    /// Waiting while the engine served its own tenant's earlier work
    /// (waiting in its channel).
    pub behind_own_ns: Nanos,
    /// Waiting while the engine served other tenants' work (waiting for
    /// a slot; the pieces in service ahead of it).
    pub behind_others_ns: Nanos,
    /// Waiting while the engine served nobody: the dispatch path (the
    /// dispatcher taking the submission, the core holding it back, the
    /// worker picking it up), where a descheduled dispatcher or worker
    /// shows.
    pub engine_idle_ns: Nanos,
    /// From the end of its last piece to its completion.
    pub delivery_ns: Nanos,
    /// From the submit call to the dispatcher taking the task: the
    /// tenant's own thread and the channel to the dispatcher (a tenant
    /// thread preempted in the middle of submitting shows here).
    pub handoff_ns: Nanos,
}

/// A task's own timings, the inputs of [`LatencyBreakdown::attribute`]
/// besides the engine's busy time, ns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TaskTimes {
    /// Submission to completion.
    pub latency: Nanos,
    /// Service, summed over its pieces.
    pub service: Nanos,
    /// Of that, its workers off their CPU.
    pub off_cpu: Nanos,
    /// Its last piece's end to its completion.
    pub delivery: Nanos,
    /// Its submission to the dispatcher taking it.
    pub handoff: Nanos,
}

impl LatencyBreakdown {
    /// The parts' sum: the latency they divide.
    pub fn total_ns(&self) -> Nanos {
        self.service_ns
            + self.behind_own_ns
            + self.behind_others_ns
            + self.engine_idle_ns
            + self.delivery_ns
            + self.handoff_ns
    }

    /// Splits the task's latency (`t`): its service and delivery as
    /// measured, and the engine's busy time over the task's life (`at_end`
    /// minus `at_submit`), its own pieces included, on an engine of
    /// `workers` workers. Parts are clamped in that order (the hand-off
    /// after the waits, since the engine may serve others meanwhile) so
    /// that they add up to the latency exactly: readings taken at slightly
    /// different instants cannot make more time than there was.
    pub(crate) fn attribute(
        t: TaskTimes,
        at_submit: BusyReading,
        at_end: BusyReading,
        workers: usize,
    ) -> LatencyBreakdown {
        let workers = workers.max(1) as u64;
        let own = at_end.own.saturating_sub(at_submit.own);
        let all = at_end.all.saturating_sub(at_submit.all);
        let TaskTimes {
            latency,
            service,
            off_cpu,
            delivery,
            handoff,
        } = t;
        let mut left = latency;
        let mut take = |ns: Nanos| {
            let t = ns.min(left);
            left -= t;
            t
        };
        let service_ns = take(service);
        let delivery_ns = take(delivery);
        let behind_own_ns = take(own.saturating_sub(service) / workers);
        let behind_others_ns = take(all.saturating_sub(own) / workers);
        let handoff_ns = take(handoff);
        let engine_idle_ns = take(Nanos::MAX);
        let b = LatencyBreakdown {
            service_ns,
            service_off_cpu_ns: off_cpu.min(service_ns),
            behind_own_ns,
            behind_others_ns,
            engine_idle_ns,
            delivery_ns,
            handoff_ns,
        };
        debug_assert_eq!(b.total_ns(), latency, "the parts divide the latency");
        b
    }
}

/// An engine's busy time so far: serving one tenant, and serving anyone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BusyReading {
    /// Serving the tenant it was read for, ns.
    pub own: Nanos,
    /// Serving anyone, ns (summed over workers).
    pub all: Nanos,
}

/// One engine's busy time per tenant, kept by its workers as they start
/// and end pieces, readable at any instant by any thread.
#[derive(Debug)]
pub(crate) struct EngineBusy {
    /// Per tenant: service of its finished pieces, ns.
    done: Vec<AtomicU64>,
    /// Per worker: when its piece in service started (ns since the epoch,
    /// plus one; 0 while idle), and whose piece it is.
    running: Vec<(AtomicU64, AtomicUsize)>,
    /// Pieces the dispatcher handed to the workers that have not ended
    /// yet: counted down as each ends, before its completion goes out, so
    /// that a tenant told of it finds the workers idle when it submits
    /// again (`dispatcher/inline.rs`).
    handed: AtomicUsize,
}

impl EngineBusy {
    pub(crate) fn new(tenants: usize, workers: usize) -> Self {
        EngineBusy {
            done: (0..tenants).map(|_| AtomicU64::new(0)).collect(),
            running: (0..workers)
                .map(|_| (AtomicU64::new(0), AtomicUsize::new(0)))
                .collect(),
            handed: AtomicUsize::new(0),
        }
    }

    /// The dispatcher hands the workers `pieces` more.
    pub(crate) fn handed(&self, pieces: usize) {
        self.handed.fetch_add(pieces, Ordering::AcqRel);
    }

    /// A worker's piece ended (its completion is not out yet).
    pub(crate) fn piece_ended(&self) {
        let before = self.handed.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "a worker ended a piece never handed to it");
    }

    /// Whether every piece handed to the workers has ended.
    pub(crate) fn workers_idle(&self) -> bool {
        self.handed.load(Ordering::Acquire) == 0
    }

    /// Worker `worker` starts a piece of `tenant`'s at `at` ns.
    pub(crate) fn start(&self, worker: usize, tenant: usize, at: Nanos) {
        if let Some((since, whose)) = self.running.get(worker) {
            // The owner first: a reader that sees the start sees it too.
            whose.store(tenant, Ordering::Relaxed);
            since.store(at.saturating_add(1), Ordering::Release);
        }
    }

    /// Worker `worker`'s piece of `tenant`'s ended after `service` ns.
    pub(crate) fn end(&self, worker: usize, tenant: usize, service: Nanos) {
        if let Some(done) = self.done.get(tenant) {
            done.fetch_add(service, Ordering::Relaxed);
        }
        if let Some((since, _)) = self.running.get(worker) {
            since.store(0, Ordering::Release);
        }
    }

    /// How many workers the engine has.
    pub(crate) fn workers(&self) -> usize {
        self.running.len()
    }

    /// The busy time so far at `now` ns, for `tenant`.
    pub(crate) fn read(&self, now: Nanos, tenant: usize) -> BusyReading {
        let mut r = BusyReading::default();
        for (t, done) in self.done.iter().enumerate() {
            let ns = done.load(Ordering::Relaxed);
            r.all += ns;
            if t == tenant {
                r.own += ns;
            }
        }
        for (since, whose) in &self.running {
            let at = since.load(Ordering::Acquire);
            if at == 0 {
                continue;
            }
            let ns = now.saturating_sub(at - 1);
            r.all += ns;
            if whose.load(Ordering::Relaxed) == tenant {
                r.own += ns;
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(own: Nanos, all: Nanos) -> BusyReading {
        BusyReading { own, all }
    }

    /// A task of 100 ns latency, 30 ns of its own service (5 off CPU),
    /// delivered 4 ns after its last piece; meanwhile the engine served 10
    /// ns of its tenant's earlier work and 40 ns of others'.
    #[test]
    fn the_parts_divide_the_latency() {
        let t = TaskTimes {
            latency: 100,
            service: 30,
            off_cpu: 5,
            delivery: 4,
            handoff: 6,
        };
        let b = LatencyBreakdown::attribute(t, reading(0, 0), reading(40, 80), 1);
        assert_eq!(
            b,
            LatencyBreakdown {
                service_ns: 30,
                service_off_cpu_ns: 5,
                behind_own_ns: 10,
                behind_others_ns: 40,
                engine_idle_ns: 10,
                delivery_ns: 4,
                handoff_ns: 6,
            }
        );
    }

    /// Readings that claim more busy time than the task lived are clamped.
    #[test]
    fn more_busy_time_than_latency_is_clamped() {
        let t = TaskTimes {
            latency: 50,
            service: 30,
            off_cpu: 40,
            ..TaskTimes::default()
        };
        let b = LatencyBreakdown::attribute(t, reading(0, 0), reading(30, 500), 1);
        assert_eq!(b.total_ns(), 50);
        assert_eq!(b.behind_others_ns, 20);
        assert_eq!(b.service_off_cpu_ns, 30);
    }

    #[test]
    fn busy_time_counts_finished_and_running_pieces_per_tenant() {
        let busy = EngineBusy::new(2, 2);
        busy.start(0, 0, 100);
        busy.end(0, 0, 50);
        busy.start(1, 1, 120);
        assert_eq!(busy.read(200, 0), reading(50, 50 + 80));
        assert_eq!(busy.read(200, 1), reading(80, 130));
        busy.end(1, 1, 90);
        assert_eq!(busy.read(10_000, 1), reading(90, 140));
    }
}
