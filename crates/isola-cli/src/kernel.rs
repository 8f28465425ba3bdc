//! `isola kernel`: a tenant's WebAssembly packet kernel run on packets
//! from files or stdin, without a daemon. The kernel is loaded and run by
//! isolad's own code (`isola_daemon::kernel::trial`, under the limits a
//! `[[tenant.flow]]` would get from `isola_daemon::kernel::flow_limits`);
//! this prints what the kernel asked for and what it cost, or why it was
//! stopped (`trial::table`, or a `trial::Record` a line as JSON).

use anyhow::{anyhow, Context};
use isola_daemon::kernel::flow_limits;
use isola_daemon::kernel::trial::{self, Record};
use isola_kernels::KernelLimits;
use isola_model::quantity::parse_size;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The exit status when at least one packet was stopped.
pub const EXIT_STOPPED: u8 = 3;

/// Arguments of `isola kernel`.
#[derive(Debug, clap::Args)]
#[command(
    arg_required_else_help = true,
    after_help = "\
The kernel is loaded and run by isolad's own code: a `.wat` file is \
WebAssembly text, any other name binary; the limits, their defaults and \
their checks are a `[[tenant.flow]]`'s (`fuel`, `kernel_memory`, the \
tenant's `memory_quota`). One instance serves every packet, in order, so \
state carries from one packet to the next; a stopped packet replaces it \
by a fresh one, as in isolad. Replies are not sent and DMA writes are not \
carried out: they are listed (docs/kernels.md has the host API).

Examples (from the repository's root):
  printf 'hello' | isola kernel examples/kernels/echo.wat
  isola kernel examples/kernels/counter.wat --packet README.md --packet Cargo.toml
  printf '68656c6c6f\\nff00\\n' | isola kernel examples/kernels/spin.wat --hex --fuel 20000 --json

Exit status: 0 when every packet ran to its end (`process` returned 0); \
3 when at least one packet was stopped (out of fuel, a trap, the memory \
cap, a bad pointer, too much output, a nonzero code of the kernel's own, \
a packet too large: its row says which, with its stable code); 1 when the \
kernel, a packet or an argument could not be used (the error names the \
file, and the line and column of a syntax error); 2 for a usage error."
)]
pub struct Args {
    /// The kernel module: WebAssembly text if its name ends in `.wat`,
    /// binary otherwise (as a flow's `kernel = "wasm:PATH"`).
    kernel: Option<PathBuf>,
    /// A file holding one packet (all its bytes; with --hex, one packet a
    /// line); repeatable, run in the order given. Without it, all of stdin
    /// is one packet (with --hex, one a line).
    #[arg(long = "packet", value_name = "FILE")]
    packets: Vec<PathBuf>,
    /// Read packets as hexadecimal text, one packet a line: spaces between
    /// digits allowed, blank lines and lines starting with `#` skipped.
    #[arg(long)]
    hex: bool,
    /// Fuel per packet (WebAssembly operators executed), as a flow's
    /// `fuel`: at least 1. [default: 1000000]
    #[arg(long, value_name = "N")]
    fuel: Option<u64>,
    /// The kernel's memory cap with its unit (e.g. 128KiB), as a flow's
    /// `kernel_memory`: from 64KiB to 2GiB, at most --memory-quota.
    /// [default: 1MiB, or --memory-quota if smaller]
    #[arg(long, value_name = "SIZE")]
    kernel_memory: Option<String>,
    /// The tenant's `memory_quota`, to check --kernel-memory against as
    /// isolad would (default: no tenant, no quota).
    #[arg(long, value_name = "SIZE")]
    memory_quota: Option<String>,
    /// Write the replies' bytes to FILE, concatenated in packet order (a
    /// packet without a reply adds nothing).
    #[arg(long, value_name = "FILE")]
    reply_out: Option<PathBuf>,
    /// One JSON object a line per packet, for scripts, instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `isola kernel`: success, or [`EXIT_STOPPED`] when a packet was
/// stopped.
pub fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let path = args
        .kernel
        .as_deref()
        .context("name a kernel (a .wat or .wasm file)")?;
    let limits = limits(args)?;
    if let Some(out) = &args.reply_out {
        crate::args::out_file("--reply-out", out)?;
    }
    let stdin = &mut std::io::stdin().lock();
    let packets = trial::read_packets(&args.packets, stdin, args.hex, limits)?;
    let results = trial::run(path, limits, &packets)?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        for (i, (p, r)) in packets.iter().zip(&results).enumerate() {
            serde_json::to_writer(&mut stdout, &Record::new(i + 1, p, r))?;
            stdout.write_all(b"\n")?;
        }
    } else {
        stdout.write_all(trial::table(&packets, &results).as_bytes())?;
    }
    stdout.flush()?;
    if let Some(out) = &args.reply_out {
        std::fs::write(out, trial::replies(&results))
            .with_context(|| format!("--reply-out {}", out.display()))?;
    }
    Ok(if results.iter().any(Result::is_err) {
        ExitCode::from(EXIT_STOPPED)
    } else {
        ExitCode::SUCCESS
    })
}

/// The limits from --fuel, --kernel-memory and --memory-quota, checked as
/// isolad checks a flow's.
fn limits(args: &Args) -> anyhow::Result<KernelLimits> {
    let size = |flag: &str, given: &Option<String>| -> anyhow::Result<Option<u64>> {
        given
            .as_deref()
            .map(|s| parse_size(s).map_err(|e| anyhow!("{flag}: {e}")))
            .transpose()
    };
    let memory = size("--kernel-memory", &args.kernel_memory)?;
    let quota = size("--memory-quota", &args.memory_quota)?;
    flow_limits(args.fuel, memory, quota).map_err(|e| {
        let flag = match e.key {
            "fuel" => "--fuel",
            _ => "--kernel-memory",
        };
        anyhow!("{flag}: {}", e.message)
    })
}
