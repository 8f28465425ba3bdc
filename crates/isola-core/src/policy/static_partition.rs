//! Static partition (FairNIC, Grant et al., 2020): each tenant owns a fixed
//! number of slots in proportion to its weight and never uses another's, even
//! when that one is idle. Strong isolation, not work-conserving.
//!
//! Slots are split by the largest-remainder method over all tenants, so the
//! counts add up to the engine's slots. Every tenant needs at least one slot,
//! otherwise its work could never run: such a setup is refused. Among tenants
//! with a free slot of their own, turns go round robin.

use super::registry::{PolicyInfo, PolicySetup};
use super::PolicyError;
use super::{HeadInfo, Policy, PolicyContext};
use crate::params::Params;
use crate::units::Nanos;

/// Registry entry.
pub const INFO: PolicyInfo = PolicyInfo {
    name: "static",
    aliases: &["fairnic"],
    description:
        "Static partition: each tenant owns slots in proportion to its weight; idle slots are not lent.",
    source: "FairNIC (Grant et al., 2020)",
    work_conserving: false,
    params: &[],
    build,
};

fn build(_: &Params<'_>, s: &PolicySetup<'_>) -> Result<Box<dyn Policy>, PolicyError> {
    let owned = partition(s).map_err(|reason| PolicyError::Infeasible {
        policy: INFO.name.into(),
        reason,
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
}
