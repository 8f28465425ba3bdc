//! Static partition (FairNIC, Grant et al., 2020): each tenant owns a fixed
//! share of the engine in proportion to its weight and never uses another's,
//! even when that one is idle. Strong isolation, not work-conserving. Two
//! forms, as FairNIC partitions a SmartNIC:
//!
//! * **Slots** (FairNIC's core partition): each tenant owns a number of
//!   slots, split by the largest-remainder method over all tenants so the
//!   counts add up to the engine's slots. Among tenants with a free slot of
//!   their own, turns go round robin. Needs a slot per tenant.
//! * **Time slices** (FairNIC on a shared accelerator; MTDA's related work,
//!   Sec. VII, describes it as "rate limiting of access to the fixed-function
//!   hardware accelerator unit"): time is cut into slices that go round the
//!   tenants in index order, tenant `i`'s slice lasting `slice x w_i / min w`,
//!   and only the slice's owner may start work, on every slot of the engine.
//!   An idle owner's slice is not lent. Tasks are not preempted, so a task is
//!   started only if its predicted cost fits in what is left of the slice,
//!   except the first of a slice, which always may start (else a task longer
//!   than a slice would never run): only that one can run past the slice's
//!   end, by less than its cost, and the next owner's slice is not extended
//!   (the overrun is the next owner's loss, as on hardware that cannot
//!   preempt). Used when the engine has fewer slots than tenants
//!   (`mode = "auto"`), or always with `mode = "slices"`.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::{ParamSpec, Params};
use crate::units::Nanos;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "mode",
        default: "auto",
        description: "`slots` (each tenant owns slots; needs slots >= tenants), `slices` (tenants take turns \
                      owning the whole engine for a time slice), or `auto` (slots when there are enough, else slices)",
    },
    ParamSpec {
        name: "slice",
        default: "auto",
        description: "time slice of the lightest tenant in ns (others' scale with weight); `auto` = the largest \
                      predicted task cost seen on the engine, so every slice can start one of its owner's tasks \
                      (DRR's quantum rule, Shreedhar & Varghese 1995)",
    },
];

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "static",
    aliases: &["fairnic"],
    description:
        "Static partition: each tenant owns slots (or, with fewer slots than tenants, time slices) in \
                  proportion to its weight; what it leaves idle is not lent.",
    source: "FairNIC (Grant et al., 2020)",
    work_conserving: false,
    params: PARAMS,
    build,
};

fn build(p: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    #[derive(Clone, Copy)]
    enum Mode {
        Auto,
        Slots,
        Slices,
    }
    let mode = p.choice(
        "mode",
        &[
            ("auto", Mode::Auto),
            ("slots", Mode::Slots),
            ("slices", Mode::Slices),
        ],
    )?;
    let slice = p.auto_or_positive("slice")?;
    let n = s.tenants.len();
    let slices = match mode {
        Mode::Slices => true,
        Mode::Slots => false,
        Mode::Auto => n > s.slots as usize,
    };
    if slices {
        return Ok(Box::new(TimeSlices::new(s, slice)));
    }
    let owned = partition(s).map_err(|reason| PolicyError::Infeasible {
        policy: INFO.name.into(),
        reason: format!("{reason} (mode = \"slices\" time-slices the engine instead)"),
    })?;
    Ok(Box::new(StaticPartition {
        ready: vec![false; owned.len()],
        owned,
        cursor: 0,
    }))
}

/// Slots owned by each tenant: largest remainder of `slots x w_i / sum w`.
pub fn partition(s: &PolicySetup<'_>) -> Result<Vec<u32>, String> {
    let n = s.tenants.len();
    if n > s.slots as usize {
        return Err(format!(
            "{n} tenants but only {} slots: every tenant needs a slot of its own",
            s.slots
        ));
    }
    let total: f64 = s.tenants.iter().map(|t| t.weight).sum();
    let exact: Vec<f64> = s
        .tenants
        .iter()
        .map(|t| s.slots as f64 * t.weight / total)
        .collect();
    let mut owned: Vec<u32> = exact.iter().map(|x| x.floor() as u32).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    let mut left = s.slots - owned.iter().sum::<u32>();
    for &i in order.iter().cycle().take(n * 2) {
        if left == 0 {
            break;
        }
        owned[i] += 1;
        left -= 1;
    }
    // Tenants that rounded down to zero take a slot from the largest owner.
    for i in 0..n {
        if owned[i] == 0 {
            let donor = (0..n).max_by_key(|&j| owned[j]).unwrap_or(i);
            if owned[donor] <= 1 {
                return Err("not enough slots for every tenant".into());
            }
            owned[donor] -= 1;
            owned[i] = 1;
        }
    }
    Ok(owned)
}

