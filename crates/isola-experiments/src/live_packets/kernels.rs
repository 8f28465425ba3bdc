//! The kernels a run over packets sends its tenants' packets through:
//! each workload's real operator, or for the model-only `kernel` (and for
//! every tenant of a run whose real operators are too cheap to load its
//! engines, [`super::padding`]) a `firewall` over a chain of rules no
//! packet matches, its length calibrated to the tenant's service model;
//! and the packets themselves.

use super::{KERNEL_STAND_IN, KERNEL_TARGET_NS, MODEL_KERNEL};
use anyhow::Context;
use isola_core::CostModel;
use isola_model::scenario::{DeviceSpec, ServiceCost, TenantSpec};
use isola_model::Scenario;
use isola_sim::workload::SizeSampler;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// Distinct payloads built per tenant: packets cycle through them (each
/// of a size drawn from the tenant's distribution).
const PAYLOADS: usize = 64;

/// Whether tenant `t`'s packets run the calibrated stand-in: its op is
/// the model-only [`MODEL_KERNEL`], or it is an IO tenant (its kernel's
/// work is a service model; its transfer is the DMA's).
pub(super) fn stands_in(scenario: &Scenario, t: &TenantSpec) -> bool {
    t.workload().op == MODEL_KERNEL || super::io::is_io(scenario, t)
}

/// The real operator tenant `t`'s packets run.
pub(super) fn real_op<'a>(scenario: &Scenario, t: &'a TenantSpec) -> anyhow::Result<&'a str> {
    let op = t.workload().op.as_str();
    if stands_in(scenario, t) {
        return Ok(KERNEL_STAND_IN);
    }
    isola_ops::find_operator(op).map_err(|_| {
        anyhow::anyhow!(
            "tenant `{}`: operator `{op}` has no real implementation, so its packets cannot run live \
             (see `isola op --list`, or `{MODEL_KERNEL}` for a calibrated stand-in)",
            t.name
        )
    })?;
    Ok(op)
}

/// The scenario's predicted cost of one of `t`'s packets of `bytes`, ns.
pub(super) fn model_cost(scenario: &Scenario, t: &TenantSpec, bytes: u64) -> Option<f64> {
    let engine = &scenario.engines[*t.workload().stages.first()?];
    let (service, clock_hz) = match &engine.device {
        DeviceSpec::Compute {
            service, clock_hz, ..
        } => (service.clone(), *clock_hz),
        _ => (None, 1e9),
    };
    let s = t.workload().service.clone().or(service)?;
    ServiceCost::new(&s, clock_hz)
        .predict(&t.workload().op, bytes)
        .map(|n| n as f64)
}

/// A tenant's kernel as it runs live: the operator, its parameters, the
/// packets it is sent, and what one costs, measured and modelled.
pub(super) struct Kernel {
    pub(super) op: String,
    pub(super) params: BTreeMap<String, String>,
    pub(super) payloads: Vec<Vec<u8>>,
    /// What the sender sends, where it differs from `payloads` (an IO
    /// tenant's: each payload behind its transfer's header).
    pub(super) wire: Option<Vec<Vec<u8>>>,
    /// Mean measured cost per packet over `payloads`, ns.
    pub(super) measured_ns: f64,
    /// Mean modelled cost over the same sizes, ns (if the scenario has one).
    pub(super) model_ns: Option<f64>,
    /// The stand-in's rule count (for `kernel`, and for a padded run).
    pub(super) rules: Option<u64>,
    /// A padded run's stand-in for a real operator: the operator, and its
    /// measured cost per packet, ns.
    pub(super) replaced: Option<(String, f64)>,
}

/// `t`'s packets (`PAYLOADS` sizes drawn from its distribution) for `op`
/// with `params`: the sizes drawn and the kernel's inputs (an IO tenant's
/// of the size its transfer gives them, `io::body_bytes`).
fn payloads(
    scenario: &Scenario,
    t: &TenantSpec,
    index: usize,
    seed: u64,
    op: &str,
    params: &BTreeMap<String, String>,
) -> anyhow::Result<(Vec<u64>, Vec<Vec<u8>>)> {
    let mut sizes = SizeSampler::new(&t.workload().size, seed, index);
    let sizes: Vec<u64> = (0..PAYLOADS).map(|_| sizes.sample().max(1)).collect();
    let io = super::io::is_io(scenario, t);
    let body = |b: u64| if io { super::io::body_bytes(t, b) } else { b };
    let largest = sizes.iter().map(|&b| body(b)).max().unwrap_or(1);
    let text = isola_ops::text_payload(largest as usize, seed ^ index as u64);
    let built = sizes
        .iter()
        .map(|&b| isola_ops::valid_input(op, params, &text[..body(b) as usize]))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("tenant `{}`: building its packets", t.name))?;
    if let Some(big) = built.iter().map(Vec::len).max().filter(|&n| n > MAX_DATAGRAM) {
        anyhow::bail!(
            "tenant `{}`: `{op}` frames its {largest} B tasks as {big} B, above the {MAX_DATAGRAM} B one UDP \
             datagram carries; give it smaller tasks",
            t.name
        );
    }
    Ok((sizes, built))
}

