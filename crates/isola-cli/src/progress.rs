//! A progress bar for long runs: drawn on stderr, only on a terminal, and
//! only once the work has taken two seconds (short runs stay quiet).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Progress of a run of `total` steps.
pub struct Bar {
    bar: ProgressBar,
    total: u64,
    start: Instant,
    terminal: bool,
    shown: bool,
}

impl Bar {
    /// A bar of `total` steps, hidden until the run has taken two seconds.
    pub fn new(total: u64) -> Self {
        let total = total.max(1);
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("{msg:>24} [{bar:40}] {percent:>3}% eta {eta}")
                .expect("the template is valid")
                .progress_chars("=> "),
        );
        Bar {
            bar,
            total,
            start: Instant::now(),
            terminal: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Moves the bar to `position` (of `total`) with `message` beside it.
    pub fn update(&mut self, position: u64, message: impl Into<String>) {
        if self.terminal && !self.shown && self.start.elapsed() > Duration::from_secs(2) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_message(message.into());
        self.bar.set_position(position);
    }
}

/// The libraries' progress reports, as fractions of the bar.
impl isola_model::progress::Progress for Bar {
    fn update(&mut self, fraction: f64, what: &str) {
        let position = (fraction.clamp(0.0, 1.0) * self.total as f64) as u64;
        Bar::update(self, position, what);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
