//! The PCIe model (`isola_sim::pcie`) against closed forms: link efficiency
//! of posted writes from the spec's overheads, read throughput from Little's
//! law, credit- and root-complex-limited TLP rates.

use isola_model::Scenario;

/// Gbit/s and transfers/s of each tenant running `flows` (name, bytes, direction,
/// in flight) on a 63 Gbit/s link with `pcie` as its `[engine.pcie]`.
fn run(mps: u64, pcie: &str, flows: &[(&str, u64, &str, u32)]) -> Vec<(f64, f64)> {
    let s = text(mps, pcie, flows);
    let scenario = Scenario::parse(&s, "pcie.toml").unwrap_or_else(|e| panic!("{s}\n{e}"));
    let report = isola_sim::simulate(&scenario, &[], None, |_, _, _| {}).unwrap();
    report.policies[0]
        .tenants
        .iter()
        .map(|t| (t.throughput_bps * 8e-9, t.throughput_ops))
        .collect()
}

/// The scenario's text.
fn text(mps: u64, pcie: &str, flows: &[(&str, u64, &str, u32)]) -> String {
    let mut s = format!(
        "[run]\nseed = 1\nduration = \"1ms\"\nwindow = \"100us\"\npolicies = [\"fcfs\"]\n\n\
         [[engine]]\nname = \"pcie\"\nkind = \"dma\"\nslots = 64\nbandwidth = \"63Gbit/s\"\n\
         max_payload = \"{mps}B\"\nmax_read_request = \"512B\"\ntlp_overhead = \"24B\"\n[engine.pcie]\n{pcie}\n"
    );
    for (name, size, dir, n) in flows {
        s += &format!(
            "\n[[tenant]]\nname = \"{name}\"\nqueue_cap = 64\n[tenant.workload]\nengine = \"pcie\"\n\
             size = \"{size}B\"\narrival = {{ closed = {n} }}\ndirection = \"{dir}\"\n"
        );
    }
    s
}

const BYTES_PER_NS: f64 = 63.0 / 8.0;

fn close(x: f64, want: f64, tol: f64) -> bool {
    (x / want - 1.0).abs() <= tol
}

/// Link efficiency of posted writes alone: payload / (payload + TLP header
/// and framing), the spec's 24 B per TLP (16 B 4DW header, 4 B STP token
/// with sequence number, 4 B LCRC on Gen3); DLLPs travel the other way.
#[test]
fn posted_writes_run_at_payload_over_payload_plus_overhead() {
    for mps in [128u64, 256, 512] {
        // Two transfers in flight keep the link busy (writes are posted) and
        // leave little unfinished at the end of the run.
        let out = run(mps, "", &[("a", 4096, "write", 2)]);
        let want = 63.0 * mps as f64 / (mps + 24) as f64;
        assert!(
            close(out[0].0, want, 0.01),
            "MPS {mps}: {:.2} Gbit/s, closed form {want:.2}",
            out[0].0
        );
    }
}

/// Little's law: with the tags as the limit, read throughput is
/// outstanding requests x size / round trip (request on the wire, memory
/// latency, completion on the wire).
#[test]
fn tag_limited_reads_follow_littles_law() {
    for tags in [1u32, 2, 4] {
        let out = run(
            256,
            &format!("tags = {tags}\nread_latency = \"500ns\""),
            &[("a", 512, "read", 16)],
        );
        let round_trip = 24.0 / BYTES_PER_NS + 500.0 + (512.0 + 2.0 * 24.0) / BYTES_PER_NS;
        let want = tags as f64 * 512.0 / round_trip * 8.0;
        assert!(
            close(out[0].0, want, 0.02),
            "{tags} tags: {:.2} Gbit/s, Little {want:.2}",
            out[0].0
        );
    }
}

