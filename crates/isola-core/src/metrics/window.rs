//! Service per tenant per time window, for time series of shares and of
//! Jain's index (OSMOSIS Figures 9 and 12), by weight and against each
//! tenant's fair allocation under its demand: in fixed windows
//! ([`WindowedService`], a run's series) or over a sliding one
//! ([`SlidingService`], a daemon's last seconds). Either way a window's
//! index by weight is [`jain_of_active`]'s.

use super::fairness::{jain_normalized, jain_of_demand, FairnessError};
use crate::units::Nanos;
use std::collections::VecDeque;

/// Jain's index, by weight, of the service of the tenants active in a
/// window, `(service, weight)` each: fewer than two are fair (1, nobody to
/// be unfair to); else [`jain_normalized`] of the service by the weights
/// (entitlement among the active), an error for a service not finite and
/// >= 0 or a weight not positive.
pub fn jain_of_active(active: &[(f64, f64)]) -> Result<f64, FairnessError> {
    if active.len() < 2 {
        return Ok(1.0);
    }
    let (served, weights): (Vec<f64>, Vec<f64>) = active.iter().copied().unzip();
    jain_normalized(&served, &weights)
}

/// The service each of a fixed set of counters got over the last `ticks`
/// ticks, from their cumulative totals read once a tick (a daemon's busy
/// time per tenant and engine): a sliding window, where
/// [`WindowedService`] has fixed ones. Holds `ticks + 1` snapshots at most.
#[derive(Debug, Clone)]
pub struct SlidingService {
    ticks: usize,
    /// The totals of the last ticks, oldest first.
    snapshots: VecDeque<Vec<f64>>,
}

impl SlidingService {
    /// A window of `ticks` ticks (at least 1).
    pub fn new(ticks: usize) -> Self {
        SlidingService {
            ticks: ticks.max(1),
            snapshots: VecDeque::new(),
        }
    }

    /// Takes this tick's `totals` and returns each counter's service over
    /// the window: its total now less its total at the oldest tick kept,
    /// `ticks` ticks ago once there are that many (at the first tick, its
    /// total), never negative.
    pub fn tick(&mut self, totals: Vec<f64>) -> Vec<f64> {
        while self.snapshots.len() > self.ticks {
            self.snapshots.pop_front();
        }
        let oldest = self.snapshots.front();
        let served = totals
            .iter()
            .enumerate()
            .map(|(i, now)| (now - oldest.and_then(|o| o.get(i)).copied().unwrap_or(0.0)).max(0.0))
            .collect();
        self.snapshots.push_back(totals);
        served
    }
}

/// Which window of `window` ns holds a time (`t / window`), remembering the
/// window last asked about: a run's times come mostly in order, so most
/// lookups skip the 64-bit division (three of them per simulated task cost
/// ~7% of the M/M/1 run, issue 17).
#[derive(Debug, Clone, Copy)]
pub struct WindowIndex {
    window: Nanos,
    /// The window last asked about: `[start, end)` is window `index`.
    start: Nanos,
    end: Nanos,
    index: u64,
}

impl WindowIndex {
    /// Windows of `window` ns (at least 1).
    pub fn new(window: Nanos) -> Self {
        let window = window.max(1);
        WindowIndex {
            window,
            start: 0,
            end: window,
            index: 0,
        }
    }

    /// The window length.
    pub fn window(&self) -> Nanos {
        self.window
    }

    /// The index of the window holding `t`: `t / window`.
    #[inline]
    pub fn of(&mut self, t: Nanos) -> u64 {
        if !(self.start..self.end).contains(&t) {
            self.index = t / self.window;
            self.start = self.index * self.window;
            self.end = self.start.saturating_add(self.window);
        }
        debug_assert_eq!(self.index, t / self.window);
        self.index
    }
}

/// Engine time (or any amount) received by each tenant in fixed windows.
#[derive(Debug, Clone)]
pub struct WindowedService {
    /// The window length, and the window of an interval's ends.
    index: WindowIndex,
    tenants: usize,
    /// service[w][t]
    service: Vec<Vec<f64>>,
    /// active[w][t]: the tenant wanted service in window w.
    active: Vec<Vec<bool>>,
    /// backlog[w][t]: work the tenant had waiting (not yet begun) when
    /// window w ended, in the service unit.
    backlog: Vec<Vec<f64>>,
}

impl WindowedService {
    /// Windows of `window` ns (at least 1) for `tenants` tenants.
    pub fn new(window: Nanos, tenants: usize) -> Self {
        WindowedService {
            index: WindowIndex::new(window),
            tenants,
            service: Vec::new(),
            active: Vec::new(),
            backlog: Vec::new(),
        }
    }

