//! What the host does to the runtime's threads: each thread's CPU time,
//! the time it was runnable but waiting for a CPU (run-queue delay), its
//! involuntary context switches, and the machine's steal time (a virtual
//! machine's CPU taken by its hypervisor). A latency the scheduler did not
//! cause is one of these; the demo and `isola run` report them beside the
//! latencies so that a run the host disturbed says so.
//!
//! It also says which machine this is ([`machine`]), as every report
//! names where it was measured.
//!
//! Linux only in substance: elsewhere every reading is `None`, and the
//! runtime runs as before.

use isola_core::Nanos;
use serde::Serialize;

/// One thread's counters at an instant, or between two (see
/// [`ThreadTimes::since`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ThreadTimes {
    /// Time on a CPU, ns.
    pub cpu_ns: Nanos,
    /// Time runnable but waiting for a CPU, ns (the kernel's run delay).
    pub run_delay_ns: Nanos,
    /// Times it was switched out while runnable (preempted).
    pub involuntary_switches: u64,
    /// Times it gave its CPU up itself (blocked or yielded).
    pub voluntary_switches: u64,
}

impl ThreadTimes {
    /// The calling thread's counters (`None` where the kernel does not
    /// expose them).
    pub fn current() -> Option<ThreadTimes> {
        ThreadTimes::of(ThreadId::current()?)
    }

    /// The counters of thread `tid` of this process.
    pub fn of(tid: ThreadId) -> Option<ThreadTimes> {
        let dir = format!("/proc/self/task/{}", tid.0);
        let sched = std::fs::read_to_string(format!("{dir}/schedstat")).ok()?;
        let mut fields = sched.split_ascii_whitespace().map(str::parse::<u64>);
        let (cpu_ns, run_delay_ns) = (fields.next()?.ok()?, fields.next()?.ok()?);
        let status = std::fs::read_to_string(format!("{dir}/status")).ok()?;
        let count = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(ThreadTimes {
            cpu_ns,
            run_delay_ns,
            involuntary_switches: count("nonvoluntary_ctxt_switches:")?,
            voluntary_switches: count("voluntary_ctxt_switches:")?,
        })
    }

    /// What happened between `earlier` and `self` (counters only grow; a
    /// reading out of order gives zeros, not a wrap).
    pub fn since(&self, earlier: &ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            run_delay_ns: self.run_delay_ns.saturating_sub(earlier.run_delay_ns),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            voluntary_switches: self.voluntary_switches.saturating_sub(earlier.voluntary_switches),
        }
    }

    /// The sum of two threads' counters.
    pub fn plus(&self, other: &ThreadTimes) -> ThreadTimes {
        ThreadTimes {
            cpu_ns: self.cpu_ns.saturating_add(other.cpu_ns),
            run_delay_ns: self.run_delay_ns.saturating_add(other.run_delay_ns),
            involuntary_switches: self
                .involuntary_switches
                .saturating_add(other.involuntary_switches),
            voluntary_switches: self.voluntary_switches.saturating_add(other.voluntary_switches),
        }
    }
}

/// A kernel thread id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadId(pub i64);

impl ThreadId {
    /// The calling thread's id.
    pub fn current() -> Option<ThreadId> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: gettid has no preconditions and cannot fail.
            Some(ThreadId(unsafe { libc::gettid() } as i64))
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

/// The calling thread's CPU time, ns: cheap enough (one system call) to
/// read around every piece of work, so that a piece's wall time minus its
/// CPU time is the time the host took from it while it ran.
pub fn thread_cpu_ns() -> Option<Nanos> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes into.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The machine's CPU time counters from `/proc/stat`, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MachineTimes {
    /// Time a hypervisor ran something else while this virtual machine
    /// wanted the CPU, ns.
    pub steal_ns: Nanos,
    /// Time the CPUs were busy (user, nice, system, irq, softirq), ns.
    pub busy_ns: Nanos,
    /// Time the CPUs were idle (idle and iowait), ns.
    pub idle_ns: Nanos,
}

