//! Keeping the machine's idle cores out of idle states that are slow to
//! leave, while a real-time runtime runs.
//!
//! Under the real-time regime the runtime's threads sleep as soon as they
//! have no work (`threads.rs`: a real-time thread that polls holds its core
//! against every normal thread), so each request wakes them, and a wake-up
//! of a thread whose core is idle costs that core's way out of its idle
//! state. On a virtual machine that is the halted virtual CPU's exit to the
//! hypervisor and back, tens of microseconds, paid two or three times a
//! request (docs/perf.md, "Idle cores that poll"). Linux's PM QoS interface
//! lets a process ask for a bound on that exit latency for as long as it
//! holds `/dev/cpu_dma_latency` open with the bound written to it (as
//! `tuned`'s latency-performance profile and `cyclictest` do): with 0, the
//! idle loop polls for work instead of entering any idle state with an exit
//! latency, which costs idle CPU time but, unlike a thread that polls,
//! never keeps a runnable thread off its core. The kernel drops the request
//! when the file is closed, here when the runtime is.
//!
//! Opening the file needs root (it is `0600`); where it is refused the
//! runtime runs as before and says why ([`crate::Runtime::idle_latency`]).

use std::io::Write;

/// The kernel's PM QoS CPU latency request file.
const REQUEST_FILE: &str = "/dev/cpu_dma_latency";

/// What became of the runtime's request that idle cores stay quick to wake.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum IdleLatency {
    /// Not asked for: no real-time class was asked for or granted, or the
    /// runtime runs without the real-time regime.
    #[default]
    NotAsked,
    /// Held for as long as the runtime runs.
    Held,
    /// The system refused (typically: not root); idle cores keep their
    /// deep states.
    Refused {
        /// Why, as the system said it.
        reason: String,
    },
}

/// The runtime's request: its open file while held (never read: the
/// kernel keeps the request while it is open), else why there is none.
#[derive(Debug, Default)]
pub(crate) enum IdleLatencyRequest {
    /// Not asked for.
    #[default]
    NotAsked,
    /// Held while this file is open.
    Held {
        /// The request file, open.
        _file: std::fs::File,
    },
    /// Refused, and why.
    Refused(String),
}

impl IdleLatencyRequest {
    /// Asks that no idle core take longer than 0 us to wake, for as long as
    /// the request lives.
    pub(crate) fn hold() -> IdleLatencyRequest {
        let opened = std::fs::OpenOptions::new().write(true).open(REQUEST_FILE);
        // The kernel reads the bound as a binary 32-bit integer (or as
        // hexadecimal text); it holds for as long as the file stays open.
        let written = opened.and_then(|mut f| f.write_all(&0i32.to_ne_bytes()).map(|()| f));
        match written {
            Ok(file) => IdleLatencyRequest::Held { _file: file },
            Err(e) => IdleLatencyRequest::Refused(format!("{REQUEST_FILE}: {e}")),
        }
    }

    /// What became of it.
    pub(crate) fn outcome(&self) -> IdleLatency {
        match self {
            IdleLatencyRequest::NotAsked => IdleLatency::NotAsked,
            IdleLatencyRequest::Held { .. } => IdleLatency::Held,
            IdleLatencyRequest::Refused(reason) => IdleLatency::Refused {
                reason: reason.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's view of the bound in force: the smallest of the
    /// requests held (`/dev/cpu_dma_latency` reads it back as a binary
    /// 32-bit integer).
    fn bound_in_force() -> Option<i32> {
        let bytes = std::fs::read(REQUEST_FILE).ok()?;
        Some(i32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
    }

    #[test]
    fn a_held_request_bounds_the_exit_latency_until_dropped() {
        let before = bound_in_force();
        let request = IdleLatencyRequest::hold();
        match request.outcome() {
            IdleLatency::Held => {
                assert_eq!(bound_in_force(), Some(0), "the kernel holds the request");
                drop(request);
                assert_eq!(bound_in_force(), before, "the request ends with its file");
            }
            IdleLatency::Refused { reason } => {
                assert!(reason.starts_with(REQUEST_FILE), "{reason}");
                eprintln!("skipped: {reason}");
            }
            IdleLatency::NotAsked => unreachable!("hold always asks"),
        }
    }
}