    fn grow(&mut self, w: usize) {
        while self.service.len() <= w {
            self.service.push(vec![0.0; self.tenants]);
            self.active.push(vec![false; self.tenants]);
        }
    }

    /// Spreads the interval `[start, end)` of service over the windows it
    /// crosses (one slot busy for that time); marks the tenant active there.
    pub fn add_service(&mut self, tenant: usize, start: Nanos, end: Nanos) {
        if tenant >= self.tenants {
            return;
        }
        self.for_each_window(start, end, |s, w, overlap| {
            s.service[w][tenant] += overlap as f64;
            s.active[w][tenant] = true;
        });
    }

    /// Spreads `amount` of service evenly over `[start, end)` (work served
    /// in pieces among other work, known only as a total over the
    /// interval); marks the tenant active there. An empty interval puts it
    /// all in the window of `start`.
    pub fn add_spread(&mut self, tenant: usize, amount: f64, start: Nanos, end: Nanos) {
        if tenant >= self.tenants {
            return;
        }
        if end <= start {
            let w = self.index.of(start) as usize;
            self.grow(w);
            self.service[w][tenant] += amount;
            self.active[w][tenant] = true;
            return;
        }
        let length = (end - start) as f64;
        self.for_each_window(start, end, |s, w, overlap| {
            s.service[w][tenant] += amount * overlap as f64 / length;
            s.active[w][tenant] = true;
        });
    }

    /// The service `tenant` got during `[from, to)`, each window's service
    /// taken as spread evenly over the window (so a window `[from, to)`
    /// covers part of counts that part).
    pub fn service_between(&self, tenant: usize, from: Nanos, to: Nanos) -> f64 {
        if tenant >= self.tenants || to <= from || self.service.is_empty() {
            return 0.0;
        }
        let window = self.window();
        let first = (from / window) as usize;
        let last = (((to - 1) / window) as usize).min(self.service.len() - 1);
        (first..=last)
            .map(|w| {
                let lo = from.max(w as Nanos * window);
                let hi = to.min((w as Nanos + 1).saturating_mul(window));
                self.service[w][tenant] * hi.saturating_sub(lo) as f64 / window as f64
            })
            .sum()
    }

    /// Marks the tenant as wanting service during `[start, end)` (queued work).
    pub fn mark_active(&mut self, tenant: usize, start: Nanos, end: Nanos) {
        if tenant >= self.tenants {
            return;
        }
        self.for_each_window(start, end, |s, w, _| s.active[w][tenant] = true);
    }

    /// The service of every table in `parts` added up, window by window (a
    /// tenant is active where any part has it active); backlogs are not
    /// carried. All parts must share the window length and tenant count; an
    /// empty list gives an empty table of 1 ns windows.
    pub fn merged(parts: &[WindowedService]) -> WindowedService {
        let Some(first) = parts.first() else {
            return WindowedService::new(1, 0);
        };
        let mut out = WindowedService::new(first.window(), first.tenants);
        for part in parts {
            if part.windows() > 0 {
                out.grow(part.windows() - 1);
            }
            for (w, (service, active)) in part.service.iter().zip(&part.active).enumerate() {
                for t in 0..out.tenants.min(part.tenants) {
                    out.service[w][t] += service[t];
                    out.active[w][t] |= active[t];
                }
            }
        }
        out
    }

    /// Records `backlog` (each tenant's work waiting to be served, in the
    /// service unit) as its value at the end of every window that ended by
    /// `now` and has none yet. A driver calls it before anything at `now` changes
    /// the backlog, so the value is the one each window ended with.
    pub fn record_backlog(&mut self, now: Nanos, backlog: &[Nanos]) {
        let ended = (now / self.window()) as usize;
        while self.backlog.len() < ended {
            self.backlog.push(backlog.iter().map(|&b| b as f64).collect());
        }
    }

    /// Calls `f` for each window `[start, end)` overlaps; tenants outside
    /// the table are ignored.
    fn for_each_window(&mut self, start: Nanos, end: Nanos, mut f: impl FnMut(&mut Self, usize, Nanos)) {
        if end <= start {
            return;
        }
        let window = self.window();
        let first = self.index.of(start) as usize;
        let last = self.index.of(end - 1) as usize;
        self.grow(last);
        for w in first..=last {
            let lo = start.max(w as Nanos * window);
            let hi = end.min((w as Nanos + 1).saturating_mul(window));
            f(self, w, hi - lo);
        }
    }

    /// Number of windows seen.
    pub fn windows(&self) -> usize {
        self.service.len()
    }

