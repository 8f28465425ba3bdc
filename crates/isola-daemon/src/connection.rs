//! One tenant connection, from `Hello` to its end: the peer's credentials
//! checked against the tenant it claims, its region made and passed, its
//! operators registered, its submissions copied out of the ring, checked
//! and handed to the live runtime (nothing bypasses the scheduler), and
//! each task's one completion written back.
//!
//! The runtime's dispatcher polls the submission ring itself, while it
//! spins (`ring::RingPoller`, an `isola_runtime::Poller`): an entry goes
//! to the core with no thread hand-off. Each task's output and completion
//! are written by the runtime thread that completes it (a callback). The
//! connection's own thread only reads its socket: registrations, and the
//! tenant's kicks when the dispatcher sleeps. The daemon never takes more
//! submissions than its completion ring can hold answers for, so a
//! completion always has a seat. When the tenant goes away, its queued
//! work is cancelled, and the region is released once every task taken
//! is answered.

use crate::config::DaemonTenant;
use crate::Shared;
use isola_runtime::{Completion, SubmitError, TaskError};
use isola_wire::control::{self, Reply, Request};
use isola_wire::entry::{detail, CompletionEntry, CompletionStatus, Event, EventKind, Submission};
use isola_wire::layout::Geometry;
use isola_wire::{check_submission, Consumer, Producer, Region};
use rustix::fd::{AsFd, OwnedFd};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Operator parameters that name files on the daemon's machine (a route
/// table, a rule set, a host memory image): a tenant may not have the
/// daemon read its files.
const FILE_PARAMS: [&str; 3] = ["routes", "rules", "memory"];

/// How long a new connection has to say `Hello`.
const ATTACH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Most connections attaching (not yet admitted) at once.
const MAX_ATTACHING: usize = 128;

/// What a task accepted from the ring needs for its completion.
#[derive(Clone)]
struct Pending {
    tag: u64,
    output: Range<usize>,
    arrival_ns: u64,
}

/// What the connection's thread, the dispatcher's poller of its ring and
/// the runtime's completion callbacks share (and the daemon, to drain it).
pub(crate) struct Conn {
    /// Its tenant's seat.
    pub(crate) tenant: usize,
    pub(crate) socket: OwnedFd,
    pub(crate) region: Region,
    /// The operators it registered, by handle: each built once, when it
    /// was registered, on the connection's thread.
    operators: Mutex<Vec<(String, Arc<dyn isola_ops::Operator>)>>,
    /// Its thread is done with it: nothing more is taken from its ring
    /// (set, then `pending` locked once: a take under way has finished).
    pub(crate) closed: AtomicBool,
    /// The dispatcher dropped its poller.
    pub(crate) poller_gone: AtomicBool,
    /// Its poller found the submission ring corrupt (an index no ring of
    /// its size allows): that ends this connection only.
    pub(crate) corrupt: AtomicBool,
    /// The completion ring's producing end (both threads write it: bad
    /// entries are answered at once).
    cq: Mutex<Producer>,
    /// The event ring's producing end.
    eq: Mutex<Producer>,
    /// Accepted tasks not yet answered, by runtime task id.
    pending: Mutex<HashMap<u64, Pending>>,
    /// Entries taken and handed to the ingest thread, not yet submitted
    /// (`crate::ingest`): the completion ring must have room for them too.
    ingesting: std::sync::atomic::AtomicU32,
    /// Signalled when `pending` empties.
    all_answered: std::sync::Condvar,
    /// Where answers are counted.
    metrics: Arc<crate::metrics::Metrics>,
    /// The daemon's state, for its completion record.
    shared: Arc<Shared>,
    /// The tenant closed its end.
    gone: AtomicBool,
    /// This connection drains (its tenant is being removed, or the daemon
    /// drains): it takes no more submissions.
    pub(crate) draining: AtomicBool,
}

impl Conn {
    /// Tells the tenant the daemon drains, and wakes the connection's
    /// thread out of its socket read: it takes no more submissions, answers
    /// those it took, then closes the connection.
    pub(crate) fn drain(&self, at_ns: u64) {
        self.draining.store(true, Ordering::Release);
        self.tell(EventKind::Draining, 0, 0, at_ns);
        control::send_now(self.socket.as_fd(), &Reply::Kick);
        let _ = rustix::net::shutdown(&self.socket, rustix::net::Shutdown::Read);
    }