/// Static-partition state for one engine.
#[derive(Debug, Clone)]
pub struct StaticPartition {
    owned: Vec<u32>,
    ready: Vec<bool>,
    cursor: usize,
}

impl Policy for StaticPartition {
    fn on_ready(&mut self, _: Nanos, tenant: usize, _: &HeadInfo, _: &PolicyContext<'_>) {
        self.ready[tenant] = true;
    }

    fn admits(&self, tenant: usize, cx: &PolicyContext<'_>) -> bool {
        cx.in_flight[tenant] < self.owned[tenant]
    }

    fn pick(&mut self, _: Nanos, cx: &PolicyContext<'_>) -> Option<usize> {
        let n = self.owned.len();
        for k in 0..n {
            let t = (self.cursor + k) % n;
            if self.ready[t] && self.admits(t, cx) {
                self.cursor = (t + 1) % n;
                return Some(t);
            }
        }
        None
    }

    fn on_dispatch(
        &mut self,
        _: Nanos,
        tenant: usize,
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.ready[tenant] = next.is_some();
    }
}

/// Time-sliced static partition for one engine (see the module docs).
#[derive(Debug, Clone)]
pub struct TimeSlices {
    /// Each tenant's weight relative to the lightest.
    scale: Vec<f64>,
    /// The lightest tenant's slice in ns, if fixed; else `auto`.
    fixed: Option<f64>,
    /// The largest predicted task cost seen (the `auto` slice).
    largest: Nanos,
    ready: Vec<bool>,
    /// Predicted cost of each ready tenant's head.
    head_cost: Vec<Nanos>,
    /// The current slice: its owner, its end, and whether its owner
    /// started work in it; `None` until the first task is ready (the
    /// first slice, tenant 0's, starts then).
    slice: Option<(usize, Nanos, bool)>,
    /// The latest time a hook was given (for `admits`, which is not).
    now: Nanos,
}

impl TimeSlices {
    /// For `s`'s tenants, with the lightest tenant's slice `slice` ns
    /// (`None`: `auto`).
    pub fn new(s: &PolicySetup<'_>, slice: Option<f64>) -> Self {
        let n = s.tenants.len();
        let lightest = s.tenants.iter().map(|t| t.weight).fold(f64::INFINITY, f64::min);
        TimeSlices {
            scale: s.tenants.iter().map(|t| t.weight / lightest).collect(),
            fixed: slice,
            largest: 0,
            ready: vec![false; n],
            head_cost: vec![0; n],
            slice: None,
            now: 0,
        }
    }

    /// Length of tenant `t`'s slice (at least 1 ns).
    fn length(&self, t: usize) -> Nanos {
        let base = self.fixed.unwrap_or(self.largest as f64);
        crate::units::round_ns(base * self.scale[t]).max(1)
    }

    /// Moves the slice on to the one holding `now`, or starts the first
    /// (tenant 0's) at `now`.
    fn advance(&mut self, now: Nanos) {
        self.now = self.now.max(now);
        let n = self.scale.len();
        let Some((mut owner, mut end, mut started)) = self.slice else {
            self.slice = Some((0, now.saturating_add(self.length(0)), false));
            return;
        };
        if now >= end {
            // Whole rounds at once: a long idle spell costs one step.
            let round = (0..n).fold(0, |sum: Nanos, t| sum.saturating_add(self.length(t)));
            end += (now - end) / round * round;
        }
        while now >= end && end < Nanos::MAX {
            owner = (owner + 1) % n;
            // Saturates: a slice reaching the end of time never ends.
            end = end.saturating_add(self.length(owner));
            started = false;
        }
        self.slice = Some((owner, end, started));
    }

