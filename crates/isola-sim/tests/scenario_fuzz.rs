//! Fuzzing of the scenario parser and the simulator behind it (issue 14):
//! the shipped scenarios, mutated at random (values swapped for hostile
//! ones, lines dropped, duplicated or cut), are either refused with an
//! error that points inside the file, or simulated under a small event
//! budget to an end; never a panic, never a hang.
//!
//! `PROPTEST_CASES` sets the number of cases (CI's fuzz step runs many
//! more, in release, for a bounded time).

use isola_model::Scenario;
use proptest::prelude::*;
use std::path::Path;

/// The shipped scenarios, with the paths they are read from.
fn seeds() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("repro")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                out.push((
                    path.display().to_string(),
                    std::fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 5, "the shipped scenarios are the fuzzer's seeds");
    out
}

/// Values a careless or hostile author writes.
const HOSTILE: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "\"\"",
    "\"0ns\"",
    "\"0B\"",
    "\"20\"",
    "\"1ns\"",
    "\"1000T/s\"",
    "\"99999999999999999999B\"",
    "\"18446744073709551615\"",
    "\"0.000001bps\"",
    "\"1e300s\"",
    "\"-5ms\"",
    "[]",
    "{}",
    "[[1, 2]]",
    "{ dist = \"constant\", time = \"0ns\" }",
    "{ closed = 4294967295 }",
    "true",
    "\"\\u0000\"",
    "4294967296",
    "9223372036854775807",
    "{ dist = \"empirical\", points = [[\"64B\", 1e308], [\"1KiB\", 1e308]] }",
];

/// One mutation of a scenario's text.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value of the `n`th `key = value` line.
    Value(usize, usize),
    /// Drop line `n`.
    Drop(usize),
    /// Repeat line `n`.
    Repeat(usize),
    /// Cut the text at byte `n` (of every 1000).
    Cut(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 0..HOSTILE.len()).prop_map(|(l, v)| Mutation::Value(l, v)),
        1 => any::<usize>().prop_map(Mutation::Drop),
        1 => any::<usize>().prop_map(Mutation::Repeat),
        1 => (0usize..1000).prop_map(Mutation::Cut),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let n = lines.len().max(1);
    match *m {
        Mutation::Value(l, v) => {
            let values: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains(" = ")).collect();
            if let Some(&i) = values.get(l % values.len().max(1)) {
                let key = lines[i].split(" = ").next().unwrap_or("").to_string();
                lines[i] = format!("{key} = {}", HOSTILE[v]);
            }
        }
        Mutation::Drop(l) => {
            if !lines.is_empty() {
                lines.remove(l % n);
            }
        }
        Mutation::Repeat(l) => {
            if !lines.is_empty() {
                let line = lines[l % n].clone();
                lines.insert(l % n, line);
            }
        }
        Mutation::Cut(at) => {
            let text = lines.join("\n");
            let mut cut = text.len() * at / 1000;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
    }
    lines.join("\n")
}

proptest! {
    #[test]
    fn mutated_scenarios_are_refused_with_a_place_or_run_to_an_end(
        which in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let seeds = seeds();
        let (path, text) = &seeds[which % seeds.len()];
        let mut text = text.clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        match Scenario::parse(&text, path) {
            Err(e) => {
                // An error inside the file, naming it.
                prop_assert!(e.to_string().starts_with(&e.file), "{e}");
                prop_assert!(e.line <= text.lines().count() + 1, "{e}");
            }
            Ok(mut scenario) => {
                // A small budget: the run ends, by its own end or at the
                // budget, with a result or a typed error.
                scenario.run.max_events = scenario.run.max_events.min(200_000);
                let _ = isola_sim::simulate(&scenario, &[], None, |_, _, _| {});
            }
        }
    }
}
