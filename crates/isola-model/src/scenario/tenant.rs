//! Checking a `[[tenant]]`: its service-level objective and its workload
//! (engines or pipeline, sizes, arrivals, a trace file's rows).

use super::check::{check_service, check_size};
use super::raw::{value_text, RawArrival, RawWorkload, RawWorkloads};
use super::source::Source;
use super::{ArrivalSpec, DeviceSpec, EngineModel, ScenarioError, TenantSpec, TraceRow, WorkloadSpec};
use crate::tenant::{Context, RawTenant};
use isola_core::RateUnit;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// Tenant `tenant`'s rows of the CSV trace `file` (relative to `base`),
/// in time order.
fn load_trace(
    src: &Source<'_>,
    span: Range<usize>,
    base: &Path,
    file: &str,
    tenant: &str,
) -> Result<Vec<TraceRow>, ScenarioError> {
    let path = base.join(file);
    let shown = path.display().to_string();
    let data = crate::input::read_bounded(&path, crate::input::MAX_TRACE_BYTES)
        .map_err(|e| src.at(span.clone(), Some("trace"), format!("{shown}: {e}")))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(data.as_slice());
    let at = |line: u64, field: &str, message: String| ScenarioError {
        file: shown.clone(),
        line: line as usize,
        column: 1,
        key: Some(field.to_string()),
        message,
    };
    let headers = reader
        .headers()
        .map_err(|e| at(1, "header", e.to_string()))?
        .clone();
    let want = ["time_ns", "tenant", "op", "bytes"];
    if headers.iter().collect::<Vec<_>>() != want {
        return Err(at(
            1,
            "header",
            format!("expected the columns {}", want.join(",")),
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| at(e.position().map_or(1, |p| p.line()), "row", e.to_string()))?;
        let line = record.position().map_or(0, |p| p.line());
        if &record[1] != tenant {
            continue;
        }
        // Column `col`, named `key`, as a whole number of `unit` up to `max`.
        let whole = |col: usize, key: &str, unit: &str, max: u64| {
            record[col]
                .parse::<u64>()
                .ok()
                .filter(|&v| v <= max)
                .ok_or_else(|| {
                    at(
                        line,
                        key,
                        format!("`{}` is not a whole number of {unit} up to {max}", &record[col]),
                    )
                })
        };
        let time = whole(0, "time_ns", "ns", crate::quantity::MAX_DURATION_NS)?;
        let bytes = whole(3, "bytes", "bytes", crate::quantity::MAX_SIZE_BYTES)?;
        rows.push(TraceRow {
            time,
            op: record[2].to_string(),
            bytes,
        });
    }
    if rows.is_empty() {
        return Err(src.at(
            span,
            Some("trace"),
            format!("{shown} has no rows for tenant `{tenant}` (its `tenant` column names the tenants)"),
        ));
    }
    rows.sort_by_key(|r| r.time);
    Ok(rows)
}

/// One `[[tenant]]`: its SLO (checked as every tenant's is,
/// [`crate::tenant::check_tenant`]) and its workload (engines, sizes,
/// arrivals).
pub(super) fn check_tenant(
    src: &Source<'_>,
    base: &Path,
    engines: &[EngineModel],
    earlier: &[TenantSpec],
    raw: Spanned<RawTenant>,
    bounded_by_duration: bool,
) -> Result<TenantSpec, ScenarioError> {
    let tenant_span = raw.span();
    let raw = raw.into_inner();
    if earlier.iter().any(|t| t.name == raw.name()) {
        return Err(src.at(
            raw.name.span(),
            Some("name"),
            format!("tenant `{}` is defined twice", raw.name()),
        ));
    }
    let refs = super::engine_refs(engines);
    let (tenant, workload) = crate::tenant::check_tenant_and_workload(src, Context::Scenario, &refs, raw)?;
    let Some(workload) = workload else {
        return Err(src.at(
            tenant_span,
            Some("workload"),
            format!("tenant `{}` needs a [tenant.workload]", tenant.name),
        ));
    };
    let workload_span = workload.span();
    let raw_workloads = match workload.into_inner() {
        RawWorkloads::One(w) => vec![Spanned::new(workload_span, *w)],
        RawWorkloads::Many(ws) if ws.is_empty() => {
            return Err(src.at(tenant_span, Some("workload"), "give at least one workload"))
        }
        RawWorkloads::Many(ws) if ws.len() > isola_core::tenant::MAX_FLOW_QUEUES => {
            return Err(src.at(
                ws[isola_core::tenant::MAX_FLOW_QUEUES].span(),
                Some("workload"),
                format!(
                    "at most {} workloads per tenant",
                    isola_core::tenant::MAX_FLOW_QUEUES
                ),
            ))
        }
        RawWorkloads::Many(ws) => ws,
    };
    // Each workload is its own flow queue of the tenant.
    let mut slo = tenant.slo.clone();
    let mut workloads = Vec::with_capacity(raw_workloads.len());
    for w in raw_workloads {
        let keys = crate::tenant::flow_queue::RawFlowQueue {
            weight: &w.get_ref().weight,
            priority: &w.get_ref().priority,
            queue_cap: &w.get_ref().queue_cap,
        };
        slo.flows.push(keys.check(src, slo.queue_cap)?);
        workloads.push(check_workload(
            src,
            base,
            engines,
            &tenant,
            w,
            bounded_by_duration,
        )?);
    }
    slo.flows = isola_core::FlowQueueSpec::canonical(std::mem::take(&mut slo.flows));
    Ok(TenantSpec {
        name: tenant.name,
        slo,
        overrides: tenant.overrides,
        flow_match: tenant.flow_match,
        keys: tenant.raw,
        workloads,
    })
}

/// Tenant `tenant`'s `[tenant.workload]`.
fn check_workload(
    src: &Source<'_>,
    base: &Path,
    engines: &[EngineModel],
    tenant: &crate::tenant::TenantModel,
    workload: Spanned<RawWorkload>,
    bounded_by_duration: bool,
) -> Result<WorkloadSpec, ScenarioError> {
    let (name, slo) = (&tenant.name, &tenant.slo);
    let w_span = workload.span();
    let w = workload.into_inner();
    let stages = check_stages(src, engines, w_span.clone(), &w)?;
    let service = w.service.map(|s| check_service(src, s)).transpose()?;
    let migrate = w
        .migrate
        .map(|m| super::migrate::check_migrate(src, engines, &stages, m, bounded_by_duration))
        .transpose()?;
    for &s in stages.iter().chain(migrate.as_ref().map(|m| &m.to)) {
        if let DeviceSpec::Compute { service: None, .. } = engines[s].device {
            if service.is_none() {
                return Err(src.at(
                    w_span.clone(),
                    Some("service"),
                    format!(
                        "engine `{}` has no service model: give one here or on the engine",
                        engines[s].name
                    ),
                ));
            }
        }
    }
    let size = match w.size {
        Some(s) => check_size(src, s.span(), Some(s.into_inner()))?,
        None => check_size(src, w_span.clone(), None)?,
    };
    if let Some(d) = &w.direction {
        if !stages
            .iter()
            .any(|&s| engines[s].kind == isola_core::EngineKind::Dma)
        {
            return Err(src.at(
                d.span(),
                Some("direction"),
                "only applies to a workload with a dma engine among its stages",
            ));
        }
    }
    let arrival_span = w.arrival.span();
    let arrival = check_arrival(src, base, w.arrival, name, slo.queue_cap)?;
    let flows = match w.flows {
        Some(f) if *f.get_ref() == 0 => return Err(src.at(f.span(), Some("flows"), "must be at least 1")),
        f => f.map(Spanned::into_inner),
    };
    let flow_life = match (w.flow_life, flows) {
        (Some(l), _) if l.get_ref().0 == 0 => {
            return Err(src.at(l.span(), Some("flow_life"), "must be positive"))
        }
        (Some(l), None) => {
            return Err(src.at(
                l.span(),
                Some("flow_life"),
                "needs `flows`: the flows that are renewed",
            ))
        }
        (l, _) => l.map(|l| l.into_inner().0),
    };
    let measured_over_predicted = match w.measured_over_predicted {
        Some(k) if !(k.get_ref().is_finite() && (1e-3..=1e3).contains(k.get_ref())) => {
            return Err(src.at(
                k.span(),
                Some("measured_over_predicted"),
                "must be a number from 0.001 to 1000",
            ))
        }
        Some(k) => k.into_inner(),
        None => 1.0,
    };
    let count = w.count.map(|c| c.into_inner());
    let finite = count.is_some() || matches!(arrival, ArrivalSpec::Trace(_));
    if !finite && !bounded_by_duration {
        return Err(src.at(
            arrival_span,
            Some("count"),
            "this workload never ends: give it a `count` or give [run] a `duration`",
        ));
    }
    Ok(WorkloadSpec {
        stages,
        op: w.op.unwrap_or_else(|| "generic".into()),
        params: w.params.into_iter().map(|(k, v)| (k, value_text(v))).collect(),
        size,
        arrival,
        count,
        start: w.start.map_or(0, |s| s.0),
        service,
        direction: w.direction.map(Spanned::into_inner).unwrap_or_default(),
        flow: w.flow,
        flows,
        flow_life,
        measured_over_predicted,
        migrate,
    })
}

/// A workload's `arrival` (tenant `name`'s, whose queue cap is
/// `queue_cap`; a trace's path is relative to `base`).
fn check_arrival(
    src: &Source<'_>,
    base: &Path,
    arrival: Spanned<RawArrival>,
    name: &str,
    queue_cap: usize,
) -> Result<ArrivalSpec, ScenarioError> {
    let arrival_span = arrival.span();
    Ok(match arrival.into_inner() {
        RawArrival::Poisson(r)
        | RawArrival::Constant(r)
        | RawArrival::Uniform(r)
        | RawArrival::OnOff { rate: r, .. }
            if r.0.unit() != RateUnit::OpsPerSec =>
        {
            return Err(src.at(
                arrival_span,
                Some("arrival"),
                "arrival rates are tasks per second, such as \"500k/s\"",
            ));
        }
        RawArrival::Poisson(r) => ArrivalSpec::Poisson(r.0.per_sec()),
        RawArrival::Constant(r) => ArrivalSpec::Constant(r.0.per_sec()),
        RawArrival::Uniform(r) => ArrivalSpec::Uniform(r.0.per_sec()),
        RawArrival::OnOff { on, off, rate } => {
            if on.0 == 0 {
                return Err(src.at(
                    arrival_span,
                    Some("on"),
                    "the on period must be greater than zero",
                ));
            }
            ArrivalSpec::OnOff {
                on: on.0,
                off: off.0,
                rate: rate.0.per_sec(),
            }
        }
        RawArrival::Steps(steps) => {
            let mut out = Vec::with_capacity(steps.len());
            for (i, (from, rate)) in steps.into_iter().enumerate() {
                let bad = |why: String| Err(src.at(arrival_span.clone(), Some("steps"), why));
                if rate.0.unit() != RateUnit::OpsPerSec {
                    return bad("arrival rates are tasks per second, such as \"500k/s\"".into());
                }
                match out.last() {
                    None if from.0 != 0 => return bad("the first step must start at \"0s\"".into()),
                    Some(&(prev, _)) if from.0 <= prev => {
                        return bad(format!("step {} does not start after the one before it", i + 1))
                    }
                    _ => {}
                }
                out.push((from.0, rate.0.per_sec()));
            }
            if out.is_empty() {
                return Err(src.at(arrival_span, Some("steps"), "give at least one [from, rate] step"));
            }
            ArrivalSpec::Steps(out)
        }
        RawArrival::Closed(n) => {
            if n == 0 {
                return Err(src.at(arrival_span, Some("closed"), "keep at least 1 task outstanding"));
            }
            if n as usize > queue_cap {
                return Err(src.at(
                    arrival_span,
                    Some("closed"),
                    format!("{n} outstanding exceeds queue_cap {}", queue_cap),
                ));
            }
            ArrivalSpec::Closed(n)
        }
        RawArrival::Trace(file) => {
            ArrivalSpec::Trace(load_trace(src, arrival_span.clone(), base, &file, name)?)
        }
    })
}

/// The engines a workload's tasks go through: its `engine`, or its
/// `pipeline` (`w_span`: where the workload is written).
fn check_stages(
    src: &Source<'_>,
    engines: &[EngineModel],
    w_span: std::ops::Range<usize>,
    w: &RawWorkload,
) -> Result<Vec<usize>, ScenarioError> {
    let engine_index = |n: &Spanned<String>| {
        engines
            .iter()
            .position(|e| &e.name == n.get_ref())
            .ok_or_else(|| {
                let known: Vec<&str> = engines.iter().map(|e| e.name.as_str()).collect();
                src.at(
                    n.span(),
                    None,
                    format!(
                        "no engine named `{}` (engines: {})",
                        n.get_ref(),
                        known.join(", ")
                    ),
                )
            })
    };
    Ok(match (&w.engine, &w.pipeline) {
        (Some(e), None) => vec![engine_index(e)?],
        (None, Some(p)) if !p.get_ref().is_empty() => {
            p.get_ref().iter().map(engine_index).collect::<Result<_, _>>()?
        }
        (None, Some(p)) => return Err(src.at(p.span(), Some("pipeline"), "give at least one engine")),
        (Some(_), Some(p)) => {
            return Err(src.at(
                p.span(),
                Some("pipeline"),
                "give either engine or pipeline, not both",
            ))
        }
        (None, None) => {
            return Err(src.at(
                w_span,
                Some("workload"),
                "needs `engine = \"...\"` or `pipeline = [...]`",
            ))
        }
    })
}
