//! Contexts: an attached [`Client`], the operators registered on it, its
//! arena's allocator and its count of tasks in flight, behind a lock, in a
//! table of live contexts.
//!
//! C holds a context as a handle that is a key into the table, never an
//! address: every call looks it up before use, so a destroyed, made-up or
//! mixed-up handle is [`ISOLA_ERR_BAD_CONTEXT`](isola_status::ISOLA_ERR_BAD_CONTEXT),
//! never a dangling pointer. Keys are never reused. A call holds its own
//! reference to the context, so a context destroyed by one thread while
//! another uses it lives until that call returns.

use crate::arena::{Arena, ArenaError};
use crate::status::{isola_status, Error};
use crate::types::{self, isola_buf, isola_completion, isola_event, isola_info, isola_task};
use isola_client::{Client, ClientError};
use isola_wire::Submission;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The live contexts, by key.
static TABLE: Mutex<BTreeMap<usize, Arc<Context>>> = Mutex::new(BTreeMap::new());

/// The next context's key (never 0, never reused).
static NEXT: AtomicUsize = AtomicUsize::new(1);

/// The table, even after a panic elsewhere (its map is never left half
/// changed: an insert or remove either happened or did not).
fn table() -> MutexGuard<'static, BTreeMap<usize, Arc<Context>>> {
    TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Adds `ctx` to the table; its key.
pub(crate) fn insert(ctx: Context) -> usize {
    let key = NEXT.fetch_add(1, Ordering::Relaxed);
    table().insert(key, Arc::new(ctx));
    key
}

/// The live context `key` names.
pub(crate) fn lookup(key: usize) -> Result<Arc<Context>, Error> {
    table().get(&key).cloned().ok_or_else(|| bad_context(key))
}

/// Takes context `key` out of the table (it is dropped, detaching, when
/// the last call using it returns).
pub(crate) fn remove(key: usize) -> Result<Arc<Context>, Error> {
    table().remove(&key).ok_or_else(|| bad_context(key))
}

fn bad_context(key: usize) -> Error {
    Error::new(
        isola_status::ISOLA_ERR_BAD_CONTEXT,
        format!("context {key:#x} is not a live context (never created, or destroyed)"),
    )
}

/// One attached tenant connection, as C uses it.
pub(crate) struct Context {
    inner: Mutex<Inner>,
}

struct Inner {
    client: Client,
    /// Handles `isola_register` returned on this context.
    handles: BTreeSet<u32>,
    arena: Arena,
    /// Tasks submitted and not yet completed.
    in_flight: u64,
}

/// What a call that handles several items did before it stopped: how many
/// it handled, and why it stopped early, if it did.
pub(crate) struct Partial<T> {
    pub(crate) done: T,
    pub(crate) error: Option<Error>,
}

