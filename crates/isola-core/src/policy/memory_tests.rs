//! Per-tenant memory of every policy, and of a scheduler running it,
//! measured by counting the bytes this thread has live on the heap while a
//! policy (or scheduler) for 128 and for 1,024 tenants is built (issue 17).
//!
//! Run `cargo test -p isola-core --lib per_tenant_memory -- --nocapture`
//! for the table (docs/perf.md). The test fails if any policy's state grows
//! faster than linearly (it compares 1,024 tenants with 128 and 8,192).

use super::registry::{build_policy, PolicySetup, POLICIES};
use super::TenantShare;
use crate::engine::{EngineKind, EngineSpec};
use crate::scheduler::SchedulerBuilder;
use crate::tenant::{Slo, TenantClass};
use crate::AffineCost;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

/// The system allocator, counting each thread's live bytes.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to `System` with the same arguments; the
// count is a thread-local integer, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.with(|l| l.set(l.get() + layout.size() as isize));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.with(|l| l.set(l.get() - layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.with(|l| l.set(l.get() + new_size as isize - layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes `make` leaves live on this thread's heap while its result lives.
fn live_bytes<T>(make: impl FnOnce() -> T) -> isize {
    let before = LIVE.with(Cell::get);
    let made = make();
    let bytes = LIVE.with(Cell::get) - before;
    drop(made);
    bytes
}

/// Slots of the engine: the benchmark's (`benches/scheduler_next.rs`);
/// `static` needs one per tenant.
fn slots(policy: &str, tenants: usize) -> u32 {
    if policy == "static" {
        tenants as u32
    } else {
        64
    }
}

fn policy_bytes(policy: &str, tenants: usize) -> isize {
    let shares = vec![
        TenantShare {
            weight: 1.0,
            class: TenantClass::BestEffort,
            latency: None,
        };
        tenants
    ];
    let setup = PolicySetup {
        tenants: &shares,
        slots: slots(policy, tenants),
    };
    live_bytes(|| build_policy(policy, &Default::default(), &setup).expect("default parameters build"))
}

fn scheduler_bytes(policy: &str, tenants: usize) -> isize {
    live_bytes(|| {
        let mut b = SchedulerBuilder::new();
        b.engine(EngineSpec::new(
            "e",
            EngineKind::Accelerator,
            slots(policy, tenants),
            Arc::new(AffineCost::constant(1_000)),
        ));
        for t in 0..tenants {
            b.tenant(format!("t{t}"), Slo::weighted(1.0));
        }
        b.policy(policy, Default::default());
        b.build().expect("a valid setup")
    })
}

#[test]
fn per_tenant_memory() {
    println!("| policy | policy B/tenant (128) | policy B/tenant (1,024) | scheduler B/tenant (1,024) |");
    println!("| --- | ---: | ---: | ---: |");
    for info in POLICIES {
        let p = |n| policy_bytes(info.name, n) as f64 / n as f64;
        let s = |n| scheduler_bytes(info.name, n) as f64 / n as f64;
        let (p128, p1k, p8k, s1k) = (p(128), p(1024), p(8192), s(1024));
        println!("| {} | {p128:.0} | {p1k:.0} | {s1k:.0} |", info.name);
        // Linear state has constant bytes per tenant; allow for allocations
        // independent of the tenant count, and rounding of capacities.
        assert!(
            p8k <= p1k * 1.25 + 1.0 && p1k <= p128 * 1.25 + 16.0,
            "{}: {p128:.0}, {p1k:.0}, {p8k:.0} bytes per tenant at 128, 1,024, 8,192 tenants",
            info.name
        );
    }
}
