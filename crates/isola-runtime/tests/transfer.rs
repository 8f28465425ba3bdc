//! DMA and egress engines and pipelines, live: a fragmented DMA write puts
//! exactly the task's bytes at their offsets in the tenant's host region
//! (the reference is the input itself, zeros elsewhere), a read gives the
//! region's bytes back, a transfer that does not fit is a typed error that
//! copies nothing, an egress sink receives exactly the bytes sent in
//! datagrams of at most the MTU, and every pipeline task ends in exactly
//! one completion whatever refuses or cancels it on the way.

use isola_core::{AffineCost, EngineId, RejectReason, Slo};
use isola_ops::{OpError, Operator};
use isola_runtime::{
    Completion, Direction, EgressPort, EgressSink, EngineConfig, HeapRegion, HostRegion, Mode, RegionError,
    RuntimeBuilder, SplitWhen, Stage, SubmitError, TaskError,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

fn cost() -> Arc<AffineCost> {
    Arc::new(AffineCost::new(1_000.0, 0.5).unwrap())
}

fn wrr() -> Mode {
    Mode::Isolated {
        policy: "wrr".into(),
        params: BTreeMap::new(),
    }
}

/// Seeded bytes (xorshift), never all one value.
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// One tenant with `region`, one DMA engine of `workers` copying in
/// fragments of `frag` bytes (always split, when given).
fn dma_runtime(region: Arc<HeapRegion>, workers: usize, frag: Option<u64>) -> isola_runtime::Runtime {
    let mut b = RuntimeBuilder::new();
    let mut dma = EngineConfig::new("dma", &[], workers, cost())
        .with_dma()
        .with_split_when(SplitWhen::Always);
    dma.split_bytes = frag;
    b.engine(dma);
    let t = b.tenant("t", Slo::default());
    b.host_region(t, region);
    b.mode(wrr());
    b.start().unwrap()
}

fn dma(direction: Direction, offset: u64) -> Stage {
    Stage::Dma {
        engine: EngineId(0),
        direction,
        offset,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the size, fragment size and offset: the region holds the
    /// input at the offset and zeros elsewhere, the task ran as the
    /// core's fragments, and reading it back gives the input.
    #[test]
    fn fragmented_writes_land_at_their_offsets_and_read_back(
        len in 1usize..12_000,
        frag in 16u64..4_000,
        offset in 0u64..3_000,
        slack in 0u64..100,
        workers in 1usize..3,
        seed in any::<u64>(),
    ) {
        let size = offset + len as u64 + slack;
        let region = Arc::new(HeapRegion::new(size as usize));
        let rt = dma_runtime(Arc::clone(&region), workers, Some(frag));
        let input = bytes(len, seed);
        let c = rt.tenant(isola_core::TenantId(0))
            .submit_stages(vec![dma(Direction::Write, offset)], input.clone())
            .unwrap()
            .wait();
        prop_assert_eq!(c.result, Ok(Vec::new()));
        prop_assert_eq!(c.subtasks as u64, (len as u64).div_ceil(frag));
        let mut expected = vec![0u8; size as usize];
        expected[offset as usize..offset as usize + len].copy_from_slice(&input);
        prop_assert!(region.to_vec() == expected, "the region's bytes differ from the input's");
        // A write then a read of the same range, as one pipeline: the read
        // gets as many bytes as the write passed on, the region's.
        let c = rt.tenant(isola_core::TenantId(0))
            .submit_stages(vec![dma(Direction::Write, offset), dma(Direction::Read, offset)], input.clone())
            .unwrap()
            .wait();
        prop_assert!(c.result.as_deref() == Ok(&input[..]), "the read-back differs");
        rt.shutdown();
    }
}

#[test]
fn a_read_returns_the_region_bytes_in_fragments() {
    let region = Arc::new(HeapRegion::new(10_000));
    let content = bytes(10_000, 7);
    region.write_at(0, &content).unwrap();
    let rt = dma_runtime(Arc::clone(&region), 2, Some(512));
    let c = rt
        .tenant(isola_core::TenantId(0))
        .submit_stages(vec![dma(Direction::Read, 1234)], vec![0u8; 5000])
        .unwrap()
        .wait();
    assert_eq!(c.subtasks, 10, "5000 bytes in 512-byte fragments");
    assert_eq!(c.result.unwrap(), &content[1234..6234]);
}

#[test]
fn a_transfer_that_does_not_fit_is_a_typed_error_and_copies_nothing() {
    let region = Arc::new(HeapRegion::new(4096));
    let rt = dma_runtime(Arc::clone(&region), 1, Some(512));
    let t = rt.tenant(isola_core::TenantId(0));
    for (offset, len) in [(4090, 10), (0, 4097), (u64::MAX - 2, 8)] {
        let c = t
            .submit_stages(vec![dma(Direction::Write, offset)], vec![9u8; len])
            .unwrap()
            .wait();
        assert_eq!(
            c.result,
            Err(TaskError::Transfer(RegionError::OutOfBounds {
                offset,
                len: len as u64,
                region: 4096
            }))
        );
        let c = t
            .submit_stages(vec![dma(Direction::Read, offset)], vec![0u8; len])
            .unwrap()
            .wait();
        assert!(matches!(c.result, Err(TaskError::Transfer(_))), "{:?}", c.result);
    }
    assert_eq!(region.to_vec(), vec![0u8; 4096], "no fragment was copied");
    rt.shutdown();
}

#[test]
fn stages_on_the_wrong_engine_or_without_a_region_are_refused_at_submit() {
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("pu", &[], 1, cost()));
    b.engine(EngineConfig::new("dma", &[], 1, cost()).with_dma());
    b.tenant("t", Slo::default());
    b.mode(wrr());
    let rt = b.start().unwrap();
    let t = rt.tenant(isola_core::TenantId(0));
    let on = |e| Stage::Dma {
        engine: EngineId(e),
        direction: Direction::Write,
        offset: 0,
    };
    assert!(matches!(
        t.submit_stages(vec![on(0)], vec![1]),
        Err(SubmitError::WrongEngine { .. })
    ));
    assert!(matches!(
        t.submit_stages(vec![on(1)], vec![1]),
        Err(SubmitError::NoRegion(_))
    ));
    assert!(matches!(
        t.submit_stages(vec![Stage::Egress { engine: EngineId(1) }], vec![1]),
        Err(SubmitError::WrongEngine { .. })
    ));
    assert!(matches!(
        t.submit_stages(vec![], vec![1]),
        Err(SubmitError::NoStages)
    ));
    assert_eq!(
        rt.shutdown()[0].submitted,
        0,
        "nothing refused at submit was counted"
    );
}

/// An egress engine of one worker sending to a sink, fragments of `frag`.
fn egress_runtime(
    sink: &EgressSink,
    mtu: usize,
    frag: Option<u64>,
) -> (isola_runtime::Runtime, Arc<EgressPort>) {
    let port = Arc::new(EgressPort::connect(sink.addr(), mtu).unwrap());
    let mut b = RuntimeBuilder::new();
    let mut e = EngineConfig::new("egress", &[], 1, cost())
        .with_egress(Arc::clone(&port))
        .with_split_when(SplitWhen::Always);
    e.split_bytes = frag;
    b.engine(e);
    b.tenant("t", Slo::default());
    b.mode(wrr());
    (b.start().unwrap(), port)
}

#[test]
fn the_sink_receives_exactly_the_bytes_sent_in_order_in_mtu_datagrams() {
    let sink = EgressSink::bind(true).unwrap();
    let (rt, port) = egress_runtime(&sink, isola_runtime::DEFAULT_MTU_PAYLOAD, Some(4096));
    let t = rt.tenant(isola_core::TenantId(0));
    let sizes = [1usize, 1472, 1473, 4096, 4097, 10_000, 60_000];
    let mut sent = Vec::new();
    let mut datagrams = 0u64;
    for (i, &len) in sizes.iter().enumerate() {
        let input = bytes(len, i as u64 + 1);
        let c = t
            .submit_stages(vec![Stage::Egress { engine: EngineId(0) }], input.clone())
            .unwrap()
            .wait();
        assert_eq!(c.result, Ok(Vec::new()));
        // Each 4096-byte fragment of the core's goes out in 1472-byte
        // datagrams (the last shorter).
        datagrams += (0..len)
            .step_by(4096)
            .map(|at| (len - at).min(4096).div_ceil(1472) as u64)
            .sum::<u64>();
        sent.extend_from_slice(&input);
    }
    let got = sink.wait_for(sent.len() as u64, Duration::from_secs(10));
    rt.shutdown();
    let (counts, kept) = sink.stop();
    assert_eq!(counts.bytes, sent.len() as u64);
    assert_eq!(counts.datagrams, datagrams, "{got:?}");
    assert_eq!(port.sent(), counts, "the port counts what it sent");
    assert!(kept.iter().all(|d| d.len() <= 1472));
    assert!(kept.concat() == sent, "the sink's bytes differ from those sent");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Whatever the size, MTU and fragment size: the sink gets the task's
    /// bytes in order, in ceil(fragment / MTU) datagrams per fragment (MTUs
    /// from 64 bytes, so a send stays within the sink's socket buffer).
    #[test]
    fn sends_of_any_size_arrive_whole_and_in_order(
        len in 0usize..40_000,
        mtu in 64usize..3_000,
        frag in 64u64..10_000,
        seed in any::<u64>(),
    ) {
        let sink = EgressSink::bind(true).unwrap();
        let (rt, port) = egress_runtime(&sink, mtu, Some(frag));
        let input = bytes(len, seed);
        let c = rt
            .tenant(isola_core::TenantId(0))
            .submit_stages(vec![Stage::Egress { engine: EngineId(0) }], input.clone())
            .unwrap()
            .wait();
        prop_assert_eq!(c.result, Ok(Vec::new()));
        sink.wait_for(len as u64, Duration::from_secs(10));
        rt.shutdown();
        let (counts, kept) = sink.stop();
        let frag = frag as usize;
        let datagrams: usize = (0..len).step_by(frag).map(|at| (len - at).min(frag).div_ceil(mtu)).sum();
        prop_assert_eq!(counts.datagrams as usize, datagrams);
        prop_assert_eq!(port.sent(), counts);
        prop_assert!(kept.iter().all(|d| d.len() <= mtu));
        prop_assert!(kept.concat() == input, "the sink's bytes differ from those sent");
    }
}

/// An operator that blocks until released, then echoes its input.
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Operator for Gate {
    fn name(&self) -> &'static str {
        "gate"
    }

    fn run(&self, input: &[u8]) -> Result<Vec<u8>, OpError> {
        let (lock, cv) = &*self.0;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = cv.wait(open).unwrap();
        }
        Ok(input.to_vec())
    }
}

