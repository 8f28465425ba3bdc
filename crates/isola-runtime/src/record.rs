//! Live tasks as the run recorder's records: every figure of a live run
//! (`isola run`, `isola repro --live`, the demo) is computed by
//! `isola_model::results::RunRecorder` from these, as a simulated run's
//! figures are from the simulator's records.
//!
//! A completion gives one task record (arrival = submission, end = the
//! completion) and its engine time (the measured service; a split task's
//! total spread over its first subtask's start to its completion). Its
//! outcome:
//!
//! | completion | outcome |
//! | --- | --- |
//! | an output, within the tenant's service budget | completed |
//! | an output, over the budget | aborted (as the simulator's watchdog aborts it; live, it ran to its end) |
//! | the operator failed or panicked, a bad plan, an internal error | aborted |
//! | refused by the core (`Rejected`) | rejected |
//! | cancelled at shutdown | in flight: the run ended with it waiting |
//!
//! The runtime keeps no backlog samples, so live runs have no Jain's index
//! under demand: each window's `jain_of_demand` is `None`.

use crate::job::{Completion, TaskError};
use isola_core::{Nanos, TenantId};
use isola_model::results::{EngineTime, Outcome, RunRecorder, TaskRecord};

/// Records `c`, a task's one completion, in `recorder`.
pub fn record_completion(recorder: &mut RunRecorder, c: &Completion) {
    let outcome = match &c.result {
        Ok(_) if c.over_budget => Outcome::Aborted,
        Ok(_) => Outcome::Completed,
        Err(TaskError::Rejected(_)) => Outcome::Rejected,
        Err(TaskError::Cancelled) => Outcome::InFlight,
        Err(_) => Outcome::Aborted,
    };
    if c.service_ns > 0 {
        let time = EngineTime {
            tenant: c.tenant,
            engine: c.engine,
            start: c.started_ns.unwrap_or(c.submitted_ns),
            service: c.service_ns,
        };
        if c.subtasks > 1 {
            recorder.engine_time_spread(time, c.finished_ns);
        } else {
            recorder.engine_time(time);
        }
    }
    recorder.task(TaskRecord {
        tenant: c.tenant,
        flow: c.flow,
        bytes: c.bytes,
        arrival: c.submitted_ns,
        end: c.finished_ns,
        predicted: c.predicted_ns,
        outcome,
    });
}

/// Records a task of `tenant` with `bytes` of input, submitted at
/// `submitted_ns`, that had no completion when the run ended at `end_ns`
/// (its driver stopped waiting): in flight.
pub fn record_unfinished(
    recorder: &mut RunRecorder,
    tenant: TenantId,
    bytes: u64,
    submitted_ns: Nanos,
    end_ns: Nanos,
) {
    recorder.task(TaskRecord {
        tenant,
        flow: 0,
        bytes,
        arrival: submitted_ns,
        end: end_ns.max(submitted_ns),
        predicted: 0,
        outcome: Outcome::InFlight,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use isola_core::{EngineId, RejectReason};
    use isola_model::results::{RecordedEngine, RecordedTenant, RunEnd, SlaRule};
    use isola_model::TenantResult;

    /// A completion of tenant 0 submitted at `at` that took `latency`, with
    /// `service` ns of it on the engine in `subtasks` subtasks.
    fn completion(at: Nanos, latency: Nanos, service: Nanos, subtasks: u32) -> Completion {
        Completion {
            task: at,
            tenant: TenantId(0),
            flow: 0,
            engine: EngineId(0),
            op: "sha256".into(),
            bytes: 100,
            result: Ok(Vec::new()),
            submitted_ns: at,
            started_ns: Some(at + latency - service),
            finished_ns: at + latency,
            service_ns: service,
            predicted_ns: 40,
            subtasks,
            over_budget: false,
            breakdown: crate::LatencyBreakdown::default(),
            on_dispatcher: false,
        }
    }

    /// Tenant 0's result, under `sla`, of 100 completed tasks with
    /// latencies 1..=100 ns (predicted 40 ns each), one submitted every
    /// 1000 ns, and one task each over budget, refused, cancelled and never
    /// completed.
    fn tenant_result(sla: SlaRule) -> TenantResult {
        let tenant = RecordedTenant {
            name: "t".into(),
            weight: 1.0,
            sla: Some(sla),
            active: true,
        };
        let engine = RecordedEngine {
            name: "acc".into(),
            slots: 1,
        };
        let mut r = RunRecorder::new(vec![tenant], vec![engine], 1_000_000);
        for latency in 1..=100 {
            let subtasks = if latency % 2 == 0 { 2 } else { 1 };
            record_completion(
                &mut r,
                &completion(latency * 1000, latency, latency / 2, subtasks),
            );
        }
        let over = Completion {
            over_budget: true,
            ..completion(200_000, 5_000, 5_000, 1)
        };
        let refused = Completion {
            result: Err(TaskError::Rejected(RejectReason::ChannelFull {
                tenant: TenantId(0),
                engine: EngineId(0),
                cap: 1,
            })),
            started_ns: None,
            service_ns: 0,
            ..completion(201_000, 0, 0, 1)
        };
        let cancelled = Completion {
            result: Err(TaskError::Cancelled),
            started_ns: None,
            service_ns: 0,
            ..completion(202_000, 7_000, 0, 1)
        };
        for c in [over, refused, cancelled] {
            record_completion(&mut r, &c);
        }
        record_unfinished(&mut r, TenantId(0), 100, 203_000, 210_000);
        let end = RunEnd {
            label: "fcfs".into(),
            policy_name: "fcfs".into(),
            duration: Some(1_000_000),
            events: 0,
        };
        r.finish(end).tenants.remove(0)
    }

    #[test]
    fn live_completions_give_sla_counts_under_each_rule_and_exact_percentiles() {
        // Latencies 1..=100: over 90 are 91..=100 (10); over 2 x 40 are
        // 81..=100 (20); over 3 x 25 are 76..=100 (25). The over-budget
        // task (5 us) counts as aborted, not in the latencies or the SLA.
        for (sla, violations) in [
            (SlaRule::Absolute(90), 10),
            (SlaRule::PredictedMultiple(2.0), 20),
            (SlaRule::SoloMultiple { k: 3.0, solo_ns: 25 }, 25),
        ] {
            let t = tenant_result(sla);
            assert_eq!(t.sla_violation_rate, violations as f64 / 100.0, "{sla:?}");
        }
        let t = tenant_result(SlaRule::Absolute(90));
        assert_eq!(
            (t.completed, t.aborted, t.rejected, t.incomplete),
            (100, 1, 1, 2),
            "the cancelled and the unfinished task are in flight at the end"
        );
        // By hand: the median of 1..=100 is the 50th value, the 99th
        // percentile the 99th; small latencies are exact in the histogram.
        assert_eq!(
            (
                t.latency_ns.p50,
                t.latency_ns.p99,
                t.latency_ns.max,
                t.latency_ns.mean
            ),
            (50, 99, 100, 50.5)
        );
        // First arrival (1 us) to last completion (the 100th task's, 100 us
        // + 100 ns); 100 completed tasks of 100 B in the 1 ms run.
        assert_eq!(t.flow_completion_ns, 99_100);
        assert_eq!((t.throughput_ops, t.throughput_bps), (1e5, 1e7));
        // The only tenant, it had all the engine time, whole or split.
        assert_eq!(t.engine_time_share, 1.0);
    }
}
