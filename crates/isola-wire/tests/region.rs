//! Two mappings of one real sealed memfd, as the daemon and a tenant hold
//! them: what one side writes on a ring the other reads, the arena is
//! shared, and whatever a tenant writes into the region, the daemon's
//! reading and checking of it never panics and never reaches outside it.

use isola_wire::layout::Geometry;
use isola_wire::{
    check_submission, CompletionEntry, CompletionStatus, Consumer, EntryError, Producer, Region, Submission,
};
use proptest::prelude::*;
use std::sync::atomic::Ordering;

fn geometry() -> Geometry {
    Geometry {
        sq_entries: 16,
        cq_entries: 16,
        eq_entries: 8,
        arena_bytes: 64 << 10,
    }
}

/// The daemon's region and the tenant's mapping of the same memfd (the
/// descriptor duplicated, as `SCM_RIGHTS` would pass it).
fn pair() -> (Region, Region) {
    let daemon = Region::create("isola-test", geometry().layout().unwrap()).unwrap();
    let passed = rustix::io::fcntl_dupfd_cloexec(daemon.fd(), 0).unwrap();
    let tenant = Region::open(passed).unwrap();
    (daemon, tenant)
}

#[test]
fn a_tenant_and_the_daemon_share_rings_and_arena() {
    let (daemon, tenant) = pair();
    assert_eq!(tenant.layout(), daemon.layout());
    let l = *daemon.layout();
    // The tenant writes its input and submits.
    tenant.write_arena(0, b"123456789").unwrap();
    let mut sq = Producer::new(l.sq);
    let s = Submission {
        handle: 1,
        flags: 0,
        input_offset: 0,
        input_len: 9,
        output_offset: 4096,
        output_cap: 4,
        tag: 42,
    };
    sq.push(tenant.words(), &s.encode()).unwrap();
    // The daemon copies it out, checks it, reads the input, answers.
    let mut taken = Consumer::new(l.sq);
    let raw = taken
        .pop::<{ Submission::WORDS }>(daemon.words())
        .unwrap()
        .unwrap();
    let checked = check_submission(
        &Submission::decode(&raw),
        l.geometry.arena_bytes,
        |h| h == 1,
        1 << 20,
    )
    .unwrap();
    let input = daemon
        .read_arena(checked.input.start as u64, checked.input.len() as u64)
        .unwrap();
    assert_eq!(input, b"123456789");
    daemon
        .write_arena(checked.output.start as u64, &[0xE3, 0x06, 0x92, 0x83])
        .unwrap();
    let mut cq = Producer::new(l.cq);
    let c = CompletionEntry {
        tag: checked.tag,
        outcome: CompletionStatus::Ok,
        output_len: 4,
        arrival_ns: 1,
        dispatch_ns: 2,
        completion_ns: 3,
        predicted_ns: 1,
        service_ns: 1,
    };
    cq.push(daemon.words(), &c.encode()).unwrap();
    // The tenant sees the completion and the output.
    let mut done = Consumer::new(l.cq);
    let got = CompletionEntry::decode(&done.pop(tenant.words()).unwrap().unwrap());
    assert_eq!(got, c);
    assert_eq!(tenant.read_arena(4096, 4).unwrap(), [0xE3, 0x06, 0x92, 0x83]);
    assert!(tenant.read_arena(64 << 10, 1).is_err());
}

#[test]
fn an_unsealed_or_foreign_descriptor_is_refused() {
    let plain = rustix::fs::memfd_create("plain", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&plain, 1 << 20).unwrap();
    assert!(Region::open(plain).is_err());
    // Sealed, but with no header.
    let blank = rustix::fs::memfd_create(
        "blank",
        rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
    )
    .unwrap();
    rustix::fs::ftruncate(&blank, 1 << 20).unwrap();
    rustix::fs::fcntl_add_seals(
        &blank,
        rustix::fs::SealFlags::SHRINK | rustix::fs::SealFlags::GROW,
    )
    .unwrap();
    assert!(Region::open(blank).is_err());
}

#[test]
fn the_tenant_cannot_resize_the_region_under_the_daemon() {
    let (daemon, _tenant) = pair();
    let fd = daemon.fd();
    assert!(rustix::fs::ftruncate(fd, 4096).is_err());
    assert!(rustix::fs::ftruncate(fd, 1 << 30).is_err());
}

