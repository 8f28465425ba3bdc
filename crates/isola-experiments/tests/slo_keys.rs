//! Every SLO key a tenant is given is in force in every driver (issue 30):
//! each key is set in turn, and the tenant's SLO and per-engine changes are
//! read back from the isolation core each driver builds — the simulator's,
//! isolad's from a configuration file with the same keys, the packet
//! harness's daemon (its rates and times scaled as its run is) and the
//! in-process runtime's. A key added to the tenant schema without a sample
//! here fails `every_slo_key_has_a_sample`; one a driver drops fails
//! `every_driver_enforces_every_slo_key`.

use isola_core::{Scheduler, Slo, SloOverride, TimeScale};
use isola_model::scenario::PolicyRun;
use isola_model::Scenario;

/// Each SLO key with the lines that set it (with what it needs beside it).
const SAMPLES: &[(&str, &str)] = &[
    ("weight", "weight = 3.5"),
    ("class", "class = \"latency-sensitive\""),
    ("reservation", "reservation = \"20k/s\""),
    (
        "reservation_burst",
        "reservation = \"20k/s\"\nreservation_burst = 4.0",
    ),
    ("limit", "limit = \"40MB/s\""),
    ("burst", "limit = \"40MB/s\"\nburst = \"64KiB\""),
    ("latency", "latency = \"250us\""),
    ("latency_multiple", "latency_multiple = 4.0"),
    ("budget", "budget = \"2ms\""),
    ("budget_action", "budget = \"2ms\"\nbudget_action = \"stop\""),
    ("queue_cap", "queue_cap = 37"),
    ("memory_quota", "memory_quota = \"3MiB\""),
    (
        "on",
        "[tenant.on.acc]\nweight = 2.0\nreservation = \"5k/s\"\nreservation_burst = 2.0\nlimit = \"9k/s\"\n\
         burst = \"8KiB\"\nbudget = \"3ms\"\nbudget_action = \"flag\"\n[tenant.on.pu]\nlimit = \"1M/s\"",
    ),
];

/// A scenario whose tenant `t` (its tasks arriving as packets where
/// `packets`) has `keys`, on an accelerator beside a processing-unit engine.
fn scenario(keys: &str, packets: bool) -> Scenario {
    let matching = if packets {
        "match = { src_port = 5000, proto = 17 }\n"
    } else {
        ""
    };
    let text = format!(
        "[run]\nduration = \"20ms\"\npolicies = [\"sfq\"]\n\n\
         [[engine]]\nname = \"acc\"\nkind = \"accelerator\"\nservice = {{ dist = \"constant\", time = \"5us\" }}\n\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\nservice = {{ dist = \"constant\", time = \"5us\" }}\n\n\
         [[tenant]]\nname = \"t\"\n{matching}{keys}\n\
         [tenant.workload]\nengine = \"acc\"\nop = \"crc32c\"\nsize = \"256B\"\narrival = {{ poisson = \"1k/s\" }}\n"
    );
    Scenario::parse(&text, "slo-keys.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// An isolad configuration with the same engines and tenant `t` with `keys`.
fn daemon_file(keys: &str) -> isola_daemon::DaemonConfig {
    let quota = if keys.contains("memory_quota") {
        ""
    } else {
        "memory_quota = \"1GiB\"\n"
    };
    let text = format!(
        "[daemon]\nsocket = \"slo-keys.sock\"\nspare_tenants = 0\n\n\
         [[engine]]\nname = \"acc\"\nops = [\"crc32c\"]\n\n\
         [[engine]]\nname = \"pu\"\nkind = \"pu\"\n\n\
         [[tenant]]\nname = \"t\"\nusers = [\"self\"]\n{quota}{keys}\n"
    );
    let path = std::env::temp_dir().join("slo-keys-isolad.toml");
    isola_daemon::DaemonConfig::parse(&text, &path).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Tenant `t`'s SLO and per-engine changes in `core`.
fn read_back(core: &Scheduler) -> (Slo, Vec<(isola_core::EngineSelector, SloOverride)>) {
    let t = core
        .tenants()
        .iter()
        .find(|t| t.name == "t")
        .expect("tenant t in the core");
    (t.slo.clone(), t.overrides.clone())
}

/// What a driver at `scale` with a default memory quota `quota` must hold
/// for a tenant the simulator holds as `sim`.
fn expected(
    sim: &(Slo, Vec<(isola_core::EngineSelector, SloOverride)>),
    scale: TimeScale,
    quota: Option<u64>,
) -> (Slo, Vec<(isola_core::EngineSelector, SloOverride)>) {
    let (mut slo, overrides) = scale.tenant(&sim.0, &sim.1);
    slo.memory_quota = slo.memory_quota.or(quota);
    (slo, overrides)
}

fn run_of(s: &Scenario) -> &PolicyRun {
    &s.run.policies[0]
}

#[test]
fn every_slo_key_has_a_sample() {
    for key in isola_model::tenant::slo_keys() {
        assert!(
            SAMPLES.iter().any(|(k, _)| *k == key),
            "SLO key `{key}` has no sample here: give it one, and wire it through every driver"
        );
    }
}

#[test]
fn every_driver_enforces_every_slo_key() {
    let base = isola_sim::scheduler_for(&scenario("", false), run_of(&scenario("", false))).unwrap();
    let base = read_back(&base);
    for (key, lines) in SAMPLES {
        // The simulator: the model's check, the core as simulated.
        let s = scenario(lines, false);
        let sim = read_back(&isola_sim::scheduler_for(&s, run_of(&s)).unwrap());
        assert_ne!(sim, base, "`{key}` changed nothing in the simulator's core");
        // The in-process runtime, as `isola run` builds it.
        let runtime = isola_experiments::live::runtime_builder(&s, run_of(&s)).unwrap();
        let live = read_back(&runtime.scheduler().unwrap());
        let factor = isola_experiments::live_scale::auto_factor(&s);
        let slowed = TimeScale {
            rates_over: factor.max(1.0),
            times_by: 1.0,
        };
        assert_eq!(
            live,
            expected(&sim, slowed, None),
            "`{key}` in the in-process runtime"
        );
        // isolad, from a configuration file with the same keys.
        let daemon = read_back(&isola_daemon::core_for(&daemon_file(lines)).unwrap());
        assert_eq!(
            daemon,
            expected(&sim, TimeScale::NONE, Some(1 << 30)),
            "`{key}` in isolad"
        );
        // The packet harness's daemon, its SLO scaled as its run is.
        let p = scenario(lines, true);
        let (config, scale) = isola_experiments::live_packets::daemon_for(&p, run_of(&p), 1).unwrap();
        let packets = read_back(&isola_daemon::core_for(&config).unwrap());
        assert_eq!(
            packets,
            expected(&sim, scale, Some(1 << 30)),
            "`{key}` over packets"
        );
    }
}

/// A key the packet harness cannot honour refuses the run before it
/// starts, naming the key: a memory quota below isolad's smallest arena.
#[test]
fn a_key_isolad_cannot_honour_refuses_the_packet_run_by_name() {
    let s = scenario("memory_quota = \"1KiB\"", true);
    assert!(isola_sim::scheduler_for(&s, run_of(&s)).is_ok());
    let err = isola_experiments::live_packets::daemon_for(&s, run_of(&s), 1)
        .expect_err("a 1 KiB quota cannot hold a connection's arena")
        .to_string();
    assert!(
        err.contains("memory_quota") && err.contains("tenant `t`"),
        "{err}"
    );
}
