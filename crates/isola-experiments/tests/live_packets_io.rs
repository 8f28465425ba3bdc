//! OSMOSIS' IO mix (Sec. 6.4, `scenarios/repro/osmosis-io.toml`) live over
//! real UDP packets through an in-process isolad: each tenant's io-write
//! and io-read requests run as `dma` flows, their kernels on the
//! processing units and their transfers on the daemon's DMA engine, into
//! and out of host windows each tenant holds as a real client.
//!
//! References: every request is carried out (none aborted: each address
//! lies in its tenant's window); round robin on the DMA path gives each
//! tenant DMA time in proportion to its bytes per packet, so the
//! Congestors (4 KiB transfers) take several times the Victims' (64-128 B
//! writes, 256 B reads), OSMOSIS' starting point (Fig. 12b). (A
//! pipeline's completion counts its kernel's and its transfer's service
//! on its last engine, `axi`; the kernels are calibrated to the service
//! models, under 3x apart, so the transfers set the ratio.)

use isola_experiments::live::{check_live, run_live};
use isola_model::Scenario;
use std::path::Path;

#[test]
fn osmosis_io_runs_over_packets_through_the_daemons_dma_engine() {
    let path = format!(
        "{}/../../scenarios/repro/osmosis-io.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut scenario = Scenario::load(Path::new(&path)).unwrap();
    scenario.run.solo = false;
    check_live(&scenario).unwrap();
    let report = run_live(&scenario, &[], None, &mut |_, _, _| {}).unwrap();
    let p = &report.policies[0];
    for w in &p.warnings {
        eprintln!("{w}");
    }
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("`dma` flows") && w.contains("paced")),
        "{:?}",
        p.warnings
    );
    let axi = |name: &str| {
        let t = p.tenants.iter().find(|t| t.name == name).unwrap();
        eprintln!(
            "{name}: completed {}, aborted {}, rejected {}, incomplete {}, shares {:?}",
            t.completed, t.aborted, t.rejected, t.incomplete, t.engine_shares
        );
        assert!(t.completed > 0, "{name} completed nothing");
        assert_eq!(t.aborted, 0, "{name}: a request in its window was aborted");
        t.engine_shares.get("axi").copied().unwrap_or(0.0)
    };
    let (wv, rv, wc, rc) = (
        axi("write-victim"),
        axi("read-victim"),
        axi("write-congestor"),
        axi("read-congestor"),
    );
    assert!(wc > 3.0 * wv, "write congestor {wc} against victim {wv}");
    assert!(rc > 2.0 * rv, "read congestor {rc} against victim {rv}");
}
