//! A tenant's flow queues on one engine: the second level of the
//! scheduling hierarchy (OSMOSIS' flow management queues; DPDK
//! `rte_sched`'s pipe → traffic class → queue; Linux HTB/HFSC's leaf
//! classes under a parent).
//!
//! The engine's policy shares the engine among *tenants*; it sees one head
//! per tenant. Which of the tenant's queues that head comes from is
//! decided here, when the tenant's turn comes:
//!
//! * strict priority between queues: a queue with a higher `priority`
//!   goes whenever it has work that may go;
//! * within a priority, start-time fair queuing (Goyal, Vin and Cheng) by
//!   the queues' weights, charged each dispatch's predicted cost: each
//!   queue's head has a start tag `S = max(v, F_prev)`; a dispatch of cost
//!   `c` from queue `q` sets `F = S + c / w_q` and the
//!   tenant's virtual time `v` to `S`; the smallest start tag goes first
//!   (ties: the lower queue).
//!
//! The tenant's own share against other tenants does not depend on how
//! many queues it has: the policy above charges the tenant for every
//! dispatch, whichever queue it came from.
//!
//! A queue whose head continues an ordered task whose previous subtask is
//! still in service is *blocked*: the tenant's other queues may go
//! meanwhile. Each queue holds at most its own cap, and all of a tenant's
//! queues together at most the tenant's cap.
//!
//! With one queue (every tenant that declares no flows) every call is the
//! plain FIFO it was before: no tag is read to choose.

use crate::channel::VirtualChannel;
use crate::tenant::FlowQueueSpec;

/// Why a push was refused; the item comes back with it.
#[derive(Debug)]
pub enum PushRefused<T> {
    /// The queue, or the tenant's queues together, hold their cap.
    Full {
        /// The item.
        item: T,
        /// The cap that refused it.
        cap: usize,
    },
    /// The tenant has no flow queue of that index.
    UnknownFlow(T),
}

/// Why a push would be refused ([`FlowQueues::refuses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The queue, or the tenant's queues together, hold their cap.
    Full {
        /// The cap that refuses it.
        cap: usize,
    },
    /// The tenant has no flow queue of that index.
    UnknownFlow,
}

/// One flow queue and its place in the tenant's order.
#[derive(Debug, Clone)]
struct FlowQueue<T> {
    queue: VirtualChannel<T>,
    weight: f64,
    priority: u8,
    /// Start tag of its head.
    start: f64,
    /// Finish tag of its last dispatch.
    finish: f64,
    /// Its head continues an ordered task whose previous subtask is in
    /// service.
    blocked: bool,
}

impl<T> FlowQueue<T> {
    fn new(spec: &FlowQueueSpec, tenant_cap: usize) -> Self {
        FlowQueue {
            queue: VirtualChannel::new(spec.cap_within(tenant_cap)),
            weight: spec.weight,
            priority: spec.priority,
            start: 0.0,
            finish: 0.0,
            blocked: false,
        }
    }

    #[inline]
    fn may_go(&self) -> bool {
        !self.blocked && !self.queue.is_empty()
    }
}

/// A tenant's flow queues on one engine, with the one whose head goes next
/// when the tenant's turn comes (see the module documentation).
#[derive(Debug, Clone)]
pub struct FlowQueues<T> {
    flows: Vec<FlowQueue<T>>,
    /// How many of `flows` the tenant declares now; those after them are
    /// kept only to drain what they hold (see [`FlowQueues::configure`]).
    declared: usize,
    /// The queue whose head is the tenant's head.
    current: usize,
    /// Items queued over every flow queue.
    len: usize,
    /// The most items all the queues hold together.
    cap: usize,
    /// The virtual time: the start tag of the last dispatch.
    virtual_time: f64,
}

impl<T> FlowQueues<T> {
    /// Queues for a tenant whose queues together hold at most `cap` items
    /// (>= 1): one per spec, or one default queue when `specs` is empty.
    pub fn new(cap: usize, specs: &[FlowQueueSpec]) -> Self {
        let cap = cap.max(1);
        let default = [FlowQueueSpec::default()];
        let specs = if specs.is_empty() { &default[..] } else { specs };
        FlowQueues {
            flows: specs.iter().map(|s| FlowQueue::new(s, cap)).collect(),
            declared: specs.len(),
            current: 0,
            len: 0,
            cap,
            virtual_time: 0.0,
        }
    }

    /// Number of flow queues (those declared, and any kept to drain).
    #[inline]
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Appends `item` to flow queue `flow`, or hands it back.
    #[inline]
    pub fn push(&mut self, flow: usize, item: T) -> Result<(), PushRefused<T>> {
        match self.refuses(flow) {
            Some(Refusal::UnknownFlow) => Err(PushRefused::UnknownFlow(item)),
            Some(Refusal::Full { cap }) => Err(PushRefused::Full { item, cap }),
            None => {
                self.push_admitted(flow, item);
                Ok(())
            }
        }
    }

