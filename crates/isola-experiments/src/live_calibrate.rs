//! Calibrating a scenario's cost models to this machine before a live run
//! (issue 28). A scenario's service model says how long its tasks take on
//! *some* machine: a profile measured elsewhere (`scenarios/profiles/`),
//! or a model written from a paper. A live run predicts each task's cost
//! with it, and a latency objective written as a multiple of that
//! prediction (`latency_multiple`, ASTRAEA's "2x hardware time") is then
//! judged against another machine's speed: on a machine 1.4x slower,
//! every task misses a 2x objective that it would meet there.
//!
//! So, as `isola demo` measures its tenants alone before judging them,
//! a live run first times each tenant's real operator here, on a valid
//! input of its typical size ([`isola_model::scenario::SizeDist::mean_bytes`]),
//! alone and warm ([`isola_runtime::profile::profile_operator`], the code
//! of `isola profile`), and compares it with what the scenario's model
//! predicts for that size. Where they differ by more than
//! [`TOLERANCE`], the tenant's model is scaled by the measured ratio (its
//! own `service`, or its engine's, which it then gets as its own), and
//! each engine's default model by the geometric mean of its tenants'
//! ratios. Every measurement is reported, so the run says what it
//! changed and why. What it does not do: change the arrivals, the sizes,
//! or anything the simulator would do with the same file.

use crate::live_stages::{computes, is_transfer, live_kernel};
use isola_model::scenario::{ArrivalSpec, DeviceSpec, ServiceCost, ServiceSpec};
use isola_model::Scenario;
use std::time::Duration;

/// Measured and modelled costs within this ratio of each other (either
/// way) are left as they are: 1.10.
pub const TOLERANCE: f64 = 1.10;

/// How long each tenant's operator is timed, at most (3 runs at least).
pub const BUDGET_PER_TENANT: Duration = Duration::from_millis(300);

/// One tenant's measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The tenant.
    pub tenant: String,
    /// Its operator.
    pub op: String,
    /// The input size timed, bytes.
    pub bytes: u64,
    /// Its median time here, ns.
    pub here_ns: f64,
    /// What the scenario's model predicts for it, ns.
    pub model_ns: f64,
}

impl Measured {
    /// How many times as long as the model says the task takes here.
    pub fn ratio(&self) -> f64 {
        self.here_ns / self.model_ns
    }
}

/// A scenario calibrated to this machine, and what was measured.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The scenario, its cost models scaled where they were off.
    pub scenario: Scenario,
    /// Each timed tenant's measurement.
    pub measured: Vec<Measured>,
    /// Tenants whose costs could not be timed here, and why.
    pub skipped: Vec<String>,
}

impl Calibrated {
    /// What a run's table says about it: one line, or none if nothing
    /// was timed.
    pub fn note(&self) -> Option<String> {
        if self.measured.is_empty() {
            return None;
        }
        let fmt = |ns: f64| isola_model::quantity::format_duration(ns.round() as u64);
        let each: Vec<String> = self
            .measured
            .iter()
            .map(|m| {
                format!(
                    "`{}` {} of {} B: {} here, {} by the scenario's model (x{:.2})",
                    m.tenant,
                    m.op,
                    m.bytes,
                    fmt(m.here_ns),
                    fmt(m.model_ns),
                    m.ratio()
                )
            })
            .collect();
        let off = self.measured.iter().any(|m| is_off(m.ratio()));
        let verdict = if off {
            "the cost models were scaled to this machine, so predicted costs and latency objectives \
             written as multiples of them are this machine's (--no-calibrate keeps the file's)"
        } else {
            "the scenario's cost models hold here (within 10%) and were kept"
        };
        let mut line = format!(
            "costs measured on this machine, each alone: {}; {verdict}",
            each.join("; ")
        );
        if !self.skipped.is_empty() {
            line.push_str(&format!("; not timed: {}", self.skipped.join("; ")));
        }
        Some(line)
    }
}

/// Whether a measured-to-modelled ratio is outside [`TOLERANCE`].
fn is_off(ratio: f64) -> bool {
    !(1.0 / TOLERANCE..=TOLERANCE).contains(&ratio)
}

/// The note of a live run that was told not to calibrate.
pub const NOT_CALIBRATED: &str =
    "costs were not measured on this machine (--no-calibrate): predicted costs, \
     and latency objectives written as multiples of them, are the scenario's service model's, which may \
     have been measured on another machine; on a slower one every task looks late";

/// Times each computing tenant's operator here and scales the cost
/// models that are off by more than [`TOLERANCE`]; see the module
/// documentation.
pub fn calibrate(scenario: &Scenario) -> anyhow::Result<Calibrated> {
    let (timed, skipped) = time_tenants(scenario)?;
    Ok(Calibrated {
        scenario: scaled(scenario, &timed),
        measured: timed.into_iter().map(|t| t.measured).collect(),
        skipped,
    })
}