proptest! {
    /// Whatever words a tenant writes into its submission ring (entries
    /// and tail alike), the daemon's consumer and checks never panic; a
    /// checked entry's ranges are inside the arena and disjoint.
    #[test]
    fn random_ring_contents_fail_entries_not_the_daemon(
        words in prop::collection::vec(any::<u64>(), 16 + 16 * 6),
        tail in any::<u64>(),
        small in prop::collection::vec((0u64..70_000, 0u64..70_000, 0u64..70_000, 0u64..70_000), 0..16),
    ) {
        let (daemon, tenant) = pair();
        let l = *daemon.layout();
        for (i, w) in words.iter().enumerate() {
            tenant.words()[l.sq.control + i].store(*w, Ordering::Relaxed);
        }
        // Plausible entries too, so that checks are reached.
        for (i, &(io, il, oo, oc)) in small.iter().enumerate() {
            let s = Submission { handle: 1, flags: 0, input_offset: io, input_len: il, output_offset: oo, output_cap: oc, tag: i as u64 };
            for (j, w) in s.encode().iter().enumerate() {
                tenant.words()[l.sq.entries + i * 6 + j].store(*w, Ordering::Relaxed);
            }
        }
        tenant.words()[l.sq.control + 8].store(tail, Ordering::Release);
        let mut c = Consumer::new(l.sq);
        for _ in 0..40 {
            match c.pop::<{ Submission::WORDS }>(daemon.words()) {
                Ok(Some(raw)) => {
                    let s = Submission::decode(&raw);
                    match check_submission(&s, l.geometry.arena_bytes, |h| h == 1, 1 << 20) {
                        Ok(ok) => {
                            prop_assert!(ok.input.end as u64 <= l.geometry.arena_bytes);
                            prop_assert!(ok.output.end as u64 <= l.geometry.arena_bytes);
                            prop_assert!(ok.input.is_empty() || ok.output.is_empty()
                                || ok.input.end <= ok.output.start || ok.output.end <= ok.input.start);
                            prop_assert!(daemon.read_arena(ok.input.start as u64, ok.input.len() as u64).is_ok());
                        }
                        Err(e) => prop_assert!(e.code() > 0),
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}

#[test]
fn each_check_names_its_fault() {
    let arena = 1 << 16;
    let ok = Submission {
        handle: 1,
        flags: 0,
        input_offset: 0,
        input_len: 100,
        output_offset: 100,
        output_cap: 100,
        tag: 0,
    };
    let check = |s: Submission| check_submission(&s, arena, |h| h == 1, 1 << 12);
    assert!(check(ok).is_ok());
    assert_eq!(
        check(Submission { handle: 2, ..ok }),
        Err(EntryError::UnknownHandle(2))
    );
    assert_eq!(
        check(Submission { flags: 1, ..ok }),
        Err(EntryError::UnknownFlags(1))
    );
    assert_eq!(
        check(Submission {
            input_offset: u64::MAX - 10,
            ..ok
        }),
        Err(EntryError::InputOutsideArena)
    );
    assert_eq!(
        check(Submission {
            output_offset: arena - 99,
            ..ok
        }),
        Err(EntryError::OutputOutsideArena)
    );
    assert_eq!(
        check(Submission {
            output_offset: 50,
            ..ok
        }),
        Err(EntryError::Overlap)
    );
    assert_eq!(
        check(Submission {
            input_len: 1 << 13,
            ..ok
        }),
        Err(EntryError::TooLarge(1 << 12))
    );
}

proptest! {
    /// Arena copies, whatever their alignment: what one side writes at
    /// any offset and length the other reads back byte for byte, and the
    /// bytes around it are untouched (checked against a plain model).
    #[test]
    fn arena_copies_at_any_alignment_are_exact(
        writes in prop::collection::vec((0u64..70_000, prop::collection::vec(any::<u8>(), 0..200)), 1..20),
        reads in prop::collection::vec((0u64..66_000, 0u64..300), 1..20),
    ) {
        let (daemon, tenant) = pair();
        let arena = geometry().arena_bytes;
        let mut model = vec![0u8; arena as usize];
        for (i, (offset, data)) in writes.iter().enumerate() {
            let side = if i % 2 == 0 { &daemon } else { &tenant };
            let fits = offset + data.len() as u64 <= arena;
            prop_assert_eq!(side.write_arena(*offset, data).is_ok(), fits);
            if fits {
                model[*offset as usize..*offset as usize + data.len()].copy_from_slice(data);
            }
        }
        for (offset, len) in reads {
            let got = daemon.read_arena(offset, len);
            match offset.checked_add(len).filter(|&e| e <= arena) {
                Some(end) => prop_assert_eq!(got.unwrap(), model[offset as usize..end as usize].to_vec()),
                None => prop_assert!(got.is_err()),
            }
        }
    }
}
