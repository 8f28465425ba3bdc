//! # isola-capi: libisola, the C ABI of an `isolad` tenant
//!
//! A C (or C++, or any FFI) program attaches to `isolad` through this
//! library as a Rust program does through `isola-client`, in the shape of
//! the accelerator SDKs such programs already use (DOCA's context, tasks
//! and progress engine; DPDK's queue pair and bursts): a context
//! ([`isola_create`]) attaches as a tenant; operators are registered by
//! name and parameters ([`isola_register`]), each giving a handle; buffers
//! are ranges of the tenant's arena ([`isola_buf_alloc`], [`isola_write`],
//! [`isola_read`]); tasks are submitted in bursts ([`isola_submit`]) and
//! their completions delivered to a callback by a poll ([`isola_progress`])
//! or a blocking wait ([`isola_wait`]); events are read
//! ([`isola_events`]); the context is destroyed ([`isola_destroy`]). The
//! header is `include/isola.h`; `tests/c_example.rs` keeps the two in step.
//!
//! What it must not do: panic or unwind across the boundary (every body
//! runs under `catch_unwind`); trust a pointer or handle from C beyond the
//! documented contract (null pointers, unknown contexts, unregistered
//! operators, foreign buffers and ranges outside the arena are typed
//! errors); hand C a pointer into memory it may free (buffers are arena
//! offsets and data is copied in and out, so nothing C holds dangles when
//! a context is destroyed); or add logic of its own beyond what the C
//! shape needs: the protocol is `isola-client`'s.
//!
//! The contract every function keeps: it returns an [`isola_status`]
//! (`ISOLA_OK` or the error's kind) and, on failure, keeps a message for
//! humans that [`isola_last_error`] copies out (one per thread, cleared by
//! the thread's next call); an output argument is written only on
//! success, but for counts (tasks submitted, completions delivered, events
//! read), which say how far a call got before it failed. A pointer to `n`
//! items may be null when `n` is 0; any other null pointer is
//! `ISOLA_ERR_NULL`.

#![warn(missing_docs)]

mod arena;
mod context;
mod status;
mod types;

pub use status::isola_status;
pub use types::*;

use context::{Context, Partial};
use status::{guard, Error};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::unix::ffi::OsStrExt;

/// Buffers from [`isola_buf_alloc`] start on, and are rounded up to, this
/// many bytes.
pub const ISOLA_ALIGN: u64 = arena::ALIGN;

/// The context a C handle names (null: an error).
fn context(ctx: *const isola_ctx) -> Result<std::sync::Arc<Context>, Error> {
    if ctx.is_null() {
        return Err(Error::null("ctx"));
    }
    context::lookup(ctx.addr())
}

/// The string at `p`, as UTF-8.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
unsafe fn string<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    bytes(p, what).and_then(|b| {
        std::str::from_utf8(b)
            .map_err(|_| Error::new(isola_status::ISOLA_ERR_INVALID, format!("`{what}` is not UTF-8")))
    })
}

/// The bytes of the string at `p`, without its NUL.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
unsafe fn bytes<'a>(p: *const c_char, what: &str) -> Result<&'a [u8], Error> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(p) }.to_bytes())
}

/// The `n` items at `p` (null allowed when `n` is 0), copied.
///
/// # Safety
/// `p` is null or points to `n` readable items of `T`.
unsafe fn items<T: Copy>(p: *const T, n: usize, what: &str) -> Result<Vec<T>, Error> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if p.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-null and, as the caller promises, `n` items of T
    // (read unaligned: C's pointer need not be aligned for us to be sound).
    Ok((0..n).map(|i| unsafe { p.add(i).read_unaligned() }).collect())
}

/// Writes `value` through the output pointer `out` (null: an error).
///
/// # Safety
/// `out` is null or points to writable room for a `T`.
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<(), Error> {
    if out.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-null and, as the caller promises, room for a T.
    unsafe { out.write_unaligned(value) };
    Ok(())
}