    /// Why a push to flow queue `flow` would be refused now, if it would
    /// ([`FlowQueues::push`] without the item).
    #[inline]
    pub fn refuses(&self, flow: usize) -> Option<Refusal> {
        if flow >= self.declared {
            return Some(Refusal::UnknownFlow);
        }
        if self.len >= self.cap {
            return Some(Refusal::Full { cap: self.cap });
        }
        let q = &self.flows[flow].queue;
        if q.len() >= q.cap() {
            return Some(Refusal::Full { cap: q.cap() });
        }
        None
    }

    /// Appends `item` to flow queue `flow`, which [`FlowQueues::refuses`]
    /// just found takes it: the item is written once, into its place
    /// (a push that may hand it back builds it first, then copies it).
    /// Always inlined: called apart, the item came by reference and was
    /// copied with a call to `memcpy` (issue 34).
    #[inline(always)]
    pub(crate) fn push_admitted(&mut self, flow: usize, item: T) {
        debug_assert!(self.refuses(flow).is_none(), "only an admitted push");
        let f = &mut self.flows[flow];
        let was_empty = f.queue.is_empty();
        f.queue.push_unchecked(item);
        if was_empty {
            f.start = self.virtual_time.max(f.finish);
        }
        if self.len == 0 {
            self.current = flow;
        }
        self.len += 1;
    }

    /// Chooses the queue whose head goes next: the highest priority, then
    /// the smallest start tag, among queues whose head may go. Returns
    /// whether there is one (`false`: empty, or every head blocked).
    #[inline]
    pub fn select(&mut self) -> bool {
        if self.flows.len() == 1 {
            return self.flows[0].may_go();
        }
        let mut best: Option<usize> = None;
        for (i, f) in self.flows.iter().enumerate() {
            if !f.may_go() {
                continue;
            }
            let better = best.is_none_or(|b| {
                let b = &self.flows[b];
                f.priority > b.priority || (f.priority == b.priority && f.start < b.start)
            });
            if better {
                best = Some(i);
            }
        }
        if let Some(b) = best {
            self.current = b;
        }
        best.is_some()
    }

    /// The flow queue whose head is the tenant's head.
    #[inline]
    pub fn current(&self) -> usize {
        self.current
    }

    /// Makes `flow`, whose head may go, the current queue again (a choice
    /// made before, kept when the newer one may not go now).
    #[inline]
    pub fn reselect(&mut self, flow: usize) {
        debug_assert!(
            self.flows.get(flow).is_some_and(FlowQueue::may_go),
            "only a queue whose head may go is chosen"
        );
        self.current = flow;
    }

    /// Charges the current queue for a dispatch of predicted cost `cost`
    /// taken from its head.
    #[inline]
    pub fn charge(&mut self, cost: u64) {
        if self.flows.len() == 1 {
            return;
        }
        let f = &mut self.flows[self.current];
        self.virtual_time = f.start;
        f.finish = f.start + cost as f64 / f.weight;
        f.start = f.finish;
    }

    /// The current queue's head continues an ordered task whose previous
    /// subtask is now in service: it waits for [`FlowQueues::unblock`].
    #[inline]
    pub fn block_current(&mut self) {
        self.flows[self.current].blocked = true;
    }

    /// Flow queue `flow`'s ordered subtask completed: its head may go.
    #[inline]
    pub fn unblock(&mut self, flow: usize) {
        if let Some(f) = self.flows.get_mut(flow) {
            f.blocked = false;
        }
    }

    /// Whether some queue's head is blocked.
    #[cfg(test)]
    fn any_blocked(&self) -> bool {
        self.flows.iter().any(|f| f.blocked && !f.queue.is_empty())
    }

    /// Drops the current queue's head where it lies.
    #[inline]
    pub fn discard_head(&mut self) {
        let f = &mut self.flows[self.current];
        debug_assert!(!f.queue.is_empty(), "only a queued head is discarded");
        f.queue.discard_head();
        f.blocked = false;
        self.len -= 1;
        if self.len == 0 {
            // The end of the tenant's busy period (SFQ): idle queues start
            // afresh from the largest finish tag handed out.
            self.virtual_time = self
                .flows
                .iter()
                .map(|f| f.finish)
                .fold(self.virtual_time, f64::max);
        }
    }

    /// The current queue's head.
    #[inline]
    pub fn head(&self) -> Option<&T> {
        self.flows[self.current].queue.head()
    }

    /// The current queue's head, to update in place.
    #[inline]
    pub fn head_mut(&mut self) -> Option<&mut T> {
        self.flows[self.current].queue.head_mut()
    }

    /// Items queued over every flow queue.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most items the queues hold together.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Sets the tenant's cap and its queues' specs. Queues beyond `specs`
    /// that still hold items are kept, with their settings, until drained
    /// (nothing queued is lost), and take nothing new; items already
    /// queued beyond a new cap stay, only later pushes are refused.
    pub fn configure(&mut self, cap: usize, specs: &[FlowQueueSpec]) {
        self.cap = cap.max(1);
        let default = [FlowQueueSpec::default()];
        let specs = if specs.is_empty() { &default[..] } else { specs };
        self.declared = specs.len();
        while self.flows.len() > specs.len() && self.flows.last().is_some_and(|f| f.queue.is_empty()) {
            self.flows.pop();
        }
        for (i, spec) in specs.iter().enumerate() {
            match self.flows.get_mut(i) {
                Some(f) => {
                    f.weight = spec.weight;
                    f.priority = spec.priority;
                    f.queue.set_cap(spec.cap_within(self.cap));
                }
                None => self.flows.push(FlowQueue::new(spec, self.cap)),
            }
        }
        if self.current >= self.flows.len() {
            self.current = 0;
        }
    }