    /// Whether tenant `t`'s head may start now: it owns the slice, and the
    /// head fits in what is left of it or is the slice's first.
    fn may_start(&self, t: usize) -> bool {
        self.slice.is_some_and(|(owner, end, started)| {
            owner == t && (!started || self.now.saturating_add(self.head_cost[t]) <= end)
        })
    }

    fn note_head(&mut self, t: usize, head: &HeadInfo) {
        self.head_cost[t] = head.cost;
        self.largest = self.largest.max(head.cost);
    }
}

impl Policy for TimeSlices {
    fn on_ready(&mut self, now: Nanos, tenant: usize, head: &HeadInfo, _: &PolicyContext<'_>) {
        self.ready[tenant] = true;
        self.note_head(tenant, head);
        self.advance(now);
    }

    fn admits(&self, tenant: usize, _: &PolicyContext<'_>) -> bool {
        self.may_start(tenant)
    }

    fn pick(&mut self, now: Nanos, _: &PolicyContext<'_>) -> Option<usize> {
        self.advance(now);
        let (owner, _, _) = self.slice?;
        (self.ready[owner] && self.may_start(owner)).then_some(owner)
    }

    fn on_dispatch(
        &mut self,
        now: Nanos,
        tenant: usize,
        _: &HeadInfo,
        next: Option<&HeadInfo>,
        _: &PolicyContext<'_>,
    ) {
        self.advance(now);
        self.ready[tenant] = next.is_some();
        if let Some(h) = next {
            self.note_head(tenant, h);
        }
        if let Some((owner, _, started)) = &mut self.slice {
            *started |= *owner == tenant;
        }
    }

    /// The current slice's end, while anyone waits for a slice.
    fn next_tick(&self) -> Option<Nanos> {
        let (_, end, _) = self.slice?;
        self.ready.iter().any(|&r| r).then_some(end)
    }