/// Writes `value` through `out` if it is not null (an optional output).
///
/// # Safety
/// `out` is null or points to writable room for a `T`.
unsafe fn put_optional<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-null and, as the caller promises, room for a T.
        unsafe { out.write_unaligned(value) };
    }
}

/// The byte length `len` as a slice may have it.
fn slice_len(len: usize) -> Result<usize, Error> {
    if len > isize::MAX as usize {
        return Err(Error::new(isola_status::ISOLA_ERR_INVALID, "length too large"));
    }
    Ok(len)
}

/// Connects to `isolad` at `socket_path` and attaches as `tenant`; the new
/// context's handle goes to `*out` (which is set to null first, and on any
/// failure).
///
/// # Safety
/// `socket_path` and `tenant` are null or NUL-terminated strings; `out` is
/// null or points to room for a handle.
#[no_mangle]
pub unsafe extern "C" fn isola_create(
    socket_path: *const c_char,
    tenant: *const c_char,
    out: *mut *mut isola_ctx,
) -> isola_status {
    // SAFETY: per this function's contract.
    unsafe { create(socket_path, tenant, None, out) }
}

/// As [`isola_create`], but waits at most `timeout_ns` for isolad's answer
/// to the attach and to every later request of the context (a
/// registration, a host window): `ISOLA_ERR_TIMEOUT` when a daemon that
/// accepted the connection hangs. For adapters, whose calls must end.
///
/// # Safety
/// As [`isola_create`].
#[no_mangle]
pub unsafe extern "C" fn isola_create_timed(
    socket_path: *const c_char,
    tenant: *const c_char,
    timeout_ns: u64,
    out: *mut *mut isola_ctx,
) -> isola_status {
    let limit = std::time::Duration::from_nanos(timeout_ns);
    // SAFETY: per this function's contract.
    unsafe { create(socket_path, tenant, Some(limit), out) }
}

/// [`isola_create`] and [`isola_create_timed`].
///
/// # Safety
/// As [`isola_create`].
unsafe fn create(
    socket_path: *const c_char,
    tenant: *const c_char,
    reply_limit: Option<std::time::Duration>,
    out: *mut *mut isola_ctx,
) -> isola_status {
    guard(|| {
        // SAFETY: per this function's contract.
        unsafe { put(out, std::ptr::null_mut(), "out")? };
        // SAFETY: per this function's contract.
        let path = std::ffi::OsStr::from_bytes(unsafe { bytes(socket_path, "socket_path")? });
        // SAFETY: per this function's contract.
        let tenant = unsafe { string(tenant, "tenant")? };
        let ctx = Context::create(std::path::Path::new(path), tenant, reply_limit)?;
        let key = context::insert(ctx);
        // SAFETY: checked non-null above.
        unsafe { put(out, std::ptr::without_provenance_mut(key), "out") }
    })
}

/// Destroys the context: detaches from the daemon (tasks in flight are
/// finished and discarded by it) and releases its memory; the handle is
/// dead from now on (`ISOLA_ERR_BAD_CONTEXT`). A call running on it in
/// another thread finishes first.
///
/// # Safety
/// None beyond the C signature: any handle value is checked.
#[no_mangle]
pub unsafe extern "C" fn isola_destroy(ctx: *mut isola_ctx) -> isola_status {
    guard(|| {
        if ctx.is_null() {
            return Err(Error::null("ctx"));
        }
        drop(context::remove(ctx.addr())?);
        Ok(())
    })
}

/// What the context is attached as, and its limits, into `*out`.
///
/// # Safety
/// `out` is null or points to room for an [`isola_info`].
#[no_mangle]
pub unsafe extern "C" fn isola_get_info(ctx: *const isola_ctx, out: *mut isola_info) -> isola_status {
    guard(|| {
        let info = context(ctx)?.info()?;
        // SAFETY: per this function's contract.
        unsafe { put(out, info, "out") }
    })
}