    /// Publishes `e` on the event ring; a full ring drops it (events
    /// inform, they are not answers: a tenant that does not read them
    /// loses only them).
    pub(crate) fn tell(&self, kind: EventKind, value: u64, detail: u64, at_ns: u64) {
        if let Ok(mut eq) = self.eq.lock() {
            let e = Event {
                kind,
                value,
                detail,
                at_ns,
            };
            let _ = eq.push(self.region.words(), &e.encode());
        }
    }

    /// Whether its completion ring has room for the answer to one more
    /// task (tasks in flight plus answers unread stay under its size).
    pub(crate) fn has_room(&self) -> Result<bool, isola_wire::RingError> {
        let in_flight =
            self.pending.lock().map_or(0, |p| p.len()) as u32 + self.ingesting.load(Ordering::Acquire);
        let unread = self
            .cq
            .lock()
            .map_err(|_| isola_wire::RingError::Misplaced)?
            .pending(self.region.words())?;
        Ok(in_flight + unread < self.region.layout().cq.count)
    }

    /// Publishes `c` (there is always a seat: see `serve`'s admission) and
    /// wakes the tenant.
    fn answer(&self, c: CompletionEntry) {
        let wake = match self.cq.lock() {
            Ok(mut cq) => {
                cq.push(self.region.words(), &c.encode()).is_ok() && cq.consumer_sleeps(self.region.words())
            }
            Err(_) => return,
        };
        // A tenant polling its completion ring needs no wake-up.
        if wake && !self.gone.load(Ordering::Acquire) {
            // A tenant that stopped reading its socket only loses wake-ups.
            control::send_now(self.socket.as_fd(), &Reply::Kick);
        }
    }
}