    /// Window length.
    pub fn window(&self) -> Nanos {
        self.index.window()
    }

    /// Each tenant's share of the service given in window `w` (0 if none).
    pub fn shares(&self, w: usize) -> Vec<f64> {
        let Some(s) = self.service.get(w) else {
            return vec![0.0; self.tenants];
        };
        let total: f64 = s.iter().sum();
        s.iter()
            .map(|x| if total > 0.0 { x / total } else { 0.0 })
            .collect()
    }

    /// Jain's index per window over the tenants active in it, on service
    /// normalised by weight (entitlement among the active). Windows with fewer
    /// than two active tenants have index 1.
    pub fn jain_series(&self, weights: &[f64]) -> Vec<f64> {
        (0..self.windows())
            .map(|w| {
                let active: Vec<(f64, f64)> = (0..self.tenants)
                    .filter(|&t| self.active[w][t])
                    .map(|t| (self.service[w][t], weights.get(t).copied().unwrap_or(1.0)))
                    .collect();
                jain_of_active(&active).unwrap_or(1.0)
            })
            .collect()
    }

    /// Jain's index per window against each tenant's weighted max-min fair
    /// allocation of the window's capacity ([`jain_of_demand`]): `slots`
    /// busy for the part of the window before `end` (the run's end). A
    /// tenant's demand is the service it got plus the work it still had
    /// waiting when the window ended ([`WindowedService::record_backlog`];
    /// none recorded counts as none). A tenant that got all it asked for is
    /// treated fairly however small its share. (Inputs are finite and
    /// weights positive by construction; were the index undefined, the
    /// window would count as fair.)
    pub fn jain_of_demand_series(&self, weights: &[f64], slots: u32, end: Nanos) -> Vec<f64> {
        let weights: Vec<f64> = (0..self.tenants)
            .map(|t| weights.get(t).copied().unwrap_or(1.0))
            .collect();
        let window = self.window();
        (0..self.windows())
            .map(|w| {
                let start = w as Nanos * window;
                let length = end.min(start.saturating_add(window)).saturating_sub(start);
                let capacity = slots as f64 * length as f64;
                let served = &self.service[w];
                let demand: Vec<f64> = (0..self.tenants)
                    .map(|t| served[t] + self.backlog.get(w).and_then(|b| b.get(t)).copied().unwrap_or(0.0))
                    .collect();
                jain_of_demand(served, &demand, &weights, capacity).unwrap_or(1.0)
            })
            .collect()
    }