    /// Removes the items for which `which` says yes, oldest first per
    /// queue; the others keep their order.
    pub fn take_where(&mut self, mut which: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut taken = Vec::new();
        for f in &mut self.flows {
            taken.extend(f.queue.take_where(&mut which));
        }
        self.len -= taken.len();
        taken
    }

    /// Removes every queued item, each queue's oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.len = 0;
        self.flows.iter_mut().flat_map(|f| {
            f.blocked = false;
            f.queue.drain()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(weight: f64, priority: u8) -> FlowQueueSpec {
        FlowQueueSpec {
            weight,
            priority,
            queue_cap: None,
        }
    }

    /// Serves `n` unit-cost dispatches from backlogged queues and counts
    /// each queue's.
    fn serve(q: &mut FlowQueues<u32>, n: usize) -> Vec<usize> {
        let mut served = vec![0; q.flow_count()];
        for _ in 0..n {
            assert!(q.select());
            let f = q.current();
            served[f] += 1;
            q.charge(100);
            q.discard_head();
            q.push(f, 0).unwrap();
        }
        served
    }

    #[test]
    fn one_queue_is_a_fifo() {
        let mut q = FlowQueues::new(2, &[]);
        q.push(0, 1).unwrap();
        q.push(0, 2).unwrap();
        assert!(matches!(q.push(0, 3), Err(PushRefused::Full { item: 3, cap: 2 })));
        assert!(matches!(q.push(1, 3), Err(PushRefused::UnknownFlow(3))));
        assert!(q.select());
        assert_eq!(q.head(), Some(&1));
        q.discard_head();
        assert_eq!(q.head(), Some(&2));
        assert_eq!(q.drain().collect::<Vec<_>>(), vec![2]);
        assert!(q.is_empty());
    }

    /// Backlogged queues of one priority share by weight exactly (SFQ's
    /// bound: within one maximum charge of the ideal per queue).
    #[test]
    fn backlogged_queues_share_by_weight() {
        let mut q = FlowQueues::new(1024, &[spec(1.0, 0), spec(3.0, 0)]);
        q.push(0, 0).unwrap();
        q.push(1, 0).unwrap();
        let served = serve(&mut q, 4000);
        assert!((served[0] as i64 - 1000).abs() <= 1, "{served:?}");
        assert!((served[1] as i64 - 3000).abs() <= 1, "{served:?}");
    }

    /// A higher priority goes whenever it has work; a blocked head lets the
    /// others go.
    #[test]
    fn priority_first_and_a_blocked_queue_steps_aside() {
        let mut q = FlowQueues::new(16, &[spec(1.0, 0), spec(1.0, 1)]);
        q.push(0, 10).unwrap();
        q.push(1, 20).unwrap();
        q.push(1, 21).unwrap();
        assert!(q.select());
        assert_eq!((q.current(), q.head()), (1, Some(&20)));
        q.block_current();
        assert!(q.select());
        assert_eq!((q.current(), q.head()), (0, Some(&10)));
        q.charge(5);
        q.discard_head();
        assert!(!q.select(), "only a blocked head is left");
        assert!(q.any_blocked());
        q.unblock(1);
        assert!(q.select());
        assert_eq!(q.head(), Some(&20));
    }

    /// A queue's own cap refuses before the tenant's.
    #[test]
    fn a_queue_cap_and_the_tenants_cap_both_hold() {
        let small = FlowQueueSpec {
            queue_cap: Some(1),
            ..spec(1.0, 0)
        };
        let mut q = FlowQueues::new(2, &[small, spec(1.0, 0)]);
        q.push(0, 1).unwrap();
        assert!(matches!(q.push(0, 2), Err(PushRefused::Full { cap: 1, .. })));
        q.push(1, 3).unwrap();
        assert!(matches!(q.push(1, 4), Err(PushRefused::Full { cap: 2, .. })));
        assert_eq!(q.len(), 2);
    }

    /// Reconfiguring keeps what is queued, in order.
    #[test]
    fn configure_keeps_queued_items() {
        let mut q = FlowQueues::new(8, &[spec(1.0, 0), spec(1.0, 0)]);
        q.push(1, 7).unwrap();
        q.configure(8, &[]);
        assert_eq!(q.flow_count(), 2, "a queue holding items stays");
        assert!(
            matches!(q.push(1, 8), Err(PushRefused::UnknownFlow(8))),
            "and takes nothing new"
        );
        assert!(q.select());
        assert_eq!(q.head(), Some(&7));
        q.charge(1);
        q.discard_head();
        q.configure(8, &[]);
        assert_eq!(q.flow_count(), 1);
    }
}
