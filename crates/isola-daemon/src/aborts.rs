//! Packets stopped before their reply (issue 28: nothing silent): a
//! kernel stopped at its fuel or memory limit, a trap, a DMA request with
//! no place in the tenant's host window, a task the runtime refused. Each
//! is counted `aborted` and its tenant told (`KernelAborted`) where it
//! happens; this module adds the two things a person and a sender need:
//!
//! - a line in the daemon's log, at most one a second per tenant (a
//!   hostile sender can abort a million packets a second; the log must
//!   not become the bottleneck), naming the tenant, the flow, the sender
//!   and the cause, and how many more were aborted since the last line;
//! - for a flow with `error_reply = true`, a datagram back to the sender
//!   in place of the reply it will not get ([`error_reply`]), so that it
//!   can tell a stopped packet from a lost one.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The least time between two log lines about one tenant's aborted packets.
pub(crate) const LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The first bytes of an error reply: what tells it from a kernel's own
/// reply (docs/kernels.md, "When a packet is stopped").
pub const ERROR_REPLY_PREFIX: &[u8] = b"ISOLA-ABORTED ";

/// Why a packet was aborted: a stable number (the `KernelAborted`
/// event's detail, `isola_kernels::KernelError::code` for a stopped
/// kernel) and the cause in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cause {
    /// The number the tenant's event carries.
    pub(crate) code: u64,
    /// The cause in words.
    pub(crate) reason: String,
}

/// The datagram a flow with `error_reply = true` sends back for a packet
/// aborted with `cause`: [`ERROR_REPLY_PREFIX`], the cause's number in
/// decimal, a space, and the cause in words (UTF-8), cut to fit one
/// datagram of at most 512 bytes.
pub fn error_reply(code: u64, reason: &str) -> Vec<u8> {
    const MOST: usize = 512;
    let mut out = ERROR_REPLY_PREFIX.to_vec();
    out.extend_from_slice(format!("{code} ").as_bytes());
    let room = MOST.saturating_sub(out.len());
    let mut end = reason.len().min(room);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    out.extend_from_slice(&reason.as_bytes()[..end]);
    out
}

/// What the log has said of one tenant's aborts.
#[derive(Debug, Default)]
struct Logged {
    /// When its last line was written.
    last: Option<Instant>,
    /// Aborts since then that had no line of their own.
    unsaid: u64,
}

/// The daemon's log of aborted packets, rate-limited per tenant seat.
#[derive(Debug, Default)]
pub(crate) struct AbortLog {
    tenants: Mutex<HashMap<usize, Logged>>,
}

impl AbortLog {
    /// Takes one abort of tenant seat `tenant` at `now`; answers the line
    /// to write, if one is due (the first abort, or the first after
    /// [`LOG_INTERVAL`]), with `describe` called only then.
    pub(crate) fn take(
        &self,
        tenant: usize,
        now: Instant,
        describe: impl FnOnce() -> String,
    ) -> Option<String> {
        let Ok(mut tenants) = self.tenants.lock() else {
            return None;
        };
        let logged = tenants.entry(tenant).or_default();
        if logged
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < LOG_INTERVAL)
        {
            logged.unsaid += 1;
            return None;
        }
        let more = std::mem::take(&mut logged.unsaid);
        logged.last = Some(now);
        let mut line = describe();
        if more > 0 {
            line.push_str(&format!(
                " ({more} more of its packets aborted since the last such line)"
            ));
        }
        Some(line)
    }
}

impl crate::Shared {
    /// Packet of tenant seat `tenant`'s flow `flow` from `from` was
    /// aborted with `cause`: counted `aborted`, its tenant told
    /// (`KernelAborted`, the flow and the cause's number), and the log
    /// told if a line is due ([`AbortLog`]).
    pub(crate) fn packet_aborted(&self, tenant: usize, flow: usize, from: SocketAddr, cause: &Cause) {
        self.packets
            .count(&self.metrics, tenant, crate::metrics::PacketOutcome::Aborted, 1);
        self.tell_tenant_of(
            tenant,
            isola_wire::EventKind::KernelAborted,
            flow as u64,
            cause.code,
        );
        let line = self.aborts.take(tenant, Instant::now(), || {
            let name = self
                .tenants
                .lock()
                .ok()
                .and_then(|t| {
                    t.seats
                        .get(tenant)
                        .and_then(|s| s.config.as_ref())
                        .map(|c| c.name().to_string())
                })
                .unwrap_or_else(|| format!("#{tenant}"));
            describe(&name, flow, from, cause)
        });
        if let Some(line) = line {
            eprintln!("{line}");
        }
    }
}

/// The log line of one aborted packet.
pub(crate) fn describe(tenant: &str, flow: usize, from: SocketAddr, cause: &Cause) -> String {
    format!(
        "isolad: tenant `{tenant}` flow {flow}: packet from {from} aborted (cause {}): {}",
        cause.code, cause.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_per_tenant_counting_the_rest() {
        let log = AbortLog::default();
        let t0 = Instant::now();
        assert_eq!(log.take(0, t0, || "a".into()).as_deref(), Some("a"));
        // Another tenant has its own allowance.
        assert_eq!(log.take(1, t0, || "b".into()).as_deref(), Some("b"));
        for i in 1..=5 {
            assert_eq!(
                log.take(0, t0 + Duration::from_millis(100 * i), || "x".into()),
                None
            );
        }
        let line = log.take(0, t0 + LOG_INTERVAL, || "a".into()).unwrap();
        assert!(line.starts_with("a (5 more"), "{line}");
        let next = log.take(0, t0 + LOG_INTERVAL * 3, || "a".into()).unwrap();
        assert_eq!(next, "a", "the count starts again after a line");
    }

    #[test]
    fn error_replies_carry_the_cause_and_fit_a_datagram() {
        let r = error_reply(1, "wasm: kernel stopped: out of fuel");
        assert_eq!(r, b"ISOLA-ABORTED 1 wasm: kernel stopped: out of fuel");
        let long = "é".repeat(1000);
        let r = error_reply(8, &long);
        assert!(r.len() <= 512 && std::str::from_utf8(&r).is_ok(), "{}", r.len());
    }
}
