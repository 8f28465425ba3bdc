//! The core's policy registry (`isola_core::POLICIES`) as a person reads
//! it (`isola policies`): what a scenario's `[run] policies` and an
//! engine's `policy` may name, with each policy's parameters.

use isola_core::POLICIES;

/// Every registered policy: its name and description, its aliases, its
/// source and whether it is work-conserving, its parameters with their
/// defaults; a blank line after each.
pub fn text() -> String {
    let mut out = String::new();
    let width = POLICIES.iter().map(|p| p.name.len()).max().unwrap_or(0) + 2;
    let pad = " ".repeat(width);
    for p in POLICIES {
        out.push_str(&format!("{:width$}{}\n", p.name, p.description));
        if !p.aliases.is_empty() {
            out.push_str(&format!("{pad}aliases: {}\n", p.aliases.join(", ")));
        }
        let conserving = if p.work_conserving { "yes" } else { "no" };
        out.push_str(&format!(
            "{pad}source: {}; work-conserving: {conserving}\n",
            p.source
        ));
        if p.params.is_empty() {
            out.push_str(&format!("{pad}params: none\n"));
        }
        for (i, param) in p.params.iter().enumerate() {
            let label = if i == 0 { "params: " } else { "        " };
            out.push_str(&format!(
                "{pad}{label}{} = {}  ({})\n",
                param.name, param.default, param.description
            ));
        }
        out.push('\n');
    }
    out
}