/// With one read request outstanding per transfer, a read of n x
/// MaxReadReqSize takes n round trips one after another, whatever the
/// tags; without the limit the same transfer takes one round trip and its
/// data's wire time.
#[test]
fn one_read_per_transfer_takes_a_round_trip_per_request() {
    let round_trip = 24.0 / BYTES_PER_NS + 500.0 + (512.0 + 2.0 * 24.0) / BYTES_PER_NS;
    let out = run(256, "reads_per_transfer = 1", &[("a", 4096, "read", 1)]);
    let want = 1e9 / (8.0 * round_trip);
    assert!(
        close(out[0].1, want, 0.02),
        "{:.3e} reads/s, closed form {want:.3e}",
        out[0].1
    );
    let out = run(256, "", &[("a", 4096, "read", 1)]);
    assert!(
        out[0].1 > 3.0 * want,
        "without the limit: {:.3e} reads/s",
        out[0].1
    );
}

/// Posted header credits bound tiny writes: credits / (wire time + credit
/// return) TLPs per second.
#[test]
fn posted_credits_bound_the_tlp_rate() {
    let out = run(
        256,
        "posted_headers = 4\ncredit_return = \"200ns\"",
        &[("a", 16, "write", 32)],
    );
    let want = 4.0 / (40.0 / BYTES_PER_NS + 200.0) * 1e9;
    assert!(
        close(out[0].1, want, 0.02),
        "{:.3e} TLPs/s, closed form {want:.3e}",
        out[0].1
    );
}

/// The root complex's read-modify-write serialises partial-line writes at
/// one per `rmw`, and whole-line writes do not pay it.
#[test]
fn partial_line_writes_pay_the_root_complexs_read_modify_write() {
    let out = run(256, "rmw = \"100ns\"", &[("a", 16, "write", 32)]);
    assert!(close(out[0].1, 1e7, 0.02), "{:.3e} writes/s, want 1e7", out[0].1);
    let out = run(256, "rmw = \"1us\"", &[("a", 64, "write", 32)]);
    let want = BYTES_PER_NS / 88.0 * 1e9;
    assert!(
        close(out[0].1, want, 0.02),
        "{:.3e} writes/s, wire-bound {want:.3e}",
        out[0].1
    );
}

/// AaaS obs. 9: reads and writes at once use both wires (full duplex).
/// Each wire carries its own direction's TLPs and the other's overheads:
/// up, write TLPs (`mps` + 24 B per `mps` B), read requests (24 B per
/// 512 B) and an ACK and UpdateFC (16 B) per 4 completions; down,
/// completions (`mps` + 24 B each) and 16 B per 4 TLPs received. With both
/// tenants backlogged both wires are full: two linear equations in the
/// write and read data rates.
#[test]
fn reads_and_writes_share_nothing_but_overheads() {
    let out = run(
        256,
        "arbitrate = \"tenant\"",
        &[("w", 4096, "write", 32), ("r", 4096, "read", 32)],
    );
    let (mps, mrrs, dllps) = (256.0, 512.0, 16.0 / 4.0);
    // a * write + b * read = link, per wire (bytes per data byte).
    let (a1, b1) = ((mps + 24.0) / mps, 24.0 / mrrs + dllps / mps);
    let (a2, b2) = (dllps / mps, (mps + 24.0) / mps + dllps / mrrs);
    let det = a1 * b2 - b1 * a2;
    let write = BYTES_PER_NS * (b2 - b1) / det * 8.0;
    let read = BYTES_PER_NS * (a1 - a2) / det * 8.0;
    assert!(
        close(out[0].0, write, 0.02),
        "writes {:.2} Gbit/s, closed form {write:.2}",
        out[0].0
    );
    assert!(
        close(out[1].0, read, 0.02),
        "reads {:.2} Gbit/s, closed form {read:.2}",
        out[1].0
    );
}

/// AaaS obs. 10: beside a writer of whole lines, a writer of partial lines
/// takes one turn in two (round robin per tenant), and each of its writes
/// holds the in-order root complex for one read-modify-write: once that is
/// longer than a turn's wire time, the pair moves `mps` + its size per
/// `rmw`, whatever the partial size.
#[test]
fn partial_line_writes_hold_the_root_complex_per_write() {
    for small in [16u64, 32] {
        let out = run(
            256,
            "rmw = \"500ns\"\narbitrate = \"tenant\"",
            &[("a", 4096, "write", 4), ("b", small, "write", 4)],
        );
        let want = (256 + small) as f64 / 500.0 * 8.0;
        let got = out[0].0 + out[1].0;
        assert!(
            close(got, want, 0.03),
            "{small} B: {got:.2} Gbit/s, closed form {want:.2}"
        );
    }
}