/// Sets how long [`isola_wait`] polls (ns) before it sleeps on the socket
/// (default 50 us; 0 sleeps at once).
///
/// # Safety
/// None beyond the C signature: the handle is checked.
#[no_mangle]
pub unsafe extern "C" fn isola_set_spin(ctx: *const isola_ctx, spin_ns: u64) -> isola_status {
    guard(|| context(ctx)?.set_spin(spin_ns))
}

/// Registers operator `op` (a name of `isola op --list`) with the
/// `n_params` parameters at `params`; its handle, which names it in
/// tasks, goes to `*handle`.
///
/// # Safety
/// `op` is null or a NUL-terminated string; `params` is null or points to
/// `n_params` parameters whose strings are null or NUL-terminated;
/// `handle` is null or points to room for a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn isola_register(
    ctx: *const isola_ctx,
    op: *const c_char,
    params: *const isola_param,
    n_params: usize,
    handle: *mut u32,
) -> isola_status {
    guard(|| {
        let ctx = context(ctx)?;
        // SAFETY: per this function's contract.
        let op = unsafe { string(op, "op")? };
        let mut map = BTreeMap::new();
        // SAFETY: per this function's contract.
        for (i, p) in unsafe { items(params, n_params, "params")? }.iter().enumerate() {
            // SAFETY: per this function's contract.
            let key = unsafe { string(p.key, &format!("params[{i}].key"))? };
            // SAFETY: per this function's contract.
            let value = unsafe { string(p.value, &format!("params[{i}].value"))? };
            map.insert(key.to_string(), value.to_string());
        }
        if handle.is_null() {
            return Err(Error::null("handle"));
        }
        let h = ctx.register(op, &map)?;
        // SAFETY: per this function's contract.
        unsafe { put(handle, h, "handle") }
    })
}

/// Makes the arena's bytes `buf` (typically from [`isola_buf_alloc`]) the
/// tenant's host window: its packet kernels' DMA writes land there, each
/// told as an `ISOLA_EVENT_HOST_WRITTEN` event. A `buf` of length 0
/// withdraws it; one outside the arena is refused.
#[no_mangle]
pub extern "C" fn isola_host_window(ctx: *const isola_ctx, buf: isola_buf) -> isola_status {
    guard(|| context(ctx)?.host_window(buf))
}

/// Allocates a buffer of `len` bytes from the context's arena into `*out`
/// (its offset aligned to [`ISOLA_ALIGN`] bytes). The allocator is a convenience:
/// tasks may name any range of the arena.
///
/// # Safety
/// `out` is null or points to room for an [`isola_buf`].
#[no_mangle]
pub unsafe extern "C" fn isola_buf_alloc(
    ctx: *const isola_ctx,
    len: u64,
    out: *mut isola_buf,
) -> isola_status {
    guard(|| {
        let ctx = context(ctx)?;
        if out.is_null() {
            return Err(Error::null("out"));
        }
        let buf = ctx.alloc(len)?;
        // SAFETY: per this function's contract.
        unsafe { put(out, buf, "out") }
    })
}

/// Gives back a buffer [`isola_buf_alloc`] returned (the same offset and
/// length); another one is `ISOLA_ERR_BAD_BUFFER`.
///
/// # Safety
/// None beyond the C signature: the handle and the buffer are checked.
#[no_mangle]
pub unsafe extern "C" fn isola_buf_free(ctx: *const isola_ctx, buf: isola_buf) -> isola_status {
    guard(|| context(ctx)?.free(buf))
}

/// Copies the `len` bytes at `data` into the arena at `offset`.
///
/// # Safety
/// `data` is null or points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn isola_write(
    ctx: *const isola_ctx,
    offset: u64,
    data: *const c_void,
    len: usize,
) -> isola_status {
    guard(|| {
        let ctx = context(ctx)?;
        // SAFETY: per this function's contract.
        let data = unsafe { bytes_in(data.cast(), len, "data")? };
        ctx.write(offset, data)
    })
}