/// A compute engine, a DMA engine and an egress engine; one tenant with a
/// region of `region` bytes and a queue cap of `cap` tasks per engine.
fn pipeline_runtime(sink: &EgressSink, region: Arc<HeapRegion>, cap: usize) -> isola_runtime::Runtime {
    let port = Arc::new(EgressPort::connect(sink.addr(), 1000).unwrap());
    let mut b = RuntimeBuilder::new();
    b.engine(EngineConfig::new("pu", &[], 1, cost()));
    b.engine(
        EngineConfig::new("dma", &[], 1, cost())
            .with_dma()
            .with_split(256),
    );
    b.engine(EngineConfig::new("egress", &[], 1, cost()).with_egress(port));
    let t = b.tenant(
        "t",
        Slo {
            queue_cap: cap,
            ..Slo::default()
        },
    );
    b.host_region(t, region);
    b.mode(wrr());
    b.start().unwrap()
}

fn three_stages(gate: &Arc<Gate>, offset: u64) -> Vec<Stage> {
    vec![
        Stage::Run {
            operator: Arc::clone(gate) as Arc<dyn Operator>,
            engine: Some(EngineId(0)),
        },
        Stage::Dma {
            engine: EngineId(1),
            direction: Direction::Write,
            offset,
        },
        Stage::Egress { engine: EngineId(2) },
    ]
}

