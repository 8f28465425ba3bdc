//! Tests of the daemon's metrics.
use super::*;

#[test]
fn every_outcome_has_one_reason() {
    use CompletionStatus::*;
    let cases = [
        (Ok, Class::Completed),
        (BadEntry(3), Class::Rejected(0)),
        (Rejected(detail::CHANNEL_FULL), Class::Rejected(1)),
        (Rejected(detail::OVER_QUOTA), Class::Rejected(2)),
        (Rejected(detail::NO_ENGINE), Class::Rejected(3)),
        (Rejected(detail::OTHER), Class::Rejected(4)),
        (OperatorFailed(detail::OPERATOR), Class::Failed(0)),
        (OperatorFailed(detail::OUTPUT_TOO_LARGE), Class::Failed(1)),
        (OperatorFailed(detail::PANICKED), Class::Failed(2)),
        (OperatorFailed(detail::OVER_BUDGET), Class::Failed(3)),
        (Cancelled, Class::Failed(4)),
        (Abandoned, Class::Failed(5)),
    ];
    for (outcome, class) in cases {
        assert_eq!(classify(outcome), class, "{outcome:?}");
    }
}

/// A completion of `service_ns` of `tenant`'s on engine 0.
fn done(tenant: u32, service_ns: u64) -> (Completion, CompletionEntry) {
    let c = Completion {
        task: 0,
        tenant: isola_core::TenantId(tenant),
        flow: 0,
        engine: isola_core::EngineId(0),
        op: "crc32c".into(),
        bytes: 1,
        result: Ok(Vec::new()),
        submitted_ns: 0,
        started_ns: Some(0),
        finished_ns: service_ns,
        service_ns,
        predicted_ns: service_ns,
        subtasks: 1,
        over_budget: false,
        breakdown: Default::default(),
        on_dispatcher: false,
    };
    let answer = CompletionEntry {
        tag: 0,
        outcome: CompletionStatus::Ok,
        output_len: 0,
        arrival_ns: 0,
        dispatch_ns: 0,
        completion_ns: service_ns,
        predicted_ns: service_ns,
        service_ns,
    };
    (c, answer)
}

/// A daemon with engine `e` and tenants `a` (weight 2) and `b`, filled in
/// by code and checked as a file's tenants are.
fn two_tenants() -> crate::DaemonConfig {
    let mut config = crate::DaemonConfig::new("s".into());
    config.engines.push(crate::config::DaemonEngine::new(
        "e",
        isola_core::EngineKind::Accelerator,
    ));
    for (name, weight) in [("a", 2.0), ("b", 1.0)] {
        let changes = [
            ("weight", Some(toml::Value::from(weight))),
            ("memory_quota", Some("1MiB".into())),
            ("users", Some(toml::Value::Array(vec![0i64.into()]))),
        ];
        let raw = isola_model::tenant::RawTenant::named(name);
        let tenant = config.check_changes(raw, &changes, "test").unwrap();
        config.tenants.push(tenant);
    }
    config
}

#[test]
fn the_fairness_index_is_of_the_window_by_weight_among_active_tenants() {
    let m = Metrics::new(&two_tenants());
    let serve = |tenant: usize, seconds: u64| {
        m.accepted(tenant, Some(0), 1);
        let (c, answer) = done(tenant as u32, seconds * 1_000_000_000);
        m.answered(&c, &answer);
    };
    let jain = || m.fairness[0].get();
    // Nobody active: fair.
    m.tick_fairness();
    assert_eq!(jain(), 1.0);
    // Service in proportion to the weights (2:1): fair.
    serve(0, 2);
    serve(1, 1);
    m.tick_fairness();
    assert!((jain() - 1.0).abs() < 1e-12, "{}", jain());
    // Equal service at weights 2:1: shares 1.5 and 3, index 0.9. The
    // window holds both ticks' service: 3 s and 2 s, shares 4.5 and 6.
    serve(0, 1);
    serve(1, 1);
    m.tick_fairness();
    let (x, y) = (3.0 / (2.0 / 3.0), 2.0 / (1.0 / 3.0));
    let want = (x + y) * (x + y) / (2.0 * (x * x + y * y));
    assert!((jain() - want).abs() < 1e-12, "{} {want}", jain());
    // A tenant that waits unserved counts, at zero: the least fair.
    // Once b's service has slid out of the window, a served every
    // tick and b waiting are two tenants, one at zero.
    let ticks = FAIRNESS_WINDOW.as_secs() / FAIRNESS_TICK.as_secs();
    m.accepted(1, Some(0), 1);
    for _ in 0..=ticks {
        serve(0, 1);
        m.tick_fairness();
    }
    assert!((jain() - 0.5).abs() < 1e-12, "{}", jain());
    // a's service slides out too: b alone is active.
    for _ in 0..=ticks {
        m.tick_fairness();
    }
    assert_eq!(jain(), 1.0);
    let mut depth = 0;
    m.with_series(1, Some(0), |s, _| depth = s.depth.get());
    assert_eq!(depth, 1);
}

#[test]
fn the_text_format_renames_counter_and_info_descriptors() {
    let open = "# HELP isola_x Xs.\n# TYPE isola_x counter\nisola_x_total{tenant=\"a\"} 3\n\
                # HELP isola_d Its version.\n# TYPE isola_d info\nisola_d_info{version=\"1\"} 1\n\
                # HELP isola_g A gauge.\n# TYPE isola_g gauge\n# UNIT isola_g seconds\nisola_g 0.5\n# EOF\n";
    assert_eq!(
        to_prometheus_text(open),
        "# HELP isola_x_total Xs.\n# TYPE isola_x_total counter\nisola_x_total{tenant=\"a\"} 3\n\
         # HELP isola_d_info Its version.\n# TYPE isola_d_info gauge\nisola_d_info{version=\"1\"} 1\n\
         # HELP isola_g A gauge.\n# TYPE isola_g gauge\nisola_g 0.5\n"
    );
}
