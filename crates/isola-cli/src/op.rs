//! `isola op`: run one operator on a file, like `openssl` or `lz4` would.

use anyhow::{bail, Context};
use isola_ops::{build_operator, run_split};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Arguments of `isola op`.
#[derive(Debug, clap::Args)]
#[command(arg_required_else_help = true)]
pub struct Args {
    /// The operator (see --list).
    name: Option<String>,
    /// List the operators, their category and parameters.
    #[arg(long, conflicts_with = "name")]
    list: bool,
    /// An operator parameter; repeatable.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    /// Input file.
    #[arg(long = "in", value_name = "FILE", required_unless_present = "list")]
    input: Option<PathBuf>,
    /// Output file.
    #[arg(long = "out", value_name = "FILE", required_unless_present = "list")]
    output: Option<PathBuf>,
    /// Run as subtasks of this size (with its unit, e.g. 64KiB) and
    /// reassemble the result.
    #[arg(long, value_name = "SIZE")]
    split: Option<String>,
    /// The largest input file to read: a larger one is refused before it
    /// is read. The operator's output has its own limit (its `max_output`
    /// parameter, where it has one).
    #[arg(long, value_name = "SIZE", default_value = crate::args::DEFAULT_MAX_PAYLOAD)]
    max_payload: String,
}

/// Runs `isola op`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if args.list {
        let text = isola_ops::operators_table();
        std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes())?;
        return Ok(());
    }
    let name = args.name.as_deref().context("name an operator, or pass --list")?;
    let mut params = BTreeMap::new();
    for p in &args.params {
        let Some((k, v)) = p.split_once('=') else {
            bail!("--param `{p}`: expected KEY=VALUE");
        };
        params.insert(k.to_string(), v.to_string());
    }
    let op = build_operator(name, &params)?;
    // clap requires both unless --list.
    let (input, output) = (
        args.input.as_ref().expect("required"),
        args.output.as_ref().expect("required"),
    );
    let split = match args.split.as_deref().map(isola_model::quantity::parse_size) {
        None => None,
        Some(Ok(0)) => bail!("--split: must be at least 1B"),
        Some(Ok(n)) => Some(usize::try_from(n).context("--split: too large for this machine")?),
        Some(Err(e)) => bail!("--split: {e}"),
    };
    // The output's place is checked before the work, not after it.
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            bail!("--out: {} is not a folder that exists", dir.display());
        }
    }
    let limit = crate::args::max_payload(&args.max_payload)?;
    let data = isola_model::input::read_bounded(input, limit)
        .map_err(|e| anyhow::anyhow!("--in {}: {e} (see --max-payload)", input.display()))?;
    let result = match split {
        Some(chunk) => run_split(op.as_ref(), &data, chunk)?,
        None => op.run(&data)?,
    };
    std::fs::write(output, result).with_context(|| format!("writing {}", output.display()))?;
    Ok(())
}