#[test]
fn a_pipeline_runs_its_stages_in_order_with_one_completion() {
    let sink = EgressSink::bind(true).unwrap();
    let region = Arc::new(HeapRegion::new(8192));
    let rt = pipeline_runtime(&sink, Arc::clone(&region), 64);
    let gate = Arc::new(Gate(Arc::new((Mutex::new(true), Condvar::new()))));
    let input = bytes(3000, 3);
    let (tx, rx) = crossbeam_channel::unbounded();
    let id = rt
        .tenant(isola_core::TenantId(0))
        .submit_stages_to(three_stages(&gate, 100), input.clone(), &tx)
        .unwrap();
    let c: Completion = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!((c.task, c.op.as_str(), c.bytes), (id, "gate", 3000));
    assert_eq!(
        c.result,
        Ok(Vec::new()),
        "the last stage (a send) passes nothing back"
    );
    assert_eq!(c.engine, EngineId(2), "its last stage's engine");
    assert!(c.latency_ns() >= c.service_ns, "latency spans every stage");
    assert!(region.to_vec()[100..3100] == input[..]);
    sink.wait_for(3000, Duration::from_secs(10));
    rt.shutdown();
    assert!(rx.try_recv().is_err(), "one completion, not one per stage");
    let (counts, kept) = sink.stop();
    assert_eq!((counts.bytes, counts.datagrams), (3000, 3));
    assert!(kept.concat() == input);
}

