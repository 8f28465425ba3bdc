//! Workload generators: when a tenant's tasks arrive (open loop: Poisson,
//! constant, uniform, on/off bursts, trace replay; closed loop: N
//! outstanding) and how large they are (fixed, uniform, lognormal clipped to
//! a range, empirical), and the 5-tuples their packets carry. Samplers are
//! `rand_distr`'s.

use crate::rng::{stream, Purpose};
use isola_core::{Nanos, OpRef, OpSpec, NANOS_PER_SEC};
use isola_model::ingress::FiveTuple;
use isola_model::scenario::{ArrivalSpec, FlowMatch, SizeDist};
use rand::distr::weighted::WeightedIndex;
use rand::RngExt;
use rand_distr::{Distribution, Exp, Exp1, LogNormal};
use rand_pcg::Pcg64Mcg;
use std::net::Ipv4Addr;

/// Draws task sizes.
#[derive(Debug, Clone)]
pub struct SizeSampler {
    dist: SizeKind,
    rng: Pcg64Mcg,
}

#[derive(Debug, Clone)]
enum SizeKind {
    Fixed(u64),
    Uniform(u64, u64),
    LogNormal(LogNormal<f64>, u64, u64),
    Empirical(Vec<u64>, WeightedIndex<f64>),
}

impl SizeSampler {
    /// A sampler for `dist` drawing from `tenant`'s size stream.
    pub fn new(dist: &SizeDist, seed: u64, tenant: usize) -> Self {
        let dist = match dist {
            SizeDist::Fixed(b) => SizeKind::Fixed(*b),
            SizeDist::Uniform { min, max } => SizeKind::Uniform(*min, *max),
            // The scenario checked sigma >= 0 and finite mu, which LogNormal accepts.
            SizeDist::LogNormal { mu, sigma, min, max } => SizeKind::LogNormal(
                LogNormal::new(*mu, *sigma).expect("checked parameters"),
                *min,
                *max,
            ),
            // The scenario checked weights: non-negative, finite, not all zero.
            SizeDist::Empirical(points) => SizeKind::Empirical(
                points.iter().map(|p| p.0).collect(),
                WeightedIndex::new(points.iter().map(|p| p.1)).expect("checked weights"),
            ),
        };
        SizeSampler {
            dist,
            rng: stream(seed, tenant, Purpose::Sizes),
        }
    }

    /// The next size.
    #[inline]
    pub fn sample(&mut self) -> u64 {
        match &self.dist {
            SizeKind::Fixed(b) => *b,
            SizeKind::Uniform(lo, hi) => self.rng.random_range(*lo..=*hi),
            SizeKind::LogNormal(d, lo, hi) => crate::round_ns(d.sample(&mut self.rng)).clamp(*lo, *hi),
            SizeKind::Empirical(sizes, w) => sizes[w.sample(&mut self.rng)],
        }
    }
}

/// The next arrival of an open-loop tenant.
#[derive(Debug, Clone, PartialEq)]
pub struct NextArrival {
    /// When it arrives.
    pub at: Nanos,
    /// Its size and operator when a trace fixes them.
    pub traced: Option<(u64, OpRef)>,
}

/// Produces arrival times for one open-loop tenant.
#[derive(Debug, Clone)]
pub struct ArrivalProcess {
    kind: ArrivalKind,
    rng: Pcg64Mcg,
    /// Time of the previous arrival (or the start).
    last: f64,
    /// The workload's start.
    origin: f64,
    started: bool,
    trace_pos: usize,
}

#[derive(Debug, Clone)]
enum ArrivalKind {
    Poisson(Exp<f64>),
    Constant(f64),
    Uniform(f64),
    OnOff {
        on: f64,
        off: f64,
        exp: Exp<f64>,
    },
    /// Step start times (absolute) and the unit exponential's scale (ns per
    /// task) in each step.
    Steps(Vec<(f64, f64)>),
    /// A trace's rows: time, size and operator (interned once here, not
    /// per arrival).
    Trace(Vec<(Nanos, u64, OpRef)>),
    Closed,
}

