//! How a run says how far it is: the generator calls a [`Progress`]; the
//! caller decides what to show (a bar on a terminal, nothing in tests).

use crate::Length;
use std::time::{Duration, Instant};

pub use isola_model::progress::{NoProgress, Progress};

/// A load run's progress: the warm-up, then what was measured (items for
/// `--count`, time for `--duration`), told ten times a second at most.
pub(crate) struct RunProgress<'a> {
    to: &'a mut dyn Progress,
    at: Instant,
}

impl<'a> RunProgress<'a> {
    /// Progress told to `to` of a run that started at `start`.
    pub(crate) fn new(to: &'a mut dyn Progress, start: Instant) -> Self {
        RunProgress { to, at: start }
    }

    /// Tells `measured` items (or the time since `measure_from`, as
    /// `length` says), labelled by `label`.
    pub(crate) fn show(
        &mut self,
        length: Length,
        measure_from: Instant,
        measured: u64,
        label: impl FnOnce() -> String,
    ) {
        let now = Instant::now();
        if now.duration_since(self.at) < Duration::from_millis(100) {
            return;
        }
        self.at = now;
        if now < measure_from {
            self.to.update(0.0, "warm-up");
            return;
        }
        let fraction = match length {
            Length::Count(n) => measured as f64 / n.max(1) as f64,
            Length::Duration(d) => now.duration_since(measure_from).as_secs_f64() / d.as_secs_f64().max(1e-9),
        };
        self.to.update(fraction.min(1.0), &label());
    }
}
