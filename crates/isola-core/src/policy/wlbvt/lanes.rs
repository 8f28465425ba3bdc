//! WLBVT's ready tenants as blocks of structures of arrays, and the decision
//! over them as a data-parallel scan.
//!
//! OSMOSIS' hardware compares every FMQ in one comparator tree each cycle
//! (the WLBVT section and Listing 1 of the paper). The software equivalent is
//! a scan without loop-carried dependencies over the values the rule reads,
//! so the compiler turns the loop into SIMD on the baseline x86-64 target
//! (SSE2, two `f64` lanes). The same code is also compiled for AVX2 and
//! AVX-512 and chosen at run time where the CPU has them: the divisions
//! bound the scan, and wider registers divide more lanes at once. No fused
//! multiply-add is enabled, so every version computes the same keys.
//!
//! The lanes are stored as blocks of sixteen, each field's sixteen values
//! contiguous (an array of structures of arrays): the scan reads one
//! sequential stream of adjacent cache lines, which matters in the
//! simulator, whose own state evicts the lanes from L1 between decisions.
//! The last block is padded with lanes that can never win, so the pass has
//! no scalar remainder: with six separate arrays, the up to fifteen lanes
//! past the last multiple of sixteen took a loop-carried scalar fold that
//! cost more than the vector pass (`perf annotate` of `isola bench sim` at
//! 128 tenants, ~122 ready: ~40% of the pick's samples). Measured in
//! docs/perf.md ("wlbvt's lanes in the simulator").
//!
//! The decision is one pass: each ready tenant's
//! key, its `tput / w` if it is under its slot limit, else `+inf` (branch-free,
//! no data-dependent control flow), folded into the smallest (key, head
//! sequence number) pair of one of sixteen independent accumulators, so the
//! loop vectorises into divisions and blends (the lexicographic minimum over
//! non-NaN keys is exact, associative and commutative, so the grouping does
//! not change the result). The accumulators are then combined by two
//! branch-free reductions (the smallest key, then the smallest sequence
//! number among those holding it), and
//! the one lane with the winning sequence number found eight lanes a step.
//! An earlier form stored the keys and made two more passes for the minimum
//! and the tie; the single pass takes 0.88x its time at 128 tenants and
//! 0.82x at 1,024 (`SCHEDULER_NEXT_MIN`, docs/perf.md).
//!
//! Below sixteen ready tenants (less than one round of the vector pass)
//! one scalar pass keeps the smallest (key, sequence number) instead: the
//! same keys and order, so the same decision, without the accumulators' fixed cost.
//!
//! Each key is one correctly rounded division of the numerator (occupancy
//! up to now) by the denominator (active time up to now, times `w`), both
//! computed with the same operations, so rounded the same way, as in the
//! sequential scan ([`super::reference`]). That scan compares cross
//! products instead of quotients; both orders are the exact order of the
//! true ratios except where two ratios differ by less than one rounding
//! step, and they agree wherever the arithmetic is exact (integer times and
//! occupancies below 2^53, weights with short binary expansions), which the
//! equivalence test checks on random histories.

use crate::units::Nanos;

/// Slack in the slot-limit comparison, absorbing the rounding of
/// `slots x w / W` when it is an exact integer (see [`super`]).
pub(super) const LIMIT_EPSILON: f64 = 1e-9;

/// Width of the independent accumulators of the minimum: sixteen `f64`s are
/// two AVX-512 registers (four AVX2, eight of SSE2's sixteen), enough
/// independent compare-and-blend chains to hide their latency. Measured
/// against eight: 0.96x per decision at 128 tenants, 0.82x at 1,024; an
/// earlier form against four: 0.77x at 1,024 (`SCHEDULER_NEXT_MIN`,
/// docs/perf.md).
const ACCUMULATORS: usize = 16;