impl Context {
    /// Connects to the daemon at `socket` and attaches as `tenant`, waiting
    /// at most `reply_limit` for each of its answers (`None`: as long as
    /// it takes).
    pub(crate) fn create(
        socket: &Path,
        tenant: &str,
        reply_limit: Option<std::time::Duration>,
    ) -> Result<Context, Error> {
        let client = Client::connect_within(socket, tenant, reply_limit).map_err(|e| match e {
            ClientError::Control(c) => Error::new(
                isola_status::ISOLA_ERR_CONNECT,
                format!("connecting to isolad at {}: {c}", socket.display()),
            ),
            other => Error::from(other),
        })?;
        let arena = Arena::new(client.arena_bytes());
        Ok(Context {
            inner: Mutex::new(Inner {
                client,
                handles: BTreeSet::new(),
                arena,
                in_flight: 0,
            }),
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, Error> {
        self.inner.lock().map_err(|_| {
            Error::new(
                isola_status::ISOLA_ERR_INTERNAL,
                "the context is unusable after an earlier internal error; destroy it",
            )
        })
    }

    /// What the context is attached as.
    pub(crate) fn info(&self) -> Result<isola_info, Error> {
        let inner = self.lock()?;
        Ok(isola_info {
            tenant_index: inner.client.tenant(),
            reserved: 0,
            arena_bytes: inner.client.arena_bytes(),
            max_input: inner.client.max_input(),
        })
    }

    /// Sets how long a blocking wait polls before it sleeps.
    pub(crate) fn set_spin(&self, spin_ns: u64) -> Result<(), Error> {
        self.lock()?
            .client
            .set_spin(std::time::Duration::from_nanos(spin_ns));
        Ok(())
    }

    /// Registers `op` with `params`: its handle.
    pub(crate) fn register(&self, op: &str, params: &BTreeMap<String, String>) -> Result<u32, Error> {
        let mut inner = self.lock()?;
        let handle = inner
            .client
            .register(op, params)
            .map_err(|e| with_context(e, &format!("registering `{op}`")))?;
        inner.handles.insert(handle);
        Ok(handle)
    }

    /// Makes `buf` the tenant's host window (`len` 0 withdraws it).
    pub(crate) fn host_window(&self, buf: isola_buf) -> Result<(), Error> {
        let mut inner = self.lock()?;
        inner
            .client
            .host_window(buf.offset, buf.len)
            .map_err(|e| with_context(e, "setting the host window"))
    }

    /// A buffer of `len` bytes from the arena.
    pub(crate) fn alloc(&self, len: u64) -> Result<isola_buf, Error> {
        let mut inner = self.lock()?;
        match inner.arena.alloc(len) {
            Ok(offset) => Ok(isola_buf { offset, len }),
            Err(ArenaError::NoRoom) => Err(Error::new(
                isola_status::ISOLA_ERR_NO_MEMORY,
                format!(
                    "no free block of {len} bytes in the arena ({} of {} bytes free)",
                    inner.arena.free_bytes(),
                    inner.arena.size()
                ),
            )),
            Err(_) => Err(Error::new(
                isola_status::ISOLA_ERR_INVALID,
                format!(
                    "a buffer of {len} bytes: must be from 1 to the arena's {} bytes",
                    inner.arena.size()
                ),
            )),
        }
    }

    /// Gives `buf` back to the arena.
    pub(crate) fn free(&self, buf: isola_buf) -> Result<(), Error> {
        self.lock()?.arena.free(buf.offset, buf.len).map_err(|_| {
            Error::new(
                isola_status::ISOLA_ERR_BAD_BUFFER,
                format!(
                    "buffer {}..+{} was not allocated by this context (or was freed)",
                    buf.offset, buf.len
                ),
            )
        })
    }

    /// Copies `data` into the arena at `offset`.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) -> Result<(), Error> {
        Ok(self.lock()?.client.write(offset, data)?)
    }

    /// Copies `out.len()` bytes of the arena at `offset` into `out`.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        Ok(self.lock()?.client.read_into(offset, out)?)
    }

    /// Submits `tasks` in order, after checking them all (one bad task:
    /// none is submitted); stops early at a full ring.
    pub(crate) fn submit(&self, tasks: &[isola_task]) -> Partial<usize> {
        let mut inner = match self.lock() {
            Ok(inner) => inner,
            Err(e) => {
                return Partial {
                    done: 0,
                    error: Some(e),
                }
            }
        };
        let arena = inner.client.arena_bytes();
        let mut batch = Vec::with_capacity(tasks.len());
        for (i, t) in tasks.iter().enumerate() {
            if let Err(e) = check_task(t, &inner.handles, arena) {
                let message = format!("task {i} (tag {}): {}; nothing was submitted", t.tag, e.message);
                return Partial {
                    done: 0,
                    error: Some(Error::new(e.status, message)),
                };
            }
            batch.push(Submission {
                handle: t.op,
                flags: t.flags,
                input_offset: t.input_offset,
                input_len: t.input_len,
                output_offset: t.output_offset,
                output_cap: t.output_cap,
                tag: t.tag,
            });
        }
        match inner.client.submit_burst(&batch) {
            Ok(n) => {
                inner.in_flight += n as u64;
                let error = (n < batch.len()).then(|| {
                    Error::new(
                        isola_status::ISOLA_ERR_RING_FULL,
                        format!(
                            "the submission ring is full: {n} of {} tasks submitted; \
                             progress completions, then submit the rest",
                            batch.len()
                        ),
                    )
                });
                Partial { done: n, error }
            }
            // Entries may have gone on before the error: the count is not
            // known, the connection is not usable anyway.
            Err(e) => Partial {
                done: 0,
                error: Some(e.into()),
            },
        }
    }

    /// Tells the daemon `count` calls ran in this process instead, for
    /// `reason`.
    pub(crate) fn report_fallbacks(&self, reason: u32, count: u64) -> Result<(), Error> {
        let mut inner = self.lock()?;
        inner
            .client
            .report_fallbacks(reason, count)
            .map_err(|e| with_context(e, "reporting fallbacks"))
    }

    /// Up to `max` completions that are ready (0: all that are), without
    /// blocking; or, blocking (`block` is `Some`), at least one: an error
    /// if none is in flight, or if none came by the deadline (`Some(None)`
    /// waits as long as it takes).
    pub(crate) fn completions(
        &self,
        max: usize,
        block: Option<Option<std::time::Instant>>,
    ) -> Partial<Vec<isola_completion>> {
        let mut done = Vec::new();
        let mut inner = match self.lock() {
            Ok(inner) => inner,
            Err(e) => return Partial { done, error: Some(e) },
        };
        let limit = if max == 0 { usize::MAX } else { max };
        if let Some(deadline) = block {
            if inner.in_flight == 0 {
                let e = Error::new(
                    isola_status::ISOLA_ERR_IDLE,
                    "no task is in flight on this context: nothing to wait for",
                );
                return Partial { done, error: Some(e) };
            }
            match wait_once(&mut inner.client, deadline) {
                Ok(c) => {
                    inner.in_flight = inner.in_flight.saturating_sub(1);
                    done.push(types::completion(&c));
                }
                Err(e) => return Partial { done, error: Some(e) },
            }
        }
        while done.len() < limit {
            match inner.client.poll() {
                Ok(Some(c)) => {
                    inner.in_flight = inner.in_flight.saturating_sub(1);
                    done.push(types::completion(&c));
                }
                Ok(None) => break,
                Err(e) => {
                    return Partial {
                        done,
                        error: Some(e.into()),
                    }
                }
            }
        }
        Partial { done, error: None }
    }

    /// Up to `cap` events from the event ring.
    pub(crate) fn events(&self, cap: usize) -> Partial<Vec<isola_event>> {
        let mut done = Vec::new();
        let mut inner = match self.lock() {
            Ok(inner) => inner,
            Err(e) => return Partial { done, error: Some(e) },
        };
        while done.len() < cap {
            match inner.client.event() {
                Ok(Some(e)) => done.push(types::event(&e)),
                Ok(None) => break,
                Err(e) => {
                    return Partial {
                        done,
                        error: Some(e.into()),
                    }
                }
            }
        }
        Partial { done, error: None }
    }
}

/// The next completion, waiting until `deadline` if there is one (a signal
/// that cuts a sleep short only makes it look again).
fn wait_once(
    client: &mut Client,
    deadline: Option<std::time::Instant>,
) -> Result<isola_wire::CompletionEntry, Error> {
    let waited = |e| with_context(e, "waiting for a completion");
    let Some(deadline) = deadline else {
        return client.wait().map_err(waited);
    };
    loop {
        if let Some(c) = client.wait_until(deadline).map_err(waited)? {
            return Ok(c);
        }
        if std::time::Instant::now() >= deadline {
            return Err(Error::new(
                isola_status::ISOLA_ERR_TIMEOUT,
                "no completion came within the wait's time limit",
            ));
        }
    }
}

/// `e`, its message prefixed by what was being done.
fn with_context(e: ClientError, doing: &str) -> Error {
    let e = Error::from(e);
    Error::new(e.status, format!("{doing}: {}", e.message))
}

/// Whether `t` may be submitted: its handle registered here, no reserved
/// flags, both ranges inside the arena (the daemon checks the rest, such
/// as overlap, and answers those with `ISOLA_OUTCOME_BAD_ENTRY`).
fn check_task(t: &isola_task, handles: &BTreeSet<u32>, arena: u64) -> Result<(), Error> {
    if !handles.contains(&t.op) {
        return Err(Error::new(
            isola_status::ISOLA_ERR_BAD_HANDLE,
            format!("operator handle {} is not registered on this context", t.op),
        ));
    }
    if t.flags != 0 {
        return Err(Error::new(
            isola_status::ISOLA_ERR_INVALID,
            format!("flags {:#x}: reserved, must be 0", t.flags),
        ));
    }
    for (what, offset, len) in [
        ("input", t.input_offset, t.input_len),
        ("output", t.output_offset, t.output_cap),
    ] {
        if offset.checked_add(len).is_none_or(|end| end > arena) {
            return Err(Error::new(
                isola_status::ISOLA_ERR_OUT_OF_ARENA,
                format!("the {what}, bytes {offset}..+{len}, is not inside the arena of {arena} bytes"),
            ));
        }
    }
    Ok(())
}