/// A stage's output is the next stage's input: a hash's 32-byte digest is
/// what the DMA stage writes, while the completion keeps the task's own
/// input size.
#[test]
fn the_next_stage_gets_the_previous_stages_output() {
    let sink = EgressSink::bind(false).unwrap();
    let region = Arc::new(HeapRegion::new(4096));
    let rt = pipeline_runtime(&sink, Arc::clone(&region), 64);
    let sha: Arc<dyn Operator> = Arc::from(isola_ops::build_operator("sha256", &BTreeMap::new()).unwrap());
    let input = bytes(5000, 11);
    let stages = vec![
        Stage::Run {
            operator: Arc::clone(&sha),
            engine: Some(EngineId(0)),
        },
        Stage::Dma {
            engine: EngineId(1),
            direction: Direction::Write,
            offset: 64,
        },
    ];
    let c = rt
        .tenant(isola_core::TenantId(0))
        .submit_stages(stages, input.clone())
        .unwrap()
        .wait();
    assert_eq!(
        (c.result, c.bytes, c.op.as_str()),
        (Ok(Vec::new()), 5000, "sha256")
    );
    let digest = sha.run(&input).unwrap();
    assert_eq!(digest.len(), 32);
    let got = region.to_vec();
    assert_eq!(&got[64..96], &digest[..]);
    assert!(got[..64].iter().chain(&got[96..]).all(|&b| b == 0));
    rt.shutdown();
}

#[test]
fn every_pipeline_task_completes_once_under_rejection_and_cancellation() {
    let sink = EgressSink::bind(false).unwrap();
    let region = Arc::new(HeapRegion::new(1 << 16));
    // Room for 4 queued tasks per engine: the rest are refused by the core.
    let rt = pipeline_runtime(&sink, region, 4);
    let open = Arc::new((Mutex::new(false), Condvar::new()));
    let gate = Arc::new(Gate(Arc::clone(&open)));
    let (tx, rx) = crossbeam_channel::unbounded();
    let t = rt.tenant(isola_core::TenantId(0));
    let ids: Vec<u64> = (0..40)
        .map(|i| {
            t.submit_stages_to(three_stages(&gate, i * 1000), bytes(1000, i), &tx)
                .unwrap()
        })
        .collect();
    // The gate opens while shutdown waits: the task it held finishes its
    // first stage after shutdown began, and ends there, cancelled.
    let opener = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
    });
    let stats = rt.shutdown_within(Duration::from_secs(10));
    opener.join().unwrap();
    drop(tx);
    let mut seen: HashMap<u64, Completion> = HashMap::new();
    for c in rx.iter() {
        assert!(seen.insert(c.task, c).is_none(), "a task completed twice");
    }
    assert_eq!(seen.len(), ids.len(), "every task completed");
    assert_eq!(stats[0].submitted, 40);
    let rejected = seen
        .values()
        .filter(|c| {
            matches!(
                c.result,
                Err(TaskError::Rejected(RejectReason::ChannelFull { .. }))
            )
        })
        .count();
    let cancelled = seen
        .values()
        .filter(|c| matches!(c.result, Err(TaskError::Cancelled)))
        .count();
    assert!(rejected >= 30, "{rejected} refused of 40 with room for 5");
    assert!(cancelled >= 1, "the queued and the gated tasks were cancelled");
    assert_eq!(
        rejected + cancelled,
        40,
        "none could finish every stage: shutdown came first"
    );
}