/// What the scan needs of one ready tenant, copied from its accounting
/// whenever that changes (see [`ReadyLanes::set`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Lane {
    /// The tenant's index.
    pub(super) tenant: u32,
    /// When `occupancy` and `active_time` were last brought up to date (ns).
    pub(super) updated: f64,
    /// Integral of slots occupied over time (slot x ns) up to `updated`.
    pub(super) occupancy: f64,
    /// Time with queued work or work in service (ns) up to `updated`.
    pub(super) active_time: f64,
    /// Dispatches in service.
    pub(super) running: f64,
    /// The tenant's weight.
    pub(super) weight: f64,
    /// Submission sequence number of its head task (ties: smaller wins),
    /// as an `f64` so the tie vectorises like the keys (exact below
    /// 2^53 tasks, i.e. always in practice; checked in debug builds).
    pub(super) head_seq: f64,
}

/// Lanes in one [`Block`]: one accumulator each, so a block is one round of
/// the vector pass.
const BLOCK: usize = ACCUMULATORS;

/// [`BLOCK`] consecutive lanes, each field's values contiguous: the scan
/// reads one block after another, one sequential stream of adjacent cache
/// lines (768 B, twelve lines, a block) instead of six separate arrays.
/// Lanes past the last ready tenant hold [`PADDING`].
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Block {
    updated: [f64; BLOCK],
    occupancy: [f64; BLOCK],
    active_time: [f64; BLOCK],
    running: [f64; BLOCK],
    weight: [f64; BLOCK],
    head_seq: [f64; BLOCK],
}

/// An unused lane: `running = +inf` fails every slot limit (the comparison
/// is false even when `share x w` is NaN), so the key is `+inf`, and a
/// `+inf` sequence number never displaces an accumulator, never matches a
/// winner's (finite) one.
const PADDING_LANE: Lane = Lane {
    tenant: 0,
    updated: 0.0,
    occupancy: 0.0,
    active_time: 0.0,
    running: f64::INFINITY,
    weight: 0.0,
    head_seq: f64::INFINITY,
};

/// A block of unused lanes ([`PADDING_LANE`]).
const PADDING: Block = Block {
    updated: [PADDING_LANE.updated; BLOCK],
    occupancy: [PADDING_LANE.occupancy; BLOCK],
    active_time: [PADDING_LANE.active_time; BLOCK],
    running: [PADDING_LANE.running; BLOCK],
    weight: [PADDING_LANE.weight; BLOCK],
    head_seq: [PADDING_LANE.head_seq; BLOCK],
};

/// Ready tenants, densely (lane `i` is lane `i % BLOCK` of block
/// `i / BLOCK`), as blocks of [`Lane`]s' fields.
#[derive(Debug, Clone, Default)]
pub(super) struct ReadyLanes {
    tenant: Vec<u32>,
    blocks: Vec<Block>,
}

impl ReadyLanes {
    /// Room for `n` ready tenants without reallocating.
    pub(super) fn with_capacity(n: usize) -> Self {
        ReadyLanes {
            tenant: Vec::with_capacity(n),
            blocks: Vec::with_capacity(n.div_ceil(BLOCK)),
        }
    }

    /// Number of ready tenants.
    pub(super) fn len(&self) -> usize {
        self.tenant.len()
    }

    /// The ready tenants, in lane order.
    pub(super) fn tenants(&self) -> &[u32] {
        &self.tenant
    }

    /// Whether no tenant is ready.
    pub(super) fn is_empty(&self) -> bool {
        self.tenant.is_empty()
    }

    /// Appends `lane`; returns its position.
    pub(super) fn push(&mut self, lane: Lane) -> usize {
        let pos = self.len();
        if pos % BLOCK == 0 {
            self.blocks.push(PADDING);
        }
        self.tenant.push(lane.tenant);
        self.write(pos, &lane);
        pos
    }

    /// Overwrites the lane at `pos`.
    pub(super) fn set(&mut self, pos: usize, lane: Lane) {
        self.tenant[pos] = lane.tenant;
        self.write(pos, &lane);
    }