/// The largest UDP payload over IPv4 (65,535 less the IP and UDP headers).
const MAX_DATAGRAM: usize = 65_507;

/// Passes over each kernel's payloads per calibration round.
const PASSES: usize = 5;

/// Each kernel's time per payload, ns: every payload run once per pass,
/// `PASSES` passes taken in turn (one pass of every kernel, then the
/// next), each payload's least time over the passes, their mean. A run
/// is timed on its own, so that the machine's other work, which only ever
/// adds time, is left out wherever one pass of that payload ran
/// undisturbed (timing whole passes, with two busy loops beside it on a
/// 2-core machine, measured a 20.4 ratio as anything from 9 to 70). The
/// clock's own cost is taken off each run.
pub(super) fn time_kernels(kernels: &[Kernel]) -> anyhow::Result<Vec<f64>> {
    let operators = kernels
        .iter()
        .map(|k| {
            let op = isola_ops::build_operator(&k.op, &k.params)?;
            for p in k.payloads.iter().take(4) {
                op.run(p)?;
            }
            Ok(op)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let clock = clock_cost_ns();
    let mut least: Vec<Vec<f64>> = kernels
        .iter()
        .map(|k| vec![f64::INFINITY; k.payloads.len()])
        .collect();
    for _ in 0..PASSES {
        for ((k, op), least) in kernels.iter().zip(&operators).zip(&mut least) {
            for (p, least) in k.payloads.iter().zip(least.iter_mut()) {
                let start = Instant::now();
                op.run(p)?;
                let ns = start.elapsed().as_nanos() as f64 - clock;
                *least = least.min(ns.max(1.0));
            }
        }
    }
    Ok(least
        .iter()
        .map(|l| (l.iter().sum::<f64>() / l.len().max(1) as f64).max(1.0))
        .collect())
}

/// What reading the clock twice costs, ns: the least of many tries.
fn clock_cost_ns() -> f64 {
    (0..1_000)
        .map(|_| Instant::now().elapsed().as_nanos() as f64)
        .fold(f64::INFINITY, f64::min)
}

/// The power by which a chain's time grew with its length between two
/// rounds' (length, time), held to 0.5-2 against timing noise; 1 (linear)
/// when the lengths are too close to tell.
fn growth((n0, t0): (f64, f64), (n1, t1): (f64, f64)) -> f64 {
    let lengths = (n1 / n0).ln();
    if lengths.abs() < 0.02 || !(t0 > 0.0 && t1 > 0.0) {
        return 1.0;
    }
    ((t1 / t0).ln() / lengths).clamp(0.5, 2.0)
}

/// A calibration: each kernel's chain length (if it stands in) and measured cost.
type Calibration = Vec<(Option<u64>, f64)>;

/// The calibrations made in this process, by scenario path, seed and
/// whether padded (see [`kernels`]).
static CALIBRATED: std::sync::Mutex<BTreeMap<(String, u64, bool), Calibration>> =
    std::sync::Mutex::new(BTreeMap::new());

/// The key of `scenario`'s calibration for `seed`, padded or not.
fn calibration_key(scenario: &Scenario, seed: u64, padded: bool) -> (String, u64, bool) {
    (scenario.path.display().to_string(), seed, padded)
}

/// Forgets `scenario`'s calibration for `seed` (padded or not), so the
/// next [`kernels`] call for it calibrates afresh: a test that retries a
/// calibration timed on a noisy machine.
#[cfg(test)]
pub(super) fn forget_calibration(scenario: &Scenario, seed: u64, padded: bool) {
    if let Ok(mut c) = CALIBRATED.lock() {
        c.remove(&calibration_key(scenario, seed, padded));
    }
}

/// Builds each tenant's kernel and times it; `kernel` tenants get the
/// stand-in, a chain of rules no packet matches (written into `dir`),
/// whose lengths are calibrated together, in rounds, until the first
/// one's measured cost is within 10% of its target and the others' ratios
/// to it within 3% of theirs. A `kernel` tenant's target is
/// [`KERNEL_TARGET_NS`] times its model cost over the cheapest one's; with
/// `pad` (a dilation, from [`super::padding`]) every tenant stands in,
/// its target `pad` times its model cost. Calibrated once per scenario,
/// seed and padding in a process, so every policy runs the same kernels
/// at the same scale.
pub(super) fn kernels(
    scenario: &Scenario,
    seed: u64,
    dir: &Path,
    pad: Option<f64>,
) -> anyhow::Result<Vec<Kernel>> {
    let mut kernels = Vec::with_capacity(scenario.tenants.len());
    // Each stand-in's modelled cost, to be made its target below.
    let mut targets = Vec::with_capacity(scenario.tenants.len());
    for i in 0..scenario.tenants.len() {
        let (kernel, target) = build_kernel(scenario, i, seed, pad)?;
        kernels.push(kernel);
        targets.push(target);
    }
    let targets = target_times(&targets, pad);
    let key = calibration_key(scenario, seed, pad.is_some());
    let known = CALIBRATED.lock().ok().and_then(|c| c.get(&key).cloned());
    if let Some(known) = known {
        for (k, (rules, measured)) in kernels.iter_mut().zip(known) {
            k.rules = rules;
            k.measured_ns = measured;
            k.set_chain(dir)?;
        }
        return Ok(kernels);
    }
    calibrate(&mut kernels, &targets, dir)?;
    if let Ok(mut c) = CALIBRATED.lock() {
        c.insert(key, kernels.iter().map(|k| (k.rules, k.measured_ns)).collect());
    }
    Ok(kernels)
}

/// Tenant `i`'s kernel (not yet timed), and if it stands in, its modelled
/// cost (the base of its target time).
fn build_kernel(
    scenario: &Scenario,
    i: usize,
    seed: u64,
    pad: Option<f64>,
) -> anyhow::Result<(Kernel, Option<f64>)> {
    let t = &scenario.tenants[i];
    let stands_in = stands_in(scenario, t) || pad.is_some();
    let op = if stands_in {
        KERNEL_STAND_IN
    } else {
        real_op(scenario, t)?
    }
    .to_string();
    let mut params = isola_ops::sample_params(&op);
    let mut rules = None;
    if stands_in {
        params.insert("output".into(), "verdicts".into());
        // Random flows (no rules to aim them at): none matches the
        // chain, so every packet scans all of it.
        params.insert("random-rules".into(), "0".into());
        rules = Some(1000);
    } else {
        params.extend(t.workload().params.clone());
    }
    let (sizes, payloads) = payloads(scenario, t, i, seed, &op, &params)?;
    let wire = super::io::is_io(scenario, t).then(|| super::io::packets(t, &sizes, &payloads));
    let model: Option<Vec<f64>> = sizes.iter().map(|&b| model_cost(scenario, t, b)).collect();
    let model = model.map(|m| m.iter().sum::<f64>() / m.len().max(1) as f64);
    // A stand-in's modelled cost: at its own sizes when padded or an IO
    // tenant (its data is what its kernel works on), else at 1 KiB.
    let target = match (stands_in, pad.is_some() || super::io::is_io(scenario, t)) {
        (false, _) => None,
        (true, true) => model,
        (true, false) => model_cost(scenario, t, 1024),
    };
    let kernel = Kernel {
        op,
        params,
        payloads,
        wire,
        measured_ns: 0.0,
        model_ns: model,
        rules,
        replaced: None,
    };
    Ok((kernel, target))
}

/// Each stand-in's target time from its modelled cost `models`: padded,
/// `pad` times its modelled cost; else KERNEL_TARGET_NS times its
/// modelled cost over the cheapest one's.
fn target_times(models: &[Option<f64>], pad: Option<f64>) -> Vec<Option<f64>> {
    let cheapest = models.iter().flatten().copied().fold(f64::INFINITY, f64::min);
    models
        .iter()
        .map(|m| {
            m.map(|m| match pad {
                Some(d) => d * m,
                None => KERNEL_TARGET_NS * m / cheapest,
            })
        })
        .collect()
}

/// Sets the stand-ins' chains to their `targets`, in rounds, timing every
/// kernel each round.
///
/// The first `kernel` tenant is the reference: its chain is set to its
/// target time, the others' to their target ratios to it, each ratio
/// measured pass by pass (so the machine's load, which moves absolute
/// times, cancels out). The cost grows linearly with the rules.
fn calibrate(kernels: &mut [Kernel], targets: &[Option<f64>], dir: &Path) -> anyhow::Result<()> {
    let reference = targets.iter().position(Option::is_some);
    // Chains start in their targets' ratios (1000 rules for the reference).
    let base = reference.and_then(|r| targets[r]).unwrap_or(1.0);
    for (k, target) in kernels.iter_mut().zip(targets) {
        if let (Some(_), Some(t)) = (k.rules, target) {
            k.rules = Some(((1000.0 * t / base).round() as u64).clamp(1, MAX_CHAIN));
        }
    }
    // Each chain's length and time in the round before, for how its time
    // grows with its length.
    let mut before: Vec<Option<(f64, f64)>> = vec![None; kernels.len()];
    for round in 0..8 {
        for k in kernels.iter_mut() {
            k.set_chain(dir)?;
        }
        let times = time_kernels(kernels)?;
        for (k, ns) in kernels.iter_mut().zip(times) {
            k.measured_ns = ns;
        }
        let Some(r) = reference else { break };
        let off = chain_errors(kernels, targets, r);
        let within = |i: usize, off: f64| (off - 1.0).abs() <= if i == r { 0.10 } else { 0.03 };
        if round == 7
            || off
                .iter()
                .enumerate()
                .all(|(i, o)| o.is_none_or(|o| within(i, o)))
        {
            break;
        }
        // The reference's chain moves to its target; the others move with
        // it (holding their ratios to it) and by their own error. A chain's
        // time grows as a power of its length, the power measured from its
        // last two rounds (1 until then): past the caches a longer chain
        // costs more per rule, and a linear step overshot, round after
        // round, between 0.89 and 1.13 of the target.
        let moved = off[r].map_or(1.0, |o| if within(r, o) { 1.0 } else { 1.0 / o });
        for (i, (k, off)) in kernels.iter_mut().zip(&off).enumerate() {
            let (Some(n), Some(off)) = (k.rules, off) else {
                continue;
            };
            let now = (n as f64, k.measured_ns);
            let power = before[i].map_or(1.0, |last| growth(last, now));
            before[i] = Some(now);
            let own = if i == r || within(i, *off) { 1.0 } else { 1.0 / off };
            let next = (n as f64 * (moved * own).powf(1.0 / power)).clamp(1.0, MAX_CHAIN as f64);
            k.rules = Some(next.round() as u64);
        }
    }
    Ok(())
}

/// How far each chain is from its target: the reference `r`'s time from
/// its target time, the others' ratios to it from theirs.
fn chain_errors(kernels: &[Kernel], targets: &[Option<f64>], r: usize) -> Vec<Option<f64>> {
    kernels
        .iter()
        .zip(targets)
        .enumerate()
        .map(|(i, (k, target))| {
            let target = (*target)?;
            k.rules?;
            Some(if i == r {
                k.measured_ns / target
            } else {
                let ratio = k.measured_ns / kernels[r].measured_ns;
                ratio / (target / targets[r].unwrap_or(target))
            })
        })
        .collect()
}

impl Kernel {
    /// Points the stand-in at its chain of `rules` (written into `dir`).
    fn set_chain(&mut self, dir: &Path) -> anyhow::Result<()> {
        if let Some(n) = self.rules {
            self.params.insert("rules".into(), rule_chain(dir, n)?);
        }
        Ok(())
    }
}

/// The longest rule chain the stand-in is given.
const MAX_CHAIN: u64 = 1_000_000;

/// Writes a firewall rule file of `count` rules that match no packet the
/// senders make (source 0.0.x.y/32 to 0.0.0.1/32, ports 1 to 1: a random
/// flow hits one with odds of 2^-80), into `dir`; returns its path.
fn rule_chain(dir: &Path, count: u64) -> anyhow::Result<String> {
    let path = dir.join(format!("chain-{count}.rules"));
    if !path.exists() {
        let mut text =
            String::from("# isola live packets: a chain no packet matches (see live_packets.rs)\n");
        for i in 0..count {
            let _ = writeln!(
                text,
                "deny 0.{}.{}.{}/32 0.0.0.1/32 1 1 tcp",
                (i >> 16) & 255,
                (i >> 8) & 255,
                i & 255
            );
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(path.display().to_string())
}