    /// Total service per tenant over all windows.
    pub fn totals(&self) -> Vec<f64> {
        let mut t = vec![0.0; self.tenants];
        for s in &self.service {
            for (acc, x) in t.iter_mut().zip(s) {
                *acc += x;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The remembered window is always the division's, whatever order
        /// the times come in (forward, back, far, at the edges).
        #[test]
        fn window_index_is_the_division(
            window in prop_oneof![Just(0u64), 1u64..5, 1u64..1_000_000, Just(u64::MAX)],
            times in prop::collection::vec(
                prop_oneof![0u64..10_000, any::<u64>(), Just(u64::MAX), Just(0)],
                1..200,
            ),
        ) {
            let mut index = WindowIndex::new(window);
            for t in times {
                prop_assert_eq!(index.of(t), t / window.max(1));
            }
        }
    }

    #[test]
    fn service_is_split_across_windows_and_jain_per_window() {
        let mut w = WindowedService::new(100, 2);
        w.add_service(0, 50, 250); // 50 in w0, 100 in w1, 50 in w2
        w.add_service(1, 0, 100); // 100 in w0
        w.mark_active(1, 100, 200); // wanted service in w1, got none
        assert_eq!(w.windows(), 3);
        assert_eq!(w.totals(), vec![200.0, 100.0]);
        assert_eq!(w.shares(0), vec![50.0 / 150.0, 100.0 / 150.0]);
        let j = w.jain_series(&[1.0, 1.0]);
        // w0: (50, 100) -> 150^2 / (2 x 12500) = 0.9; w1: (100, 0) -> 0.5; w2: one active -> 1.
        assert!((j[0] - 0.9).abs() < 1e-12);
        assert!((j[1] - 0.5).abs() < 1e-12);
        assert_eq!(j[2], 1.0);
    }

    #[test]
    fn a_sliding_window_is_the_totals_less_those_ticks_ago() {
        let mut s = SlidingService::new(2);
        // The first tick: everything so far.
        assert_eq!(s.tick(vec![3.0, 0.0]), vec![3.0, 0.0]);
        // Then since the oldest tick kept: the first, until there are
        // two ticks before it.
        assert_eq!(s.tick(vec![5.0, 1.0]), vec![2.0, 1.0]);
        assert_eq!(s.tick(vec![6.0, 1.0]), vec![3.0, 1.0]);
        assert_eq!(s.tick(vec![6.0, 4.0]), vec![1.0, 3.0]);
        assert_eq!(s.tick(vec![6.0, 4.0]), vec![0.0, 3.0]);
        // A counter that went back (reset) counts as none, never less.
        assert_eq!(s.tick(vec![0.0, 4.0]), vec![0.0, 0.0]);
    }

    #[test]
    fn jain_of_the_active_is_fair_below_two_and_by_weight_above() {
        assert_eq!(jain_of_active(&[]), Ok(1.0));
        assert_eq!(jain_of_active(&[(0.0, 1.0)]), Ok(1.0));
        // Service in proportion to the weights (2:1): fair.
        assert_eq!(jain_of_active(&[(2.0, 2.0), (1.0, 1.0)]), Ok(1.0));
        // One served, one waiting unserved: 1/2.
        assert_eq!(jain_of_active(&[(5.0, 1.0), (0.0, 1.0)]), Ok(0.5));
        assert!(jain_of_active(&[(1.0, 0.0), (1.0, 1.0)]).is_err());
    }

    #[test]
    fn spread_service_and_service_between_pro_rate_by_overlap() {
        let mut w = WindowedService::new(100, 2);
        // 60 of service spread over [50, 350): 10 in w0, 20 in w1 and w2, 10 in w3.
        w.add_spread(0, 60.0, 50, 350);
        // An empty interval: all in the window of its start.
        w.add_spread(1, 7.0, 120, 120);
        w.add_spread(5, 1.0, 0, 10); // unknown tenant: ignored
        assert_eq!(w.windows(), 4);
        assert_eq!(w.totals(), vec![60.0, 7.0]);
        assert_eq!(w.shares(0), vec![1.0, 0.0]);
        // [0, 400) is everything; [150, 250) is half of w1 and half of w2.
        assert_eq!(w.service_between(0, 0, 400), 60.0);
        assert_eq!(w.service_between(0, 150, 250), 20.0);
        assert_eq!(w.service_between(1, 100, 150), 3.5);
        // Past the last window, an empty interval, an unknown tenant: none.
        assert_eq!(w.service_between(0, 400, 900), 0.0);
        assert_eq!(w.service_between(0, 200, 200), 0.0);
        assert_eq!(w.service_between(9, 0, 400), 0.0);
    }

    #[test]
    fn merged_tables_add_service_and_activity() {
        let mut a = WindowedService::new(100, 2);
        a.add_service(0, 0, 50);
        let mut b = WindowedService::new(100, 2);
        b.add_service(0, 0, 30);
        b.add_service(1, 150, 200);
        let m = WindowedService::merged(&[a, b]);
        assert_eq!(m.windows(), 2);
        assert_eq!(m.totals(), vec![80.0, 50.0]);
        assert_eq!(m.shares(1), vec![0.0, 1.0]);
        // Tenant 1 is active only in window 1: window 0 has one active tenant.
        assert_eq!(m.jain_series(&[1.0, 1.0]), vec![1.0, 1.0]);
        assert_eq!(WindowedService::merged(&[]).windows(), 0);
    }

    #[test]
    fn jain_of_demand_counts_what_was_left_waiting() {
        let mut w = WindowedService::new(100, 2);
        // w0: tenant 0 served 90, tenant 1 served 10 and nothing left: fair.
        w.add_service(0, 0, 90);
        w.add_service(1, 90, 100);
        // w1: the same service, but tenant 1 still had 200 waiting: unfair.
        w.record_backlog(100, &[0, 0]);
        w.add_service(0, 100, 190);
        w.add_service(1, 190, 200);
        w.record_backlog(200, &[0, 200]);
        let j = w.jain_of_demand_series(&[1.0, 1.0], 1, 200);
        assert_eq!(j[0], 1.0);
        // Fair split of 100 is 50/50: x = (1.8, 0.2) -> 4 / (2 x 3.28).
        assert!((j[1] - 4.0 / 6.56).abs() < 1e-12, "{}", j[1]);
        // By weight alone both windows look the same.
        let by_weight = w.jain_series(&[1.0, 1.0]);
        assert_eq!(by_weight[0], by_weight[1]);
        // With two slots, half of each window was left idle: in w1 tenant 1
        // waited for it, in w0 nobody did.
        let two = w.jain_of_demand_series(&[1.0, 1.0], 2, 200);
        assert_eq!(two[0], 1.0);
        assert!(two[1] < j[1], "{} vs {}", two[1], j[1]);
    }
}