/// AaaS obs. 4: round robin across transfers splits a saturated link in the
/// ratio of transfers in flight; obs. 7: round robin across tenants makes
/// reads above MaxReadReqSize data-rate-fair, and those below it IOPS-fair.
#[test]
fn arbitration_gives_the_papers_shares() {
    let out = run(256, "", &[("a", 4096, "write", 8), ("b", 4096, "write", 4)]);
    assert!(close(out[0].0 / out[1].0, 2.0, 0.05), "{out:?}");
    let flows = [("a", 1024, "read", 16), ("b", 4096, "read", 16)];
    let out = run(256, "arbitrate = \"tenant\"", &flows);
    assert!(close(out[0].0 / out[1].0, 1.0, 0.05), "{out:?}");
    let flows = [("a", 512, "read", 16), ("b", 64, "read", 16)];
    let out = run(256, "arbitrate = \"tenant\"", &flows);
    assert!(close(out[0].1 / out[1].1, 1.0, 0.05), "{out:?}");
}

/// The ring protocol adds a descriptor read before and a completion entry
/// after each transfer: one transfer in flight takes a read round trip more
/// than its data.
#[test]
fn ring_transfers_pay_a_descriptor_round_trip() {
    let out = run(
        256,
        "descriptor = \"64B\"\ncompletion_entry = \"64B\"",
        &[("a", 4096, "write", 1)],
    );
    let desc = 24.0 / BYTES_PER_NS + 500.0 + 88.0 / BYTES_PER_NS;
    let data = (4096.0 + 16.0 * 24.0 + 88.0) / BYTES_PER_NS;
    let want = 1e9 / (desc + data);
    assert!(
        close(out[0].1, want, 0.03),
        "{:.3e} transfers/s, closed form {want:.3e}",
        out[0].1
    );
}

/// Bad values name the file, line and key.
#[test]
fn bad_values_are_reported_at_their_key() {
    for (pcie, key) in [
        ("tags = 0", "tags"),
        ("reads_per_transfer = 0", "reads_per_transfer"),
        ("posted_data = 4", "posted_data"),
        ("completion_buffer = \"256B\"", "completion_buffer"),
        ("arbitrate = \"fifo\"", "arbitrate"),
    ] {
        let s = text(256, pcie, &[("a", 64, "write", 1)]);
        let line = s.lines().position(|l| l == pcie).expect("written") + 1;
        let e = Scenario::parse(&s, "pcie.toml").expect_err(pcie);
        assert_eq!((e.key.as_deref(), e.line), (Some(key), line), "{pcie}: {e}");
    }
    let s = text(256, "", &[("a", 64, "write", 1)])
        .replace("[engine.pcie]", "tlp_rate = \"50M/s\"\n[engine.pcie]");
    let e = Scenario::parse(&s, "pcie.toml").expect_err("tlp_rate with pcie");
    assert_eq!(e.key.as_deref(), Some("tlp_rate"), "{e}");
}

/// The prediction the scheduler gets (`PcieLink::alone`) matches a transfer
/// alone on the link, for writes with the ring protocol and for reads.
#[test]
fn the_prediction_matches_a_transfer_alone() {
    use isola_model::scenario::{DeviceSpec, Direction};
    for (pcie, direction, name) in [
        (
            "descriptor = \"64B\"\ncompletion_entry = \"64B\"",
            Direction::Write,
            "write",
        ),
        ("", Direction::Read, "read"),
    ] {
        let flows = [("a", 4096, name, 1)];
        let s = Scenario::parse(&text(256, pcie, &flows), "pcie.toml").unwrap();
        let DeviceSpec::Dma(dma) = &s.engines[0].device else {
            panic!("a DMA engine");
        };
        let predicted = isola_sim::pcie::PcieLink::alone(dma, &dma.pcie.unwrap(), direction, 4096);
        let measured = 1e9 / run(256, pcie, &flows)[0].1;
        assert!(
            close(measured, predicted, 0.02),
            "{name}: {measured:.1} ns measured, {predicted:.1} predicted"
        );
    }
}