/// Serves one accepted connection until the tenant leaves or the daemon
/// stops; one accepted on tenant `possession`'s own socket
/// (`attach_socket`) attaches as that tenant alone, its credentials
/// unchecked.
pub(crate) fn serve(shared: Arc<Shared>, socket: OwnedFd, possession: Option<String>) {
    // A peer has `ATTACH_TIMEOUT` to say who it is, and at most
    // `MAX_ATTACHING` may be saying it at once: strangers cannot hold the
    // daemon's threads before their credentials are checked.
    let attaching = shared.attaching.fetch_add(1, Ordering::AcqRel);
    let attached = if attaching >= MAX_ATTACHING {
        Err(format!("{MAX_ATTACHING} connections are attaching already"))
    } else {
        let timeout = rustix::net::sockopt::set_socket_timeout(
            &socket,
            rustix::net::sockopt::Timeout::Recv,
            Some(ATTACH_TIMEOUT),
        );
        let attached = timeout
            .map_err(|e| e.to_string())
            .and_then(|()| attach(&shared, &socket, possession.as_deref()));
        let _ = rustix::net::sockopt::set_socket_timeout(&socket, rustix::net::sockopt::Timeout::Recv, None);
        attached
    };
    shared.attaching.fetch_sub(1, Ordering::AcqRel);
    let (tenant, config, region) = match attached {
        Ok(v) => v,
        Err(reason) => {
            eprintln!("isolad: refused a connection: {reason}");
            let _ = control::send(socket.as_fd(), &Reply::Refused { reason }, None);
            return;
        }
    };
    let layout = *region.layout();
    let conn = Arc::new(Conn {
        tenant,
        socket,
        region,
        operators: Mutex::new(Vec::new()),
        closed: AtomicBool::new(false),
        poller_gone: AtomicBool::new(false),
        corrupt: AtomicBool::new(false),
        cq: Mutex::new(Producer::new(layout.cq)),
        eq: Mutex::new(Producer::new(layout.eq)),
        pending: Mutex::new(HashMap::new()),
        ingesting: std::sync::atomic::AtomicU32::new(0),
        all_answered: std::sync::Condvar::new(),
        metrics: Arc::clone(&shared.metrics),
        shared: Arc::clone(&shared),
        gone: AtomicBool::new(false),
        draining: AtomicBool::new(false),
    });
    shared.track(&conn);
    // A drain, or its tenant's removal, that began while it attached
    // missed it.
    let removing = shared
        .tenants
        .lock()
        .map(|table| table.seats[tenant].removing)
        .unwrap_or(true);
    if shared.draining.load(Ordering::Acquire) || removing {
        conn.drain(shared.now_ns());
    }
    let on_done: isola_runtime::OnCompletion = {
        let conn = Arc::clone(&conn);
        Arc::new(move |c| answer_task(&conn, c))
    };
    let handle = shared.runtime.tenant(isola_core::TenantId(tenant as u32));
    let poller = crate::ring::RingPoller::new(Arc::clone(&shared), Arc::clone(&conn), handle, on_done);
    if shared.runtime.add_poller(Box::new(poller)).is_ok() {
        converse(&shared, &conn);
    } else {
        conn.poller_gone.store(true, Ordering::Release);
    }
    // Nothing more is taken from the ring once a take under way is done.
    conn.closed.store(true, Ordering::Release);
    drop(conn.pending.lock());
    if !conn.draining.load(Ordering::Acquire) {
        if conn.corrupt.load(Ordering::Acquire) {
            eprintln!("isolad: tenant `{}` corrupted a ring", config.name());
        }
        // It left: its work still queued is cancelled (what runs
        // finishes), and its answers are written for nobody.
        conn.gone.store(true, Ordering::Release);
        let queued: std::collections::HashSet<u64> = conn
            .pending
            .lock()
            .map(|p| p.keys().copied().collect())
            .unwrap_or_default();
        if !queued.is_empty() {
            let _ = shared
                .runtime
                .cancel_queued(isola_core::TenantId(tenant as u32), Some(queued));
        }
    }
    // Entries handed to the ingest thread are submitted (or, the
    // connection closed, answered cancelled) first: a copy takes a few
    // milliseconds at most.
    while conn.ingesting.load(Ordering::Acquire) > 0 {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    // Every task taken is answered before the region goes.
    if let Ok(mut pending) = conn.pending.lock() {
        while !pending.is_empty() {
            pending = match conn.all_answered.wait(pending) {
                Ok(p) => p,
                Err(_) => break,
            };
        }
    }
    // The dispatcher drops the poller (and its hold on the region) at its
    // next poll.
    let waiting = std::time::Instant::now();
    while !conn.poller_gone.load(Ordering::Acquire) && waiting.elapsed() < std::time::Duration::from_secs(2) {
        shared.runtime.wake_dispatcher();
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    // Every task taken is answered: the tenant's next wait hears the end.
    let _ = rustix::net::shutdown(&conn.socket, rustix::net::Shutdown::Both);
    // Its host window (if it holds the tenant's) goes with it, before the
    // seat can be vacated and given to another tenant.
    shared.host_windows.set(tenant, &conn, 0, 0);
    shared.release(tenant);
}

/// Reads the connection's socket until the tenant leaves, the daemon
/// drains it, or its ring is found corrupt: registrations are answered,
/// and a kick wakes the dispatcher (the tenant kicks only when the
/// dispatcher said it sleeps).
fn converse(shared: &Shared, conn: &Arc<Conn>) {
    loop {
        if conn.draining.load(Ordering::Acquire) || conn.closed.load(Ordering::Acquire) {
            return;
        }
        let Ok((request, _)) = control::recv::<Request>(conn.socket.as_fd()) else {
            return;
        };
        match request {
            Request::Hello { .. } => {
                let reason = "already attached".to_string();
                let _ = control::send(conn.socket.as_fd(), &Reply::Failed { reason }, None);
            }
            Request::Register { op, params } => {
                let built = match params.keys().find(|k| FILE_PARAMS.contains(&k.as_str())) {
                    Some(k) => Err(format!(
                        "parameter `{k}` names a file on the daemon's machine, which a tenant may not; \
                         leave it out for the operator's generated table"
                    )),
                    None => isola_ops::build_operator(&op, &params).map_err(|e| e.to_string()),
                };
                let reply = match (built, conn.operators.lock()) {
                    (Ok(built), Ok(mut ops)) if ops.len() < 1024 => {
                        ops.push((op, Arc::from(built)));
                        Reply::Registered {
                            handle: ops.len() as u32 - 1,
                        }
                    }
                    (Ok(_), Ok(_)) => Reply::Failed {
                        reason: "at most 1024 operators per connection".into(),
                    },
                    (Ok(_), Err(_)) => Reply::Failed {
                        reason: "daemon state poisoned".into(),
                    },
                    (Err(reason), _) => Reply::Failed { reason },
                };
                let _ = control::send(conn.socket.as_fd(), &reply, None);
            }
            Request::Kick => shared.runtime.wake_dispatcher(),
            Request::Fallbacks { reason, count } => shared.metrics.fallbacks(conn.tenant, reason, count),
            Request::HostWindow { offset, len } => {
                let arena = conn.region.layout().geometry.arena_bytes;
                let reply = match offset.checked_add(len) {
                    Some(end) if end <= arena => {
                        shared.host_windows.set(conn.tenant, conn, offset, len);
                        Reply::WindowSet
                    }
                    _ => Reply::Failed {
                        reason: format!(
                            "a host window of {len} bytes at {offset} lies outside the arena of {arena} bytes"
                        ),
                    },
                };
                let _ = control::send(conn.socket.as_fd(), &reply, None);
            }
        }
    }
}

/// Reads `Hello`, checks the peer's credentials (or, on tenant
/// `possession`'s own socket, that it asks for that tenant) and the
/// tenant's connection count, makes and passes the region.
fn attach(
    shared: &Shared,
    socket: &OwnedFd,
    possession: Option<&str>,
) -> Result<(usize, DaemonTenant, Region), String> {
    let peer = control::peer(socket).map_err(|e| e.to_string())?;
    let (tenant_name, version) = match control::recv::<Request>(socket.as_fd()) {
        Ok((Request::Hello { tenant, version }, _)) => (tenant, version),
        Ok(_) => return Err("the first message must be Hello".into()),
        Err(e) => return Err(e.to_string()),
    };
    if version != control::PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {version}; this daemon speaks {}",
            control::PROTOCOL_VERSION
        ));
    }
    if let Some(owner) = possession.filter(|&owner| owner != tenant_name) {
        return Err(format!(
            "asked for tenant `{tenant_name}` on tenant `{owner}`'s own socket, which admits `{owner}` alone"
        ));
    }
    let (uid, gid) = (peer.uid.as_raw(), peer.gid.as_raw());
    let pid = peer.pid.as_raw_nonzero().get();
    let (t, config, held) = shared
        .tenants
        .lock()
        .map_err(|_| "daemon state poisoned".to_string())?
        .admit(&tenant_name, uid, gid, pid, possession.is_some())?;
    shared.metrics.set_connections(t, held);
    let geometry = Geometry {
        sq_entries: config.tenant.access.sq_entries,
        cq_entries: config.tenant.access.cq_entries,
        eq_entries: 64,
        arena_bytes: config.memory_quota(),
    };
    let made = geometry
        .layout()
        .map_err(|e| e.to_string())
        .and_then(|l| Region::create(&format!("isola-{tenant_name}"), l).map_err(|e| e.to_string()));
    let region = match made {
        Ok(r) => r,
        Err(e) => {
            shared.release(t);
            return Err(e);
        }
    };
    let welcome = Reply::Welcome {
        tenant: t as u32,
        max_input: shared.config.max_input,
    };
    if let Err(e) = control::send(socket.as_fd(), &welcome, Some(region.fd())) {
        shared.release(t);
        return Err(e.to_string());
    }
    Ok((t, config, region))
}

