//! What one DMA fragment costs the live DMA engine: a write of `S` bytes
//! into a tenant's host region, whole and in fragments of `f` bytes (the
//! core splits it; each fragment is one dispatch, one copy on a worker and
//! one completion), submit to completion. The per-fragment overhead is
//! `(T(f) - T(whole)) / (S/f - 1)`: what a fragment adds beyond the bytes
//! it copies. Configurations are interleaved in blocks (a fresh runtime
//! each), and medians taken over all blocks, so a loaded machine's drift
//! hits every configuration alike. This calibrates the model's DMA
//! `request_overhead` for our engine (a memcpy on a CPU core, not an AXI
//! DMA engine; docs/scenario-format.md says how it maps).
//!
//! Run: `cargo bench -p isola-runtime --bench fragment`

use isola_core::{AffineCost, EngineId, Slo, TenantId};
use isola_runtime::{Direction, EngineConfig, HeapRegion, Mode, RuntimeBuilder, SplitWhen, Stage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Blocks of interleaved configurations, and tasks per configuration per block.
const BLOCKS: usize = 6;
const TASKS: usize = 1_500;

/// Median submit-to-completion time (ns) of `TASKS` writes of `size` bytes
/// in fragments of `frag` (whole if `None`), on a fresh runtime.
fn block(size: usize, frag: Option<u64>, on_dispatcher: bool) -> Vec<u128> {
    let mut b = RuntimeBuilder::new();
    let mut dma = EngineConfig::new("dma", &[], 1, Arc::new(AffineCost::new(100.0, 0.1).unwrap()))
        .with_dma()
        .with_split_when(SplitWhen::Always);
    if on_dispatcher {
        dma = dma.on_dispatcher();
    }
    dma.split_bytes = frag;
    b.engine(dma);
    let t = b.tenant("t", Slo::default());
    b.host_region(t, Arc::new(HeapRegion::new(size)));
    b.mode(Mode::Isolated {
        policy: "wrr".into(),
        params: BTreeMap::new(),
    });
    let rt = b.start().unwrap();
    let handle = rt.tenant(TenantId(0));
    let input = vec![0x5au8; size];
    let stage = || {
        vec![Stage::Dma {
            engine: EngineId(0),
            direction: Direction::Write,
            offset: 0,
        }]
    };
    let times = (0..TASKS)
        .map(|_| {
            let started = Instant::now();
            let c = handle.submit_stages(stage(), input.clone()).unwrap().wait();
            assert!(c.result.is_ok());
            started.elapsed().as_nanos()
        })
        .collect();
    rt.shutdown();
    times
}

fn median(mut v: Vec<u128>) -> f64 {
    isola_core::metrics::median(&mut v).expect("samples") as f64
}

fn main() {
    for on_dispatcher in [false, true] {
        let place = if on_dispatcher {
            "on the dispatcher"
        } else {
            "on a worker"
        };
        for size in [4_096usize, 65_536] {
            let frags: Vec<Option<u64>> = [None, Some(4_096), Some(1_024), Some(512), Some(64)]
                .into_iter()
                .filter(|f| f.is_none_or(|f| (f as usize) < size))
                .collect();
            let mut samples: Vec<Vec<u128>> = vec![Vec::new(); frags.len()];
            for _ in 0..BLOCKS {
                for (i, &f) in frags.iter().enumerate() {
                    samples[i].extend(block(size, f, on_dispatcher));
                }
            }
            let whole = median(std::mem::take(&mut samples[0]));
            println!("fragment/{size}B {place}: whole {:.2} us", whole / 1e3);
            for (i, f) in frags.iter().enumerate().skip(1) {
                let f = f.expect("only the first is whole");
                let t = median(std::mem::take(&mut samples[i]));
                let n = size as u64 / f;
                println!(
                    "fragment/{size}B {place}: {n} x {f} B {:.2} us, {:+.0} ns per added fragment",
                    t / 1e3,
                    (t - whole) / (n - 1) as f64
                );
            }
        }
    }
}
