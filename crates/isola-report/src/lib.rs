//! # isola-report
//!
//! Renders results for people: one self-contained HTML page (inline SVG
//! charts and stylesheet, nothing fetched from the network) with a summary
//! table, sections of tables and figures, and the same data as JSON; and
//! SVG charts on their own (lines, CDFs, grouped bars).
//!
//! What it must not do: know where the numbers come from. It depends on no
//! simulator, runtime or experiment, runs nothing and measures nothing: it
//! draws the [`Report`] and [`Chart`]s it is given (a section's claims and
//! best policy, a figure's paper caption are text to it), and writes
//! numbers as people read them ([`text`]).

#![warn(missing_docs)]

pub mod chart;
mod model;
mod page;
pub mod text;

pub use chart::{Axis, BarSeries, Chart, Format, Marks, Reference, Scale, Series, Ticks};
pub use model::{Figure, Generated, Report, Section, SummaryRow, Table};
pub use page::{render_html, write_report};