/// Takes what the submission ring holds, as far as the completion ring
/// has room for the answers: each entry is copied out, checked, and
/// handed to the runtime, or answered at once with why not. Returns how
/// many it took; an error is a ring the tenant corrupted.
pub(crate) fn take_submissions(
    shared: &Arc<Shared>,
    conn: &Arc<Conn>,
    handle: &isola_runtime::TenantHandle,
    sq: &mut Consumer,
    done: &isola_runtime::OnCompletion,
) -> Result<usize, isola_wire::RingError> {
    let arena = conn.region.layout().geometry.arena_bytes;
    let Ok(operators) = conn.operators.lock() else {
        return Ok(0);
    };
    let operators = operators.as_slice();
    let mut taken = 0;
    loop {
        if !conn.has_room()? {
            return Ok(taken);
        }
        let Some(raw) = sq.pop::<{ Submission::WORDS }>(conn.region.words())? else {
            return Ok(taken);
        };
        taken += 1;
        let now = shared.now_ns();
        let entry = Submission::decode(&raw);
        // Metrics: the task's tenant and engine; a refusal is counted as
        // it is answered.
        let (tenant, engine) = (handle.id().index(), operators.get(entry.handle as usize));
        let engine = engine.and_then(|(op, _)| shared.metrics.engine_of(op));
        let refuse = |outcome: CompletionStatus| {
            shared.metrics.refused(tenant, engine, outcome);
            refusal(entry.tag, outcome, now)
        };
        let checked = match check_submission(
            &entry,
            arena,
            |h| (h as usize) < operators.len(),
            shared.config.max_input,
        ) {
            Ok(c) => c,
            Err(e) => {
                conn.answer(refuse(CompletionStatus::BadEntry(e.code())));
                continue;
            }
        };
        let op = Arc::clone(&operators[checked.handle as usize].1);
        let entry = Entry {
            checked,
            op,
            arrival_ns: now,
            tenant,
            engine,
        };
        if entry.checked.input.len() >= crate::ingest::ASIDE_BYTES {
            // A large copy goes to the ingest thread (`crate::ingest`).
            conn.ingesting.fetch_add(1, Ordering::AcqRel);
            let (s, c, h, d) = (
                Arc::clone(shared),
                Arc::clone(conn),
                handle.clone(),
                Arc::clone(done),
            );
            let job: crate::ingest::Job = Box::new(move || {
                submit_entry(&s, &c, &h, &d, entry);
                c.ingesting.fetch_sub(1, Ordering::AcqRel);
            });
            if let Err(job) = shared.ingest.hand_over(job) {
                job();
            }
            continue;
        }
        if !submit_entry(shared, conn, handle, done, entry) {
            return Ok(taken);
        }
    }
}

