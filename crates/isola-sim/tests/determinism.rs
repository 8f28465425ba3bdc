//! Same scenario and seed: byte-identical results. Another seed: other arrivals.

use isola_model::Scenario;
use isola_sim::simulate;
use std::path::PathBuf;

fn json(seed: Option<u64>) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/osmosis-pu-contention.toml");
    let mut s = Scenario::load(path).unwrap();
    s.run.duration = Some(2_000_000);
    serde_json::to_string(&simulate(&s, &[], seed, |_, _, _| {}).unwrap()).unwrap()
}

#[test]
fn same_seed_same_bytes_other_seed_other_arrivals() {
    let a = json(None);
    assert_eq!(a, json(None));
    let b = json(Some(12345));
    assert_ne!(a, b);
}