fn gap_ns(rate_per_sec: f64) -> f64 {
    NANOS_PER_SEC as f64 / rate_per_sec
}

impl ArrivalProcess {
    /// The arrivals of `spec` from `start`, drawing from `tenant`'s stream.
    pub fn new(spec: &ArrivalSpec, start: Nanos, seed: u64, tenant: usize) -> Self {
        // Rates were checked > 0, so every Exp parameter is valid.
        let exp = |rate: f64| Exp::new(1.0 / gap_ns(rate)).expect("rate > 0");
        let kind = match spec {
            ArrivalSpec::Poisson(r) => ArrivalKind::Poisson(exp(*r)),
            ArrivalSpec::Constant(r) => ArrivalKind::Constant(gap_ns(*r)),
            ArrivalSpec::Uniform(r) => ArrivalKind::Uniform(gap_ns(*r)),
            ArrivalSpec::OnOff { on, off, rate } => ArrivalKind::OnOff {
                on: *on as f64,
                off: *off as f64,
                exp: exp(*rate),
            },
            ArrivalSpec::Steps(steps) => ArrivalKind::Steps(
                steps
                    .iter()
                    .map(|&(from, rate)| (start as f64 + from as f64, gap_ns(rate)))
                    .collect(),
            ),
            ArrivalSpec::Trace(rows) => ArrivalKind::Trace(
                rows.iter()
                    .map(|row| (row.time, row.bytes, OpSpec::named(&row.op)))
                    .collect(),
            ),
            ArrivalSpec::Closed(_) => ArrivalKind::Closed,
        };
        ArrivalProcess {
            kind,
            rng: stream(seed, tenant, Purpose::Arrivals),
            last: start as f64,
            origin: start as f64,
            started: false,
            trace_pos: 0,
        }
    }

    /// The next arrival, or `None` when the process has no more (a trace
    /// ran out, or the tenant is closed-loop).
    pub fn next_arrival(&mut self) -> Option<NextArrival> {
        let start = self.last;
        let first = !self.started;
        self.started = true;
        let at = match &self.kind {
            ArrivalKind::Closed => return None,
            ArrivalKind::Trace(rows) => {
                let &(at, bytes, op) = rows.get(self.trace_pos)?;
                self.trace_pos += 1;
                return Some(NextArrival {
                    at,
                    traced: Some((bytes, op)),
                });
            }
            ArrivalKind::Poisson(e) => start + e.sample(&mut self.rng),
            ArrivalKind::Constant(g) => start + if first { 0.0 } else { *g },
            ArrivalKind::Uniform(g) => start + self.rng.random_range(0.0..=2.0 * g),
            ArrivalKind::OnOff { on, off, exp } => {
                // A Poisson process in on-time: time that falls in an off
                // period is carried into the next on period. Periods count
                // from the workload's start.
                // Maps wall time to on-time and back in closed form, so a
                // gap spanning many periods costs no more than one.
                let (on, off) = (*on, *off);
                let period = on + off;
                let since = (start - self.origin).max(0.0);
                let cycles = (since / period).floor();
                let on_time = cycles * on + (since - cycles * period).min(on);
                let target = on_time + exp.sample(&mut self.rng);
                let cycles = (target / on).floor();
                self.origin + cycles * period + (target - cycles * on)
            }
            ArrivalKind::Steps(steps) => {
                // Exact piecewise-constant Poisson: a gap drawn at one rate
                // that crosses into the next step is redrawn from the step's
                // start at the new rate (memorylessness makes this exact).
                let mut t = start;
                loop {
                    let i = steps.partition_point(|&(from, _)| from <= t).saturating_sub(1);
                    let unit: f64 = Exp1.sample(&mut self.rng);
                    let next = t + unit * steps[i].1;
                    match steps.get(i + 1) {
                        Some(&(from, _)) if next > from => t = from,
                        _ => break next,
                    }
                }
            }
        };
        self.last = at;
        Some(NextArrival {
            at: crate::round_ns(at),
            traced: None,
        })
    }
}