/// One tenant timed: its index, the engine its operator runs on, and what
/// was measured.
struct Timed {
    tenant: usize,
    /// Which of the tenant's workloads.
    workload: usize,
    engine: usize,
    measured: Measured,
}

/// Times each computing tenant's operator (each of its workloads') alone
/// here, against what its model predicts; also answers the tenants that
/// could not be timed.
fn time_tenants(scenario: &Scenario) -> anyhow::Result<(Vec<Timed>, Vec<String>)> {
    let mut timed = Vec::new();
    let mut skipped = Vec::new();
    let workloads = scenario
        .tenants
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.workloads.iter().enumerate().map(move |(k, w)| (i, t, k, w)));
    for (i, t, k, w) in workloads {
        if !runs_an_operator(scenario, w) {
            continue;
        }
        let compute: Vec<usize> = w
            .stages
            .iter()
            .copied()
            .filter(|&e| !is_transfer(&scenario.engines[e]))
            .collect();
        let (Some(&engine), 1) = (compute.first(), compute.len()) else {
            skipped.push(format!("`{}` (a pipeline of several computing stages)", t.name));
            continue;
        };
        if matches!(w.arrival, ArrivalSpec::Trace(_)) {
            skipped.push(format!("`{}` (a trace of several operators)", t.name));
            continue;
        }
        let Some((model, clock_hz)) = model_of(scenario, w, engine) else {
            continue;
        };
        let mut params = isola_ops::sample_params(&w.op);
        params.extend(w.params.clone());
        let profile = isola_runtime::profile::profile_operator(
            &w.op,
            &params,
            &[w.size.mean_bytes().max(1)],
            BUDGET_PER_TENANT,
        )
        .map_err(|e| anyhow::anyhow!("tenant `{}`: timing {} here: {e}", t.name, w.op))?;
        let point = &profile.points[0];
        let model_ns = ServiceCost::new(model, clock_hz).mean(point.bytes);
        if !(model_ns > 0.0 && point.median_ns > 0.0) {
            skipped.push(format!("`{}` (its model predicts no time)", t.name));
            continue;
        }
        timed.push(Timed {
            tenant: i,
            workload: k,
            engine,
            measured: Measured {
                tenant: t.name.clone(),
                op: w.op.clone(),
                bytes: point.bytes,
                here_ns: point.median_ns,
                model_ns,
            },
        });
    }
    Ok((timed, skipped))
}

/// Whether [`calibrate`] has a tenant's operator to time in `scenario`
/// (a driver can say so before the wait).
pub fn has_operators(scenario: &Scenario) -> bool {
    scenario
        .tenants
        .iter()
        .flat_map(|t| &t.workloads)
        .any(|w| runs_an_operator(scenario, w))
}

/// `isola run`: `scenario` live under the runs `only` selects, with
/// `seed`. Its payloads are checked against `max_payload` and its engines
/// for a live run; then, with `calibrate` and unless it runs over packets
/// (whose kernels' stand-in calibrates itself), each tenant's operator is
/// timed alone here first (`timing` is called before, where there is one
/// to time) and the models off by more than [`TOLERANCE`] scaled. What
/// was measured, or that nothing was with `calibrate` off, heads each
/// policy's warnings.
pub fn run_live(
    scenario: &Scenario,
    only: &[String],
    seed: u64,
    max_payload: u64,
    calibrate: bool,
    timing: &mut dyn FnMut(),
    tick: &mut dyn FnMut(usize, usize, f64),
) -> anyhow::Result<isola_model::SimReport> {
    crate::live::check_payloads(scenario, max_payload)?;
    crate::live::check_live(scenario)?;
    // A run over packets calibrates its kernels' stand-in itself.
    let over_packets = crate::live_packets::uses_packets(scenario);
    let (calibrated, note) = if !calibrate || over_packets {
        let note = (!calibrate && !over_packets).then(|| NOT_CALIBRATED.to_string());
        (None, note)
    } else {
        if has_operators(scenario) {
            timing();
        }
        let c = self::calibrate(scenario)?;
        let note = c.note();
        (Some(c.scenario), note)
    };
    let scenario = calibrated.as_ref().unwrap_or(scenario);
    let mut report = crate::live::run_live(scenario, only, Some(seed), tick)?;
    if let Some(note) = note {
        for p in &mut report.policies {
            p.warnings.insert(0, note.clone());
        }
    }
    Ok(report)
}