/// The answer to entry `tag`, refused with `outcome` as it arrived at
/// `at_ns` (it never ran).
fn refusal(tag: u64, outcome: CompletionStatus, at_ns: u64) -> CompletionEntry {
    CompletionEntry {
        tag,
        outcome,
        output_len: 0,
        arrival_ns: at_ns,
        dispatch_ns: 0,
        completion_ns: at_ns,
        predicted_ns: 0,
        service_ns: 0,
    }
}

/// A checked entry, ready to be copied in and submitted.
struct Entry {
    checked: isola_wire::CheckedSubmission,
    op: Arc<dyn isola_ops::Operator>,
    arrival_ns: u64,
    /// Its tenant seat and engine, for the metrics.
    tenant: usize,
    engine: Option<usize>,
}

/// Copies `entry`'s input out of the arena and hands the task to the
/// runtime, or answers it at once with why not. `false` once the
/// connection has closed (nothing more is taken).
fn submit_entry(
    shared: &Shared,
    conn: &Conn,
    handle: &isola_runtime::TenantHandle,
    done: &isola_runtime::OnCompletion,
    entry: Entry,
) -> bool {
    let Entry {
        checked,
        op,
        arrival_ns,
        tenant,
        engine,
    } = entry;
    let refuse = |outcome: CompletionStatus| {
        shared.metrics.refused(tenant, engine, outcome);
        refusal(checked.tag, outcome, arrival_ns)
    };
    let Ok(input) = conn
        .region
        .read_arena(checked.input.start as u64, checked.input.len() as u64)
    else {
        conn.answer(refuse(CompletionStatus::BadEntry(0)));
        return true;
    };
    // Held across the submission, so that its completion, which may
    // come at once, finds its entry.
    let Ok(mut pending) = conn.pending.lock() else {
        return false;
    };
    // Once the connection closed (checked under this lock, which its
    // thread takes after closing it), nothing more is submitted.
    if conn.closed.load(Ordering::Acquire) {
        drop(pending);
        conn.answer(refuse(CompletionStatus::Cancelled));
        return false;
    }
    match handle.submit_operator_calling(op, input, Arc::clone(done)) {
        Ok(id) => {
            shared
                .metrics
                .accepted(tenant, engine, checked.input.len() as u64);
            pending.insert(
                id,
                Pending {
                    tag: checked.tag,
                    output: checked.output,
                    arrival_ns,
                },
            );
        }
        Err(e) => {
            drop(pending);
            conn.answer(refuse(submit_outcome(&e)));
        }
    }
    true
}