/// Copies `len` bytes of the arena at `offset` to `out`.
///
/// # Safety
/// `out` is null or points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn isola_read(
    ctx: *const isola_ctx,
    offset: u64,
    out: *mut c_void,
    len: usize,
) -> isola_status {
    guard(|| {
        let ctx = context(ctx)?;
        let len = slice_len(len)?;
        if len == 0 {
            return ctx.read(offset, &mut []);
        }
        if out.is_null() {
            return Err(Error::null("out"));
        }
        // SAFETY: non-null and, per this function's contract, `len`
        // writable bytes, which nothing else in this call refers to.
        let out = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), len) };
        ctx.read(offset, out)
    })
}

/// The `len` bytes at `p` (null allowed when `len` is 0).
///
/// # Safety
/// `p` is null or points to `len` readable bytes.
unsafe fn bytes_in<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8], Error> {
    let len = slice_len(len)?;
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-null and, as the caller promises, `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Submits the `n` tasks at `tasks`, in order, telling the daemon once.
/// All are checked first (a registered handle, flags 0, both ranges in the
/// arena); one that fails fails the call and none is submitted. A full
/// submission ring stops the burst: `ISOLA_ERR_RING_FULL`, the first
/// `*submitted` tasks were submitted (progress, then submit the rest).
/// `submitted` may be null.
///
/// # Safety
/// `tasks` is null or points to `n` tasks; `submitted` is null or points
/// to room for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn isola_submit(
    ctx: *const isola_ctx,
    tasks: *const isola_task,
    n: usize,
    submitted: *mut usize,
) -> isola_status {
    guard(|| {
        // SAFETY: per this function's contract.
        unsafe { put_optional(submitted, 0) };
        let ctx = context(ctx)?;
        // SAFETY: per this function's contract.
        let tasks = unsafe { items(tasks, n, "tasks")? };
        let Partial { done, error } = ctx.submit(&tasks);
        // SAFETY: per this function's contract.
        unsafe { put_optional(submitted, done) };
        error.map_or(Ok(()), Err)
    })
}

/// Calls `cb(completion, arg)` for each of up to `max` completions that
/// are ready (`max` 0: all that are), without blocking; how many were
/// delivered goes to `*done` (which may be null). The callback may call
/// the library, this context included (no lock is held during it).
///
/// This call does not notice a daemon that went away (nothing arrives);
/// [`isola_wait`] does: poll with this, and wait when nothing is ready.
///
/// # Safety
/// `cb` is null or a function that may be called with `arg`; `done` is
/// null or points to room for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn isola_progress(
    ctx: *const isola_ctx,
    cb: isola_completion_cb,
    arg: *mut c_void,
    max: usize,
    done: *mut usize,
) -> isola_status {
    // SAFETY: per this function's contract.
    unsafe { deliver(ctx, cb, arg, max, done, None) }
}

/// As [`isola_progress`], but blocks until at least one completion is
/// ready: `ISOLA_ERR_IDLE` if no task is in flight (it would never
/// return), `ISOLA_ERR_DISCONNECTED` if the daemon goes away meanwhile.
/// It holds the context meanwhile: another thread's call on it waits.
///
/// # Safety
/// As [`isola_progress`].
#[no_mangle]
pub unsafe extern "C" fn isola_wait(
    ctx: *const isola_ctx,
    cb: isola_completion_cb,
    arg: *mut c_void,
    max: usize,
    done: *mut usize,
) -> isola_status {
    // SAFETY: per this function's contract.
    unsafe { deliver(ctx, cb, arg, max, done, Some(None)) }
}

/// As [`isola_wait`], but waits at most `timeout_ns`: `ISOLA_ERR_TIMEOUT`
/// if no completion came by then (a signal does not end it early).
///
/// # Safety
/// As [`isola_progress`].
#[no_mangle]
pub unsafe extern "C" fn isola_wait_for(
    ctx: *const isola_ctx,
    cb: isola_completion_cb,
    arg: *mut c_void,
    max: usize,
    timeout_ns: u64,
    done: *mut usize,
) -> isola_status {
    let deadline = std::time::Instant::now().checked_add(std::time::Duration::from_nanos(timeout_ns));
    // SAFETY: per this function's contract.
    unsafe { deliver(ctx, cb, arg, max, done, Some(deadline)) }
}

/// Tells isolad that `count` calls meant for it ran in this process
/// instead, for `reason` (an `isola_fallback_reason`; any other counts as
/// `ISOLA_FALLBACK_FAILED`): its metric `isola_tenant_fallbacks_total`
/// counts them. For adapters that fall back to software (the OpenSSL
/// provider, the zlib interposer); nothing is awaited.
///
/// # Safety
/// None beyond the C signature: the handle is checked.
#[no_mangle]
pub unsafe extern "C" fn isola_report_fallbacks(
    ctx: *const isola_ctx,
    reason: u32,
    count: u64,
) -> isola_status {
    guard(|| context(ctx)?.report_fallbacks(reason, count))
}

/// [`isola_progress`] (`block` `None`), [`isola_wait`] (`Some(None)`) and
/// [`isola_wait_for`] (`Some(deadline)`).
///
/// # Safety
/// As [`isola_progress`].
unsafe fn deliver(
    ctx: *const isola_ctx,
    cb: isola_completion_cb,
    arg: *mut c_void,
    max: usize,
    done: *mut usize,
    block: Option<Option<std::time::Instant>>,
) -> isola_status {
    guard(|| {
        // SAFETY: per the contract.
        unsafe { put_optional(done, 0) };
        let ctx = context(ctx)?;
        let cb = cb.ok_or_else(|| Error::null("cb"))?;
        // Collected under the context's lock, delivered after it.
        let Partial { done: ready, error } = ctx.completions(max, block);
        for (i, c) in ready.iter().enumerate() {
            // SAFETY: `cb` is a function that may be called with `arg` (the
            // contract); the completion lives through the call.
            unsafe { cb(c, arg) };
            // SAFETY: per the contract.
            unsafe { put_optional(done, i + 1) };
        }
        error.map_or(Ok(()), Err)
    })
}

/// Copies up to `cap` events from the context's event ring to `out`; how
/// many goes to `*n`.
///
/// # Safety
/// `out` is null or points to room for `cap` events; `n` is null or points
/// to room for a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn isola_events(
    ctx: *const isola_ctx,
    out: *mut isola_event,
    cap: usize,
    n: *mut usize,
) -> isola_status {
    guard(|| {
        let ctx = context(ctx)?;
        if n.is_null() {
            return Err(Error::null("n"));
        }
        if out.is_null() && cap > 0 {
            return Err(Error::null("out"));
        }
        let Partial { done, error } = ctx.events(cap);
        for (i, e) in done.iter().enumerate() {
            // SAFETY: `i < cap` and, per the contract, `out` has room for
            // `cap` events.
            unsafe { out.add(i).write_unaligned(*e) };
        }
        // SAFETY: checked non-null above; per the contract.
        unsafe { put(n, done.len(), "n")? };
        error.map_or(Ok(()), Err)
    })
}

/// The name of status `status` in the header (`"ISOLA_ERR_NULL"`), or
/// `"ISOLA_STATUS_UNKNOWN"`: a static string, never freed.
#[no_mangle]
pub extern "C" fn isola_status_name(status: c_int) -> *const c_char {
    let name = isola_status::ALL
        .iter()
        .find(|s| **s as c_int == status)
        .map_or("ISOLA_STATUS_UNKNOWN\0", |s| s.name());
    name.as_ptr().cast()
}

/// Copies the message of this thread's last failed call into `buf`
/// (NUL-terminated, truncated to `cap` bytes; nothing is written when
/// `cap` is 0) and returns its full length without the NUL (0: the last
/// call succeeded). Every other call clears it first.
///
/// # Safety
/// `buf` is null or points to `cap` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn isola_last_error(buf: *mut c_char, cap: usize) -> usize {
    std::panic::catch_unwind(|| {
        if buf.is_null() || cap == 0 || cap > isize::MAX as usize {
            return status::copy_last_error(&mut []);
        }
        // SAFETY: non-null and, per the contract, `cap` writable bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), cap) };
        status::copy_last_error(out)
    })
    .unwrap_or(0)
}