/// Whether workload `w` computes with a real operator (not only
/// transfers, not a live stand-in kernel).
fn runs_an_operator(scenario: &Scenario, w: &isola_model::scenario::WorkloadSpec) -> bool {
    computes(w, &scenario.engines) && live_kernel(&w.op).is_none()
}

/// The model predicting tenant `tenant`'s tasks on compute engine
/// `engine` (its own, else the engine's) and the engine's clock.
fn model_of<'a>(
    scenario: &'a Scenario,
    workload: &'a isola_model::scenario::WorkloadSpec,
    engine: usize,
) -> Option<(&'a ServiceSpec, f64)> {
    let DeviceSpec::Compute {
        service, clock_hz, ..
    } = &scenario.engines[engine].device
    else {
        return None;
    };
    let own = workload.service.as_ref();
    Some((own.or(service.as_ref())?, *clock_hz))
}

/// `scenario` with the models that `timed` found off by more than
/// [`TOLERANCE`] scaled by the measured ratio: a tenant's (which it gets
/// as its own), and an engine's default by the geometric mean of its
/// timed tenants' ratios.
fn scaled(scenario: &Scenario, timed: &[Timed]) -> Scenario {
    let mut out = scenario.clone();
    for t in timed.iter().filter(|t| is_off(t.measured.ratio())) {
        let workload = &scenario.tenants[t.tenant].workloads[t.workload];
        if let Some((model, _)) = model_of(scenario, workload, t.engine) {
            out.tenants[t.tenant].workloads[t.workload].service = Some(model.scaled(t.measured.ratio()));
        }
    }
    for (e, engine) in out.engines.iter_mut().enumerate() {
        let ratios: Vec<f64> = timed
            .iter()
            .filter(|t| t.engine == e)
            .map(|t| t.measured.ratio())
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let mean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        if let DeviceSpec::Compute { service: Some(s), .. } = &mut engine.device {
            if is_off(mean) {
                *s = s.scaled(mean);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario whose model is 100 times too fast for any machine gets
    /// scaled to the measured time, and says so; one that is right is kept.
    #[test]
    fn a_model_far_off_is_scaled_to_what_this_machine_measures() {
        let text = |per_byte: f64| {
            format!(
                "[run]\nseed = 1\npolicies = [\"fcfs\"]\n\
                 [[engine]]\nname = \"acc\"\nkind = \"accelerator\"\nservice = {{ dist = \"affine\", base = \"0ns\", per_byte_ns = {per_byte} }}\n\
                 [[tenant]]\nname = \"t\"\nlatency_multiple = 2.0\n\
                 [tenant.workload]\nengine = \"acc\"\nop = \"sha256\"\nsize = \"64KiB\"\narrival = {{ closed = 1 }}\ncount = 4\n"
            )
        };
        let far_off = Scenario::parse(&text(0.0001), "t.toml").unwrap();
        let c = calibrate(&far_off).unwrap();
        assert_eq!(c.measured.len(), 1);
        let m = &c.measured[0];
        assert!(m.ratio() > 10.0, "{m:?}");
        // The tenant's model now predicts what was measured.
        let DeviceSpec::Compute { clock_hz, .. } = &c.scenario.engines[0].device else {
            panic!()
        };
        let model = c.scenario.tenants[0].workload().service.as_ref().unwrap();
        let predicted = ServiceCost::new(model, *clock_hz).mean(m.bytes);
        assert!(
            (predicted / m.here_ns - 1.0).abs() < 1e-6,
            "{predicted} {}",
            m.here_ns
        );
        assert!(
            c.note().unwrap().contains("scaled to this machine"),
            "{:?}",
            c.note()
        );

        // Within the tolerance a model is kept; past it, the tenant's and
        // the engine's are scaled by the ratio (measurements given, so the
        // rule is checked without the machine's noise).
        let timed = |ratio: f64| Timed {
            tenant: 0,
            workload: 0,
            engine: 0,
            measured: Measured {
                tenant: "t".into(),
                op: "sha256".into(),
                bytes: 1000,
                here_ns: 1000.0 * ratio,
                model_ns: 1000.0,
            },
        };
        let kept = scaled(&far_off, &[timed(1.05)]);
        assert_eq!(kept.tenants, far_off.tenants);
        assert_eq!(kept.engines, far_off.engines);
        let tripled = scaled(&far_off, &[timed(3.0)]);
        let DeviceSpec::Compute {
            service: Some(engine),
            ..
        } = &tripled.engines[0].device
        else {
            panic!()
        };
        for got in [engine, tripled.tenants[0].workload().service.as_ref().unwrap()] {
            let ServiceSpec::Affine { per_byte_ns, .. } = got else {
                panic!("{got:?}")
            };
            assert!((per_byte_ns / 0.0003 - 1.0).abs() < 1e-9, "{got:?}");
        }
    }
}
