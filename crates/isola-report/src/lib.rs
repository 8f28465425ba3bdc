//! # isola-report
//!
//! Renders results for people: one self-contained HTML page (inline SVG
//! charts and stylesheet, nothing fetched from the network) with a summary
//! table, sections of tables and figures, and the same data as JSON; and
//! SVG charts on their own (lines, CDFs, grouped bars).
//!
//! What it must not do: know where the numbers come from. It has no notion
//! of simulators, runtimes, policies or papers, runs nothing and measures
//! nothing: it draws the [`Report`] and [`Chart`]s it is given, and writes
//! numbers as people read them ([`text`]).

#![warn(missing_docs)]

pub mod chart;
mod model;
mod page;
pub mod text;

pub use chart::{Axis, BarSeries, Chart, Format, Marks, Reference, Scale, Series, Ticks};
pub use model::{Figure, Generated, Report, Section, SummaryRow, Table};
pub use page::{render_html, write_report};