/// The outcome code of a refused submission.
fn submit_outcome(e: &SubmitError) -> CompletionStatus {
    match e {
        SubmitError::ShutDown => CompletionStatus::Cancelled,
        SubmitError::NoEngine(_) | SubmitError::NoCostModel { .. } => {
            CompletionStatus::Rejected(detail::NO_ENGINE)
        }
        _ => CompletionStatus::OperatorFailed(detail::OPERATOR),
    }
}

/// Writes finished task `c`'s output and completion (called by the
/// runtime thread that completed it).
fn answer_task(conn: &Conn, c: Completion) {
    // Read, not removed yet: until its answer is on the completion ring the
    // task counts as in flight, so the seat it was admitted with stays its
    // own (`Conn::has_room`).
    let Some(p) = conn.pending.lock().ok().and_then(|m| m.get(&c.task).cloned()) else {
        return;
    };
    // What the tenant should hear of besides the answer.
    let event = match &c.result {
        Err(TaskError::Rejected(isola_core::RejectReason::ChannelFull { .. })) => {
            Some(EventKind::ChannelFull)
        }
        Err(TaskError::Rejected(isola_core::RejectReason::OverQuota { .. })) => {
            Some(EventKind::QuotaExceeded)
        }
        _ if c.over_budget => Some(EventKind::OverBudget),
        _ => None,
    };
    if let Some(kind) = event {
        conn.tell(kind, p.tag, 0, c.finished_ns);
    }
    let (outcome, output_len) = match &c.result {
        Ok(out) if out.len() > p.output.len() => (
            CompletionStatus::OperatorFailed(detail::OUTPUT_TOO_LARGE),
            out.len() as u64,
        ),
        Ok(out) => match conn.region.write_arena(p.output.start as u64, out) {
            Ok(()) => (CompletionStatus::Ok, out.len() as u64),
            Err(_) => (
                CompletionStatus::OperatorFailed(detail::OUTPUT_TOO_LARGE),
                out.len() as u64,
            ),
        },
        Err(e) => (task_outcome(e), 0),
    };
    let answer = CompletionEntry {
        tag: p.tag,
        outcome,
        output_len,
        arrival_ns: p.arrival_ns,
        dispatch_ns: c.started_ns.unwrap_or(0),
        completion_ns: c.finished_ns,
        predicted_ns: c.predicted_ns,
        service_ns: c.service_ns,
    };
    conn.metrics.answered(&c, &answer);
    conn.answer(answer);
    if let Ok(mut m) = conn.pending.lock() {
        m.remove(&c.task);
        if m.is_empty() {
            conn.all_answered.notify_all();
        }
    }
    conn.shared.keep(&c);
}

/// The outcome code of a task that ended in an error.
fn task_outcome(e: &TaskError) -> CompletionStatus {
    match e {
        TaskError::Rejected(isola_core::RejectReason::ChannelFull { .. }) => {
            CompletionStatus::Rejected(detail::CHANNEL_FULL)
        }
        TaskError::Rejected(isola_core::RejectReason::OverQuota { .. }) => {
            CompletionStatus::Rejected(detail::OVER_QUOTA)
        }
        TaskError::Rejected(_) => CompletionStatus::Rejected(detail::OTHER),
        TaskError::Cancelled => CompletionStatus::Cancelled,
        TaskError::Abandoned { .. } => CompletionStatus::Abandoned,
        TaskError::Panicked { .. } => CompletionStatus::OperatorFailed(detail::PANICKED),
        TaskError::OverBudget { .. } => CompletionStatus::OperatorFailed(detail::OVER_BUDGET),
        _ => CompletionStatus::OperatorFailed(detail::OPERATOR),
    }
}