    fn on_tick(&mut self, now: Nanos, _: &PolicyContext<'_>) {
        self.advance(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::TenantShare;
    use crate::tenant::TenantClass;

    fn shares(w: &[f64]) -> Vec<TenantShare> {
        w.iter()
            .map(|&weight| TenantShare {
                weight,
                class: TenantClass::BestEffort,
                latency: None,
            })
            .collect()
    }

    #[test]
    fn partition_follows_weights_and_adds_up() {
        let t = shares(&[1.0, 3.0]);
        assert_eq!(
            partition(&PolicySetup {
                tenants: &t,
                slots: 8
            })
            .unwrap(),
            vec![2, 6]
        );
        let t = shares(&[1.0, 1.0, 1.0]);
        let p = partition(&PolicySetup {
            tenants: &t,
            slots: 8,
        })
        .unwrap();
        assert_eq!(p.iter().sum::<u32>(), 8);
        assert!(p.iter().all(|&s| s == 2 || s == 3));
        let t = shares(&[1.0, 100.0]);
        assert_eq!(
            partition(&PolicySetup {
                tenants: &t,
                slots: 4
            })
            .unwrap(),
            vec![1, 3]
        );
        assert!(partition(&PolicySetup {
            tenants: &t,
            slots: 1
        })
        .is_err());
    }

    use crate::engine::EngineKind;
    use crate::policy::test_support::{scheduler, serve, submit};
    use crate::tenant::Slo;

    /// Engine time per tenant over `[0, until)` on a one-slot engine
    /// under time slices of `slice` ns, with `tasks` tasks of `cost` ns
    /// queued at 0 per tenant (0: that tenant stays idle).
    fn engine_shares(weights: &[f64], slice: &str, cost: u64, tasks: &[u64], until: Nanos) -> Vec<f64> {
        let slos: Vec<Slo> = weights.iter().map(|&w| Slo::weighted(w)).collect();
        let mut s = scheduler(
            "static",
            EngineKind::Accelerator,
            1,
            None,
            &slos,
            &[("slice", slice)],
        );
        let mut id = 0;
        for (t, &count) in tasks.iter().enumerate() {
            for _ in 0..count {
                submit(&mut s, 0, id, t, cost);
                id += 1;
            }
        }
        let (_, served) = serve(&mut s, 0, until, |_, _| {});
        let mut busy = vec![0.0; weights.len()];
        for (start, t, d) in served {
            // Only the part of each task inside the window counts.
            busy[t] += (start + d.predicted).min(until).saturating_sub(start) as f64;
        }
        busy.iter().map(|b| b / until as f64).collect()
    }

    /// Two backlogged tenants of equal weight, 10 us slices, 3 us tasks:
    /// each slice starts floor(10/3) = 3 tasks of its owner (a fourth would
    /// run past the slice's end), so each tenant gets 9/20 of the engine
    /// and 1/10 is left idle, over 50 rounds of slices.
    #[test]
    fn backlogged_tenants_split_the_engine_by_slices() {
        let got = engine_shares(&[1.0, 1.0], "10000", 3_000, &[1_000, 1_000], 1_000_000);
        for g in &got {
            assert!((g - 0.45).abs() < 0.005, "{got:?}");
        }
        // Tasks that tile the slice: exactly half each.
        let got = engine_shares(&[1.0, 1.0], "10000", 1_000, &[1_000, 1_000], 1_000_000);
        for g in &got {
            assert!((g - 0.5).abs() < 0.005, "{got:?}");
        }
    }

    /// Not work-conserving: with the other tenant idle, a backlogged tenant
    /// still gets only its slices (9/20 of the engine, not all of it).
    /// Weights 1:3 make slices of 10 and 30 us: 3 and 10 tasks of 3 us
    /// per 40 us round, 9/40 and 30/40 of the engine.
    #[test]
    fn an_idle_owners_slice_is_not_lent_and_weights_scale_slices() {
        let got = engine_shares(&[1.0, 1.0], "10000", 3_000, &[1_000, 0], 1_000_000);
        assert!((got[0] - 0.45).abs() < 0.005, "{got:?}");
        assert_eq!(got[1], 0.0);
        let got = engine_shares(&[1.0, 3.0], "10000", 3_000, &[1_000, 1_000], 1_000_000);
        assert!((got[0] - 9.0 / 40.0).abs() < 0.005, "{got:?}");
        assert!((got[1] - 30.0 / 40.0).abs() < 0.005, "{got:?}");
    }

    /// `auto` sizes the slice to the largest task, so each slice holds one
    /// 5 us task: half each. More slots than tenants keep the slot
    /// partition unless `slices` is asked for; fewer pick slices.
    #[test]
    fn auto_slice_and_mode() {
        let got = engine_shares(&[1.0, 1.0], "auto", 5_000, &[500, 500], 1_000_000);
        for g in &got {
            assert!((g - 0.5).abs() < 0.01, "{got:?}");
        }
        let t = shares(&[1.0, 1.0]);
        let params = |mode: &str| -> std::collections::BTreeMap<String, String> {
            [("mode".to_string(), mode.to_string())].into()
        };
        for (mode, slots, ok) in [("auto", 1, true), ("slots", 1, false), ("slices", 4, true)] {
            let given = params(mode);
            let p = Params::new("policy `static`", PARAMS, &given).unwrap();
            let built = build(&p, &PolicySetup { tenants: &t, slots });
            assert_eq!(built.is_ok(), ok, "{mode} on {slots} slots");
        }
    }

    /// Extreme weights and slices saturate instead of overflowing: the
    /// heaviest tenant's slice outlasts the run, the lightest keeps its
    /// first slice (3 tasks of 3 us in 10 us).
    #[test]
    fn extreme_slices_saturate() {
        let got = engine_shares(&[1e-6, 1e6], "10000", 3_000, &[1_000, 1_000], 1_000_000);
        assert!((got[0] - 0.009).abs() < 1e-9, "{got:?}");
        assert!(got[1] > 0.98, "{got:?}");
        let got = engine_shares(&[1.0, 1.0], "1e300", 3_000, &[10, 10], 1_000_000);
        assert_eq!(got[1], 0.0, "{got:?}");
    }
}
