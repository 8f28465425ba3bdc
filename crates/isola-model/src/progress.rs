//! How long runs say how far they are, in every library that runs them
//! (an experiment, a load generator, a simulation): the library calls a
//! [`Progress`]; the caller decides what to show (a bar on a terminal,
//! nothing in tests).

/// Receives progress reports from a long run.
pub trait Progress {
    /// `fraction` (0 to 1) of the work is done; `what` is being worked on.
    fn update(&mut self, fraction: f64, what: &str);
}

/// Progress that goes nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn update(&mut self, _fraction: f64, _what: &str) {}
}