    /// Removes the lane at `pos`, moving the last lane into its place;
    /// returns the tenant of the moved lane, if one moved.
    pub(super) fn swap_remove(&mut self, pos: usize) -> Option<u32> {
        let last = self.len() - 1;
        if pos != last {
            let moved = self.read(last);
            self.write(pos, &moved);
        }
        self.tenant.swap_remove(pos);
        if last % BLOCK == 0 {
            self.blocks.pop();
        } else {
            self.write(last, &PADDING_LANE);
        }
        self.tenant.get(pos).copied()
    }

    /// Lane `pos`.
    fn read(&self, pos: usize) -> Lane {
        let (b, j) = (&self.blocks[pos / BLOCK], pos % BLOCK);
        Lane {
            tenant: self.tenant[pos],
            updated: b.updated[j],
            occupancy: b.occupancy[j],
            active_time: b.active_time[j],
            running: b.running[j],
            weight: b.weight[j],
            head_seq: b.head_seq[j],
        }
    }

    /// Writes `lane`'s scanned fields into lane `pos`.
    #[inline]
    fn write(&mut self, pos: usize, lane: &Lane) {
        let (b, j) = (&mut self.blocks[pos / BLOCK], pos % BLOCK);
        b.updated[j] = lane.updated;
        b.occupancy[j] = lane.occupancy;
        b.active_time[j] = lane.active_time;
        b.running[j] = lane.running;
        b.weight[j] = lane.weight;
        b.head_seq[j] = lane.head_seq;
    }

    /// The ready tenant with the lowest `tput / w` at `now` among those with
    /// `running < share x w` (`share` = slots / sum of ready weights), ties
    /// to the oldest head; `None` if every ready tenant is at its limit.
    pub(super) fn pick(&self, now: Nanos, share: f64) -> Option<usize> {
        if self.len() < BLOCK {
            return self.pick_few(now as f64, share);
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has the features the function is compiled for.
                return unsafe { self.pick_avx512(now, share) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { self.pick_avx2(now, share) };
            }
        }
        self.pick_portable(now, share)
    }

    /// [`Self::pick`] compiled for AVX-512 (eight `f64` lanes).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    fn pick_avx512(&self, now: Nanos, share: f64) -> Option<usize> {
        self.pick_portable(now, share)
    }

    /// [`Self::pick`] compiled for AVX2 (four `f64` lanes).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn pick_avx2(&self, now: Nanos, share: f64) -> Option<usize> {
        self.pick_portable(now, share)
    }

    /// [`Self::pick`] for the build's target (SSE2 on baseline x86-64). The
    /// wider versions are this same code compiled with more features; every
    /// operation in it is correctly rounded IEEE 754 (no fused multiply-add),
    /// so all of them compute the same keys and make the same decision.
    #[inline(always)]
    pub(super) fn pick_portable(&self, now: Nanos, share: f64) -> Option<usize> {
        let now = now as f64;
        // One pass: each lane's key, folded into the smallest (key, head
        // sequence number) of its accumulator. Lexicographic minimum is
        // associative and commutative, so the grouping into accumulators
        // does not change the result; NaN keys are never smaller nor equal,
        // so never chosen (as in a comparison scan); padding lanes' keys
        // and sequence numbers are `+inf`, so they change nothing.
        let mut best_key = [f64::INFINITY; ACCUMULATORS];
        let mut best_seq = [f64::INFINITY; ACCUMULATORS];
        for b in &self.blocks {
            for j in 0..BLOCK {
                let k = key(
                    now,
                    share,
                    b.updated[j],
                    b.occupancy[j],
                    b.active_time[j],
                    b.running[j],
                    b.weight[j],
                );
                fold(&mut best_key[j], &mut best_seq[j], k, b.head_seq[j]);
            }
        }
        // The smallest key over the accumulators, then the smallest
        // sequence number among those holding it: the lexicographic minimum,
        // as two reductions of four fixed-width steps each (vector minima
        // and blends, no data-dependent branch).
        let min_key = min_of(best_key);
        if min_key == f64::INFINITY {
            return None;
        }
        let min_seq = min_of(std::array::from_fn(|j| {
            if best_key[j] == min_key {
                best_seq[j]
            } else {
                f64::INFINITY
            }
        }));
        // Sequence numbers are distinct: find the one lane that has it, one
        // branch per chunk.
        for (i, b) in self.blocks.iter().enumerate() {
            for (c, seqs) in b.head_seq.chunks_exact(SEARCH_CHUNK).enumerate() {
                if seqs.iter().fold(false, |hit, &s| hit | (s == min_seq)) {
                    let at = seqs.iter().position(|&s| s == min_seq)?;
                    return Some(self.tenant[i * BLOCK + c * SEARCH_CHUNK + at] as usize);
                }
            }
        }
        None
    }

    /// [`Self::pick`] for fewer tenants than one round of the vector pass
    /// needs (all in the first block): one scalar pass keeping the smallest
    /// (key, sequence number), from the same keys, so the same decision.
    #[inline(always)]
    fn pick_few(&self, now: f64, share: f64) -> Option<usize> {
        let b = self.blocks.first()?;
        let mut best = (f64::INFINITY, f64::INFINITY, usize::MAX);
        for i in 0..self.len() {
            let k = key(
                now,
                share,
                b.updated[i],
                b.occupancy[i],
                b.active_time[i],
                b.running[i],
                b.weight[i],
            );
            let s = b.head_seq[i];
            if k < best.0 || (k == best.0 && s < best.1) {
                best = (k, s, i);
            }
        }
        (best.0 < f64::INFINITY).then(|| self.tenant[best.2] as usize)
    }
}

