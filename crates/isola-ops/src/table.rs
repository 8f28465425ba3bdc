//! The registry as a person reads it (`isola op --list`).

use crate::OPERATORS;

/// Every registered operator in a table: its name, DPUBench category,
/// whether it can be split, its parameters' names and what it does.
pub fn operators_table() -> String {
    let rows: Vec<Vec<String>> = OPERATORS
        .iter()
        .map(|o| {
            let params: Vec<String> = o.params.iter().map(|p| p.name.to_string()).collect();
            vec![
                o.name.to_string(),
                o.category.to_string(),
                if o.splittable { "yes" } else { "no" }.to_string(),
                if params.is_empty() {
                    "-".into()
                } else {
                    params.join(",")
                },
                o.description.to_string(),
            ]
        })
        .collect();
    isola_report::text::table_with(
        &["operator", "category", "split", "params", "description"],
        &rows,
        5,
    )
}
