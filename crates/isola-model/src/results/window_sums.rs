//! One engine's service in the current metrics window, summed per tenant
//! as integers and added to its per-window table ([`WindowedService`]) once
//! per window instead of once per piece of engine time (issue 34: the
//! table's per-call work, two window lookups, a growth check and four
//! bounds-checked writes, was ~4% of the M/M/1 simulation).
//!
//! The table is the same to the bit: every amount it is given here is a
//! whole number of nanoseconds, and a sum of whole numbers below 2^53 is
//! exact in `f64` in any order and any grouping. So sums are kept only
//! while the tenant's engine time on the engine (which bounds every cell
//! of its column) is below 2^53, and never once the engine got time spread
//! over an interval ([`WindowSums::stop_summing`]), whose fractional
//! amounts make the order of additions matter.

use isola_core::metrics::{WindowIndex, WindowedService};
use isola_core::Nanos;

/// Below this, every sum of whole nanoseconds is exact in an `f64`.
const EXACT_BELOW: u64 = 1 << 53;

/// Engine time per tenant in one window, not yet in the table (see the
/// module documentation).
#[derive(Debug, Clone)]
pub(super) struct WindowSums {
    /// The table's window length, and the window of a time.
    index: WindowIndex,
    /// The window being summed, `[start, end)` (empty before the first).
    start: Nanos,
    end: Nanos,
    /// Per tenant: its service in the window.
    sums: Vec<u64>,
    /// The tenants with a sum above 0, each once.
    touched: Vec<usize>,
    /// Whether sums are kept (see [`WindowSums::stop_summing`]).
    summing: bool,
}

impl WindowSums {
    /// Sums for `tenants` tenants in windows of `window` ns.
    pub(super) fn new(window: Nanos, tenants: usize) -> Self {
        WindowSums {
            index: WindowIndex::new(window),
            start: 0,
            end: 0,
            sums: vec![0; tenants],
            touched: Vec::new(),
            summing: true,
        }
    }

    /// `tenant` (one of `table`'s) had one slot from `start` to `end`;
    /// `busy` is its engine time on this engine with this piece: what
    /// [`WindowedService::add_service`] would record, recorded in the sum
    /// when the piece lies in the window being summed.
    #[inline]
    pub(super) fn add(
        &mut self,
        table: &mut WindowedService,
        tenant: usize,
        start: Nanos,
        end: Nanos,
        busy: u64,
    ) {
        if start >= self.start && end <= self.end && end > start && busy < EXACT_BELOW && self.summing {
            let sum = &mut self.sums[tenant];
            if *sum == 0 {
                self.touched.push(tenant);
            }
            *sum += end - start;
        } else {
            self.add_outside(table, tenant, start, end, busy);
        }
    }

    /// [`WindowSums::add`] of a piece outside the window being summed:
    /// the sums go into the table, and the piece starts the next window's
    /// sums when it lies in one window, else goes into the table as it is.
    #[inline(never)]
    fn add_outside(
        &mut self,
        table: &mut WindowedService,
        tenant: usize,
        start: Nanos,
        end: Nanos,
        busy: u64,
    ) {
        if end <= start {
            // Nothing served: the table ignores it too.
            return;
        }
        self.flush(table);
        let w = self.index.of(start);
        if self.summing && busy < EXACT_BELOW && self.index.of(end - 1) == w {
            self.start = w * self.index.window();
            self.end = self.start.saturating_add(self.index.window());
            self.sums[tenant] = end - start;
            self.touched.push(tenant);
        } else {
            table.add_service(tenant, start, end);
        }
    }

    /// Adds the window's sums to `table` and starts them afresh.
    pub(super) fn flush(&mut self, table: &mut WindowedService) {
        for &t in &self.touched {
            // An empty interval puts the amount in the window of its start.
            table.add_spread(t, self.sums[t] as f64, self.start, self.start);
            self.sums[t] = 0;
        }
        self.touched.clear();
    }

    /// Adds the sums to `table` and keeps none from now on: the table is
    /// about to hold a fraction (engine time spread over an interval).
    pub(super) fn stop_summing(&mut self, table: &mut WindowedService) {
        self.flush(table);
        self.summing = false;
    }

    /// `table` with the sums added, for reading it before the run's end
    /// (borrowed as it is when there are none).
    pub(super) fn with_sums<'t>(&self, table: &'t WindowedService) -> std::borrow::Cow<'t, WindowedService> {
        if self.touched.is_empty() {
            return std::borrow::Cow::Borrowed(table);
        }
        let mut copy = table.clone();
        self.clone().flush(&mut copy);
        std::borrow::Cow::Owned(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A piece of engine time: tenant, start, length; or (`None`) time
    /// spread over an interval.
    type Piece = (usize, Nanos, Nanos, Option<f64>);

    /// The table's cells (service and activity per window and tenant) and
    /// backlogs, as `Debug` prints them (each `f64` exactly), without the
    /// window lookup's cache, which depends on the order of lookups.
    fn cells(table: &WindowedService) -> String {
        let text = format!("{table:?}");
        let from = text
            .find("index: WindowIndex {")
            .expect("the table's window index");
        let to = from + text[from..].find("}, ").expect("its end") + 3;
        format!("{}{}", &text[..from], &text[to..])
    }

    fn pieces() -> impl Strategy<Value = Vec<Piece>> {
        let piece = (
            0usize..3,
            0u64..2_000,
            prop_oneof![Just(0u64), 0u64..50, 0u64..400],
            prop_oneof![8 => Just(None), 1 => (0.0f64..300.0).prop_map(Some)],
        );
        prop::collection::vec(piece, 0..300)
    }

    proptest! {
        /// Against the table fed piece by piece (the definition): the same
        /// table to the bit (`Debug` prints each `f64` exactly), whatever
        /// the pieces' order, overlaps, crossings of windows, empty
        /// pieces, and spread time among them.
        #[test]
        fn the_table_is_the_one_fed_piece_by_piece(pieces in pieces(), window in 1u64..300) {
            let mut reference = WindowedService::new(window, 3);
            let mut table = WindowedService::new(window, 3);
            let mut sums = WindowSums::new(window, 3);
            let mut busy = [0u64; 3];
            for (tenant, start, length, spread) in pieces {
                match spread {
                    None => {
                        busy[tenant] += length;
                        reference.add_service(tenant, start, start + length);
                        sums.add(&mut table, tenant, start, start + length, busy[tenant]);
                    }
                    Some(amount) => {
                        reference.add_spread(tenant, amount, start, start + length);
                        sums.stop_summing(&mut table);
                        table.add_spread(tenant, amount, start, start + length);
                    }
                }
                let mid_run = sums.with_sums(&table);
                prop_assert_eq!(cells(mid_run.as_ref()), cells(&reference));
            }
            sums.flush(&mut table);
            prop_assert_eq!(cells(&table), cells(&reference));
        }
    }

    #[test]
    fn sums_only_below_two_to_the_53() {
        let mut table = WindowedService::new(100, 1);
        let mut sums = WindowSums::new(100, 1);
        sums.add(&mut table, 0, 0, 10, 10);
        assert_eq!(sums.touched, vec![0]);
        // The tenant's time on the engine reached 2^53: into the table.
        sums.add(&mut table, 0, 10, 20, EXACT_BELOW);
        assert!(sums.touched.is_empty());
        assert_eq!(table.service_between(0, 0, 100), 20.0);
    }
}