/// A ready tenant's key at `now`: its `tput / w` if it is under its slot
/// limit (`running < share x w`), else `+inf`. The same operations, in the
/// same order, as the sequential scan: integrate from `updated` to `now` (a
/// ready tenant is active throughout), zero before any active time.
#[inline(always)]
fn key(
    now: f64,
    share: f64,
    updated: f64,
    occupancy: f64,
    active_time: f64,
    running: f64,
    weight: f64,
) -> f64 {
    let dt = now - updated;
    let dt = if dt > 0.0 { dt } else { 0.0 };
    let active = active_time + dt;
    let num = occupancy + running * dt;
    let ratio = if active > 0.0 {
        num / (active * weight)
    } else {
        0.0
    };
    if running + LIMIT_EPSILON < share * weight {
        ratio
    } else {
        f64::INFINITY
    }
}

/// Lanes compared at once when searching for a value: one branch per chunk
/// instead of per lane.
const SEARCH_CHUNK: usize = 8;

/// The smallest of `v` (none is NaN), pairwise in halves: four dependent
/// steps, each of a fixed width so that it is one vector operation.
#[inline(always)]
fn min_of(mut v: [f64; ACCUMULATORS]) -> f64 {
    min_half::<8>(&mut v);
    min_half::<4>(&mut v);
    min_half::<2>(&mut v);
    min_half::<1>(&mut v);
    v[0]
}

/// `v[j] = min(v[j], v[j + W])` for `j < W`.
#[inline(always)]
fn min_half<const W: usize>(v: &mut [f64; ACCUMULATORS]) {
    for j in 0..W {
        v[j] = if v[j + W] < v[j] { v[j + W] } else { v[j] };
    }
}

/// Folds `(k, s)` into the smallest `(key, seq)` so far, lexicographically
/// and without branches (the loop vectorises into blends).
#[inline(always)]
fn fold(key: &mut f64, seq: &mut f64, k: f64, s: f64) {
    let smaller = k < *key;
    let tied = k == *key;
    // Two selects, as the compiler blends them (one combined condition
    // measured 1.15x slower at 128 tenants).
    #[allow(clippy::if_same_then_else)]
    let next_seq = if smaller {
        s
    } else if tied && s < *seq {
        s
    } else {
        *seq
    };
    *seq = next_seq;
    *key = if smaller { k } else { *key };
}