/// The flow (its place in the source ports' sequence) of the packet
/// issued `issued`-th at `now` by a workload with `flows` flows, each
/// replaced after `life`: without `flows` a new flow per packet; with
/// them, the packets take the flows in turn, and flow `j` of `k` is in its
/// `g`-th life (a new port each) from `g x life - j x life / k`, so the
/// flows end one at a time, evenly over a life (flow churn).
pub fn flow_seq(issued: u64, flows: Option<u32>, life: Option<Nanos>, now: Nanos) -> u64 {
    let Some(k) = flows.map(u64::from) else {
        return issued;
    };
    let j = issued % k;
    match life {
        Some(life) if life > 0 => (now + j * life / k) / life * k + j,
        _ => j,
    }
}

/// The 5-tuple of packet number `seq` of tenant `tenant`'s workload, whose
/// flow is `flow` (fields it leaves out get defaults derived from the
/// tenant's index: 10.0.t.1 -> 10.255.0.1, UDP, destination port 4000 + t,
/// and a source port that changes per packet as a flow's sockets would).
pub fn packet_tuple(flow: Option<&FlowMatch>, tenant: usize, seq: u64) -> FiveTuple {
    let f = flow.copied().unwrap_or_default();
    FiveTuple {
        src_ip: f.src_ip.unwrap_or(Ipv4Addr::new(10, 0, (tenant % 256) as u8, 1)),
        dst_ip: f.dst_ip.unwrap_or(Ipv4Addr::new(10, 255, 0, 1)),
        src_port: f.src_port.unwrap_or(1024 + (seq % 60_000) as u16),
        dst_port: f.dst_port.unwrap_or(4000u16.wrapping_add(tenant as u16)),
        proto: f.proto.unwrap_or(17),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stepped_rates_hold_in_each_step() {
        // 100k/s for 100 ms from the start at 1 ms, then 1M/s.
        let spec = ArrivalSpec::Steps(vec![(0, 1e5), (100_000_000, 1e6)]);
        let mut p = ArrivalProcess::new(&spec, 1_000_000, 3, 0);
        let times: Vec<Nanos> = (0..110_000).map(|_| p.next_arrival().unwrap().at).collect();
        assert!(times[0] >= 1_000_000);
        let first = times.iter().filter(|&&t| t < 101_000_000).count() as f64;
        // ~10,000 in the first step (Poisson: sd 100; within 4 sd).
        assert!((first - 10_000.0).abs() < 400.0, "{first}");
        // The next 100k arrive at 1M/s: ~100 ms (within 1.5%).
        let span = (times[109_999] - 101_000_000) as f64 / 1e8;
        assert!((span - 1.0).abs() < 0.015, "{span}");
    }

    #[test]
    fn poisson_rate_and_constant_spacing() {
        let mut p = ArrivalProcess::new(&ArrivalSpec::Poisson(1e6), 0, 1, 0);
        let mut last = 0;
        for _ in 0..100_000 {
            last = p.next_arrival().unwrap().at;
        }
        // 100k arrivals at 1M/s take ~100 ms (within 1.5%: 4.7 standard deviations).
        assert!((last as f64 / 1e8 - 1.0).abs() < 0.015, "{last}");
        let mut c = ArrivalProcess::new(&ArrivalSpec::Constant(1e6), 500, 1, 0);
        let times: Vec<_> = (0..3).map(|_| c.next_arrival().unwrap().at).collect();
        assert_eq!(times, vec![500, 1500, 2500]);
    }

    #[test]
    fn on_off_only_arrives_in_on_periods() {
        let spec = ArrivalSpec::OnOff {
            on: 1000,
            off: 3000,
            rate: 1e8,
        };
        let mut p = ArrivalProcess::new(&spec, 0, 3, 0);
        for _ in 0..10_000 {
            let t = p.next_arrival().unwrap().at;
            assert!(t % 4000 <= 1000, "{t}");
        }
    }

    /// The rate over whole periods is `rate x on / (on + off)`, and a gap
    /// spanning many periods costs one step: 1 ns on in every second
    /// (issue 14's reproducer looped once per nanosecond of each gap).
    #[test]
    fn on_off_keeps_its_average_rate_whatever_the_periods() {
        let spec = ArrivalSpec::OnOff {
            on: 1000,
            off: 3000,
            rate: 1e8,
        };
        let mut p = ArrivalProcess::new(&spec, 0, 3, 0);
        let last = (0..100_000).map(|_| p.next_arrival().unwrap().at).last().unwrap();
        // 100k arrivals at 1e8/s over a quarter of the time: ~4 ms (1.5%).
        assert!((last as f64 / 4e6 - 1.0).abs() < 0.015, "{last}");
        let sparse = ArrivalSpec::OnOff {
            on: 1,
            off: 1_000_000_000,
            rate: 1e3,
        };
        let mut p = ArrivalProcess::new(&sparse, 0, 3, 0);
        let t = p.next_arrival().unwrap().at;
        assert!(t % 1_000_000_001 <= 1, "{t}");
        // Mean on-time gap 1 ms = 10^6 periods of 1 s: ~11.6 days.
        assert!(t > 1_000_000_000, "{t}");
    }

    #[test]
    fn sizes_stay_in_range() {
        let mut s = SizeSampler::new(
            &SizeDist::LogNormal {
                mu: 8.0,
                sigma: 1.0,
                min: 1000,
                max: 4096,
            },
            1,
            0,
        );
        for _ in 0..1000 {
            assert!((1000..=4096).contains(&s.sample()));
        }
        let mut e = SizeSampler::new(&SizeDist::Empirical(vec![(64, 0.0), (128, 1.0)]), 1, 0);
        assert!((0..100).all(|_| e.sample() == 128));
    }

    /// Without a life a workload's k flows are the same all run; with one,
    /// each flow keeps its port for a whole life and takes a new one
    /// after it, the k flows renewing one at a time, life / k apart.
    #[test]
    fn flows_are_renewed_once_a_life_one_at_a_time() {
        let (k, life) = (4u32, 1_000u64);
        assert_eq!(flow_seq(9, None, Some(life), 5_000), 9);
        for now in [0, 999, 123_456] {
            assert_eq!(flow_seq(6, Some(k), None, now), 2);
        }
        // Flow j's port within one life, and the next life's.
        let at = |j: u64, now: u64| flow_seq(j, Some(k), Some(life), now);
        for j in 0..4u64 {
            let renews = life - j * life / 4;
            assert_eq!(at(j, 0), at(j, renews - 1), "flow {j} keeps its port");
            assert_eq!(at(j, renews), at(j, 0) + 4, "flow {j} renews at {renews}");
        }
        // Over 10 lives each flow has 10 or 11 ports, 40 or so in all.
        let ports: std::collections::BTreeSet<u64> = (0..10_000u64).map(|t| at(t % 4, t)).collect();
        assert!((40..=44).contains(&ports.len()), "{}", ports.len());
    }

    #[test]
    fn packet_tuples_default_per_tenant_and_vary_source_ports() {
        let a = packet_tuple(None, 3, 1);
        assert_eq!(a.src_ip, Ipv4Addr::new(10, 0, 3, 1));
        assert_eq!((a.dst_port, a.proto), (4003, 17));
        assert_ne!(a.src_port, packet_tuple(None, 3, 2).src_port);
        let flow = FlowMatch {
            dst_port: Some(4791),
            src_port: Some(7),
            ..FlowMatch::default()
        };
        let b = packet_tuple(Some(&flow), 3, 2);
        assert_eq!((b.src_port, b.dst_port), (7, 4791));
    }
}