impl MachineTimes {
    /// The counters now (`None` where `/proc/stat` cannot be read).
    pub fn now() -> Option<MachineTimes> {
        MachineTimes::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses `/proc/stat`'s first line (`cpu user nice system idle iowait
    /// irq softirq steal ...`, in clock ticks of 1/100 s: USER_HZ is 100
    /// on every Linux architecture's user ABI).
    pub fn parse(stat: &str) -> Option<MachineTimes> {
        const NS_PER_TICK: u64 = 10_000_000;
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_ascii_whitespace()
            .skip(1)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0).saturating_mul(NS_PER_TICK);
        Some(MachineTimes {
            busy_ns: at(0) + at(1) + at(2) + at(5) + at(6),
            idle_ns: at(3) + at(4),
            steal_ns: at(7),
        })
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &MachineTimes) -> MachineTimes {
        MachineTimes {
            steal_ns: self.steal_ns.saturating_sub(earlier.steal_ns),
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
            idle_ns: self.idle_ns.saturating_sub(earlier.idle_ns),
        }
    }
}

/// The share of each period the kernel keeps from real-time threads
/// (real-time throttling: `1 - sched_rt_runtime_us / sched_rt_period_us`,
/// 5% by default; 0 when disabled): a real-time thread busy for longer
/// than the runtime waits, runnable, for the rest of the period.
pub fn realtime_throttle_share() -> Option<f64> {
    let read = |name: &str| -> Option<i64> {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (runtime, period) = (read("sched_rt_runtime_us")?, read("sched_rt_period_us")?);
    if runtime < 0 || period <= 0 {
        return Some(0.0);
    }
    Some((1.0 - runtime as f64 / period as f64).clamp(0.0, 1.0))
}

/// This machine in a line: host name, CPU model, cores and system
/// (`box: AMD EPYC 7763 64-Core Processor, 2 cores, linux`), as reports
/// name where they were measured.
pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let host = if host.is_empty() {
        "unknown host".into()
    } else {
        host
    };
    format!("{host}: {cpu}, {cores} cores, {}", std::env::consts::OS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's cores and system, and a host name.
    #[test]
    fn machine_says_where() {
        let m = machine();
        let cores = std::thread::available_parallelism().unwrap().get();
        assert!(
            m.ends_with(&format!(", {cores} cores, {}", std::env::consts::OS)),
            "{m}"
        );
        assert!(!m.starts_with(':'), "{m}");
    }

    #[test]
    fn proc_stat_is_read_in_ticks_of_ten_milliseconds() {
        let stat = "cpu  1236079 33999 167028 449549 46829 0 1490 4463 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        let m = MachineTimes::parse(stat).unwrap();
        assert_eq!(m.steal_ns, 4463 * 10_000_000);
        assert_eq!(m.idle_ns, (449_549 + 46_829) * 10_000_000);
        assert_eq!(m.busy_ns, (1_236_079 + 33_999 + 167_028 + 1_490) * 10_000_000);
        assert_eq!(MachineTimes::parse("intr 1 2 3"), None);
    }

    /// A thread that spins accrues CPU time; one that sleeps switches
    /// voluntarily (checked against the kernel's own counters, where it
    /// exposes them).
    #[test]
    fn a_threads_counters_follow_what_it_does() {
        let Some(before) = ThreadTimes::current() else {
            return;
        };
        let cpu_before = thread_cpu_ns().unwrap();
        // Spin for 20 ms of this thread's own CPU time (a loaded machine
        // gives it less than the wall clock), 10 s of wall time at most.
        let start = std::time::Instant::now();
        while thread_cpu_ns().unwrap() - cpu_before < 20_000_000 && start.elapsed().as_secs() < 10 {
            std::hint::spin_loop();
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = ThreadTimes::current().unwrap().since(&before);
        assert!(after.cpu_ns >= 10_000_000, "{after:?}");
        assert!(after.voluntary_switches >= 1, "{after:?}");
        assert!(thread_cpu_ns().unwrap() - cpu_before >= 10_000_000);
    }
}
