//! Which of a chart's items are drawn when it has too many to read: a line
//! chart's series, a bar chart's categories. The preferred ones go first
//! (a report names the baselines, the paper's policy and the best), then
//! the rest in order, up to a cap; what is left out is listed with a
//! summary value so that nothing is lost (the page puts it in a table
//! under the chart).

use super::{Chart, Marks};

/// At most this many series are drawn on a line chart.
pub const MAX_LINES: usize = 8;
/// At most this many categories are drawn on a bar chart.
pub const MAX_CATEGORIES: usize = 12;

/// An item a chart leaves out, with what it would have shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Omitted {
    /// The series' or category's name.
    pub name: String,
    /// Its values in words (a line's last point; a category's bars).
    pub summary: String,
}

/// The indices of `names` to draw, at most `cap`: those named in
/// `preferred` first (in that order; a preferred name also picks the
/// names that extend it, `astraea` picking `astraea@w16`), then the others
/// in order. In drawing order (the original order of the kept ones).
pub fn keep(names: &[&str], preferred: &[String], cap: usize) -> Vec<usize> {
    if names.len() <= cap {
        return (0..names.len()).collect();
    }
    let extends = |name: &str, p: &str| {
        name == p
            || name
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with(['@', '/', '+', ' ']))
    };
    let mut kept: Vec<usize> = Vec::with_capacity(cap);
    for p in preferred {
        for (i, n) in names.iter().enumerate() {
            if kept.len() < cap && extends(n, p) && !kept.contains(&i) {
                kept.push(i);
            }
        }
    }
    for i in 0..names.len() {
        if kept.len() >= cap {
            break;
        }
        if !kept.contains(&i) {
            kept.push(i);
        }
    }
    kept.sort_unstable();
    debug_assert!(kept.len() == cap, "the cap is filled when there are more items");
    kept
}

impl Chart {
    /// The same chart naming the items to keep first when it has too many
    /// to draw (see [`keep`]).
    pub fn prefer(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.preferred = names.into_iter().map(Into::into).collect();
        self
    }

    /// The chart as drawn: its items cut to the cap, preferred first.
    pub fn shown(&self) -> Chart {
        let mut c = self.clone();
        match &mut c.marks {
            Marks::Lines { series } => {
                let names: Vec<&str> = self.series_names();
                let kept = keep(&names, &self.preferred, MAX_LINES);
                *series = kept.iter().map(|&i| series[i].clone()).collect();
            }
            Marks::Bars { categories, series } => {
                let names: Vec<&str> = categories.iter().map(String::as_str).collect();
                let kept = keep(&names, &self.preferred, MAX_CATEGORIES);
                let new_categories = kept.iter().map(|&i| categories[i].clone()).collect();
                for s in series.iter_mut() {
                    s.values = kept
                        .iter()
                        .map(|&i| s.values.get(i).copied().unwrap_or(f64::NAN))
                        .collect();
                }
                *categories = new_categories;
            }
        }
        c
    }

    /// What [`Chart::shown`] leaves out, each with its values in words.
    pub fn omitted(&self) -> Vec<Omitted> {
        match &self.marks {
            Marks::Lines { series } => {
                let names = self.series_names();
                let kept = keep(&names, &self.preferred, MAX_LINES);
                series
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !kept.contains(i))
                    .map(|(_, s)| Omitted {
                        name: s.name.clone(),
                        summary: s.points.last().map_or("no points".into(), |&(x, y)| {
                            format!(
                                "{} {} at {} {}",
                                self.y.label,
                                self.y.format.apply(y),
                                self.x.label,
                                self.x.format.apply(x)
                            )
                        }),
                    })
                    .collect()
            }
            Marks::Bars { categories, series } => {
                let names: Vec<&str> = categories.iter().map(String::as_str).collect();
                let kept = keep(&names, &self.preferred, MAX_CATEGORIES);
                categories
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !kept.contains(i))
                    .map(|(i, c)| Omitted {
                        name: c.clone(),
                        summary: series
                            .iter()
                            .map(|s| {
                                let v = s.values.get(i).copied().unwrap_or(f64::NAN);
                                format!("{} {}", s.name, self.y.format.apply(v))
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    })
                    .collect()
            }
        }
    }

    fn series_names(&self) -> Vec<&str> {
        match &self.marks {
            Marks::Lines { series } => series.iter().map(|s| s.name.as_str()).collect(),
            Marks::Bars { series, .. } => series.iter().map(|s| s.name.as_str()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferred_items_and_their_variants_go_first_up_to_the_cap() {
        let names = [
            "a",
            "b",
            "native",
            "c",
            "astraea@w1",
            "d",
            "astraea@w16",
            "e",
            "astraeax",
        ];
        let kept = keep(&names, &["native".into(), "astraea".into()], 4);
        assert_eq!(
            kept,
            [0, 2, 4, 6],
            "native, both astraea runs, then the first other"
        );
        assert_eq!(keep(&names[..3], &[], 4), [0, 1, 2], "under the cap: all");
        assert_eq!(keep(&names, &["nonesuch".into()], 3), [0, 1, 2]);
    }
}
