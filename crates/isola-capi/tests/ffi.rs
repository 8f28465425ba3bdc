//! The C ABI called as C calls it, from Rust, against a real daemon: a
//! burst of tasks answered through the callback, and every error path the
//! contract names (null pointers, dead or made-up contexts, unregistered
//! handles, ranges outside the arena, foreign buffers, a daemon gone, a
//! tenant refused) a typed status with a message, never a crash.

mod common;

use isola::isola_status::*;
use isola::*;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{null, null_mut};

/// This thread's last error message.
fn last_error() -> String {
    let mut buf = [0u8; 4096];
    // SAFETY: `buf` has room for its length.
    let n = unsafe { isola_last_error(buf.as_mut_ptr().cast(), buf.len()) };
    let text = CStr::from_bytes_until_nul(&buf)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(n, text.len());
    text
}

/// A context attached as tenant `a` to the daemon at `socket`.
fn create(socket: &std::path::Path) -> *mut isola_ctx {
    let path = CString::new(socket.to_str().unwrap()).unwrap();
    let mut ctx = null_mut();
    // SAFETY: NUL-terminated strings and room for the handle.
    let s = unsafe { isola_create(path.as_ptr(), c"a".as_ptr(), &mut ctx) };
    assert_eq!(s, ISOLA_OK, "{}", last_error());
    assert!(!ctx.is_null());
    ctx
}

/// Registers `crc32c` on `ctx`.
fn crc32c(ctx: *mut isola_ctx) -> u32 {
    let mut h = u32::MAX;
    // SAFETY: a NUL-terminated name, no parameters, room for the handle.
    let s = unsafe { isola_register(ctx, c"crc32c".as_ptr(), null(), 0, &mut h) };
    assert_eq!(s, ISOLA_OK, "{}", last_error());
    h
}

/// Collects completions into the `Vec<isola_completion>` at `arg`.
unsafe extern "C" fn collect(c: *const isola_completion, arg: *mut c_void) {
    // SAFETY: the tests pass a `Vec<isola_completion>` as `arg`; `c` lives
    // through the call.
    unsafe { (*arg.cast::<Vec<isola_completion>>()).push(*c) };
}

/// Waits for `n` completions on `ctx`.
fn wait_for(ctx: *mut isola_ctx, n: usize) -> Vec<isola_completion> {
    let mut got: Vec<isola_completion> = Vec::new();
    while got.len() < n {
        let arg = (&mut got as *mut Vec<isola_completion>).cast();
        // SAFETY: `collect` takes this `arg`.
        let s = unsafe { isola_wait(ctx, Some(collect), arg, 0, null_mut()) };
        assert_eq!(s, ISOLA_OK, "{}", last_error());
    }
    got
}

/// A crc32c task on `len` bytes at `input` writing 4 bytes at `output`.
fn task(op: u32, input: u64, len: u64, output: u64, tag: u64) -> isola_task {
    isola_task {
        op,
        flags: 0,
        input_offset: input,
        input_len: len,
        output_offset: output,
        output_cap: 4,
        tag,
    }
}

#[test]
fn a_burst_is_answered_through_the_callback() {
    let (_d, socket) = common::daemon("burst");
    let ctx = create(&socket);
    let mut info = isola_info::default();
    // SAFETY: room for the info.
    assert_eq!(unsafe { isola_get_info(ctx, &mut info) }, ISOLA_OK);
    assert_eq!(info.arena_bytes, 64 << 10);
    let op = crc32c(ctx);
    let (mut input, mut output) = (isola_buf::default(), isola_buf::default());
    // SAFETY: room for the buffers; 9 readable bytes.
    unsafe {
        assert_eq!(isola_buf_alloc(ctx, 9, &mut input), ISOLA_OK);
        assert_eq!(isola_buf_alloc(ctx, 4 * 20, &mut output), ISOLA_OK);
        assert_eq!(
            isola_write(ctx, input.offset, b"123456789".as_ptr().cast(), 9),
            ISOLA_OK
        );
    }
    assert_eq!((input.offset % ISOLA_ALIGN, output.offset % ISOLA_ALIGN), (0, 0));
    // 20 tasks on a ring of 8: a burst stops at a full ring and says how
    // far it got; the rest go after completions.
    let tasks: Vec<isola_task> = (0..20)
        .map(|i| task(op, input.offset, 9, output.offset + 4 * i, i))
        .collect();
    let (mut sent, mut got) = (0, Vec::new());
    while sent < tasks.len() {
        let mut n = usize::MAX;
        // SAFETY: `tasks[sent..]` are readable tasks; room for the count.
        let s = unsafe { isola_submit(ctx, tasks[sent..].as_ptr(), tasks.len() - sent, &mut n) };
        assert!(
            s == ISOLA_OK || s == ISOLA_ERR_RING_FULL,
            "{s:?}: {}",
            last_error()
        );
        assert!(n <= tasks.len() - sent);
        if s == ISOLA_ERR_RING_FULL {
            assert!(last_error().contains("ring is full"), "{}", last_error());
        }
        sent += n;
        got.extend(wait_for(ctx, 1));
    }
    got.extend(wait_for(ctx, tasks.len() - got.len()));
    got.sort_by_key(|c| c.tag);
    assert_eq!(
        got.iter().map(|c| c.tag).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    for c in &got {
        assert_eq!(
            (c.outcome, c.detail, c.output_len),
            (ISOLA_OUTCOME_OK, 0, 4),
            "{c:?}"
        );
        assert!(c.completion_ns >= c.arrival_ns && c.service_ns > 0, "{c:?}");
        let mut crc = [0u8; 4];
        // SAFETY: room for 4 bytes.
        let s = unsafe { isola_read(ctx, output.offset + 4 * c.tag, crc.as_mut_ptr().cast(), 4) };
        assert_eq!(s, ISOLA_OK);
        assert_eq!(u32::from_be_bytes(crc), 0xE306_9283);
    }
    // Nothing in flight: a wait would never end, so it is an error.
    // SAFETY: `collect` takes a Vec.
    let s = unsafe {
        isola_wait(
            ctx,
            Some(collect),
            (&mut got as *mut Vec<_>).cast(),
            0,
            null_mut(),
        )
    };
    assert_eq!(s, ISOLA_ERR_IDLE);
    assert!(last_error().contains("nothing to wait for"), "{}", last_error());
    let mut n = usize::MAX;
    // SAFETY: no room needed for 0 events; room for the count.
    assert_eq!(unsafe { isola_events(ctx, null_mut(), 0, &mut n) }, ISOLA_OK);
    assert_eq!(n, 0);
    assert_eq!(last_error(), "", "a call that succeeds clears the message");
    // SAFETY: a live context.
    assert_eq!(unsafe { isola_destroy(ctx) }, ISOLA_OK);
}

#[test]
fn null_pointers_are_errors() {
    let (_d, socket) = common::daemon("null");
    let path = CString::new(socket.to_str().unwrap()).unwrap();
    let mut ctx = null_mut();
    // SAFETY (all below): every pointer is null or valid; null is the point.
    unsafe {
        assert_eq!(isola_create(null(), c"a".as_ptr(), &mut ctx), ISOLA_ERR_NULL);
        assert!(last_error().contains("`socket_path` is null"), "{}", last_error());
        assert_eq!(isola_create(path.as_ptr(), null(), &mut ctx), ISOLA_ERR_NULL);
        assert_eq!(
            isola_create(path.as_ptr(), c"a".as_ptr(), null_mut()),
            ISOLA_ERR_NULL
        );
        assert!(ctx.is_null());
        assert_eq!(isola_destroy(null_mut()), ISOLA_ERR_NULL);
        assert_eq!(isola_get_info(null(), &mut isola_info::default()), ISOLA_ERR_NULL);
        assert!(last_error().contains("`ctx` is null"), "{}", last_error());
    }
    let ctx = create(&socket);
    let op = crc32c(ctx);
    let mut h = 0;
    // SAFETY (all below): as above.
    unsafe {
        assert_eq!(isola_get_info(ctx, null_mut()), ISOLA_ERR_NULL);
        assert_eq!(isola_register(ctx, null(), null(), 0, &mut h), ISOLA_ERR_NULL);
        assert_eq!(
            isola_register(ctx, c"crc32c".as_ptr(), null(), 0, null_mut()),
            ISOLA_ERR_NULL
        );
        assert_eq!(
            isola_register(ctx, c"crc32c".as_ptr(), null(), 1, &mut h),
            ISOLA_ERR_NULL
        );
        let param = isola_param {
            key: c"level".as_ptr(),
            value: null(),
        };
        assert_eq!(
            isola_register(ctx, c"crc32c".as_ptr(), &param, 1, &mut h),
            ISOLA_ERR_NULL
        );
        assert!(last_error().contains("params[0].value"), "{}", last_error());
        assert_eq!(isola_buf_alloc(ctx, 8, null_mut()), ISOLA_ERR_NULL);
        assert_eq!(isola_write(ctx, 0, null(), 4), ISOLA_ERR_NULL);
        assert_eq!(isola_read(ctx, 0, null_mut(), 4), ISOLA_ERR_NULL);
        // A pointer to no items may be null.
        assert_eq!(isola_write(ctx, 0, null(), 0), ISOLA_OK);
        assert_eq!(isola_submit(ctx, null(), 0, null_mut()), ISOLA_OK);
        assert_eq!(isola_submit(ctx, null(), 1, null_mut()), ISOLA_ERR_NULL);
        let t = task(op, 0, 9, 4096, 1);
        assert_eq!(isola_submit(ctx, &t, 1, null_mut()), ISOLA_OK);
        assert_eq!(
            isola_progress(ctx, None, null_mut(), 0, null_mut()),
            ISOLA_ERR_NULL
        );
        assert_eq!(isola_wait(ctx, None, null_mut(), 0, null_mut()), ISOLA_ERR_NULL);
        assert_eq!(isola_events(ctx, null_mut(), 4, &mut 0), ISOLA_ERR_NULL);
        assert_eq!(isola_events(ctx, null_mut(), 0, null_mut()), ISOLA_ERR_NULL);
        // Non-UTF-8 is invalid, not a crash.
        let bad = [0xffu8, 0];
        assert_eq!(
            isola_register(ctx, bad.as_ptr().cast(), null(), 0, &mut h),
            ISOLA_ERR_INVALID
        );
    }
    assert_eq!(wait_for(ctx, 1)[0].outcome, ISOLA_OUTCOME_OK);
    // SAFETY: a live context.
    assert_eq!(unsafe { isola_destroy(ctx) }, ISOLA_OK);
}

#[test]
fn dead_and_made_up_contexts_and_unknown_handles_are_errors() {
    let (_d, socket) = common::daemon("handles");
    let ctx = create(&socket);
    let op = crc32c(ctx);
    let mut info = isola_info::default();
    // SAFETY (all below): every pointer is valid; the handles are the point.
    unsafe {
        let made_up: *mut isola_ctx = std::ptr::without_provenance_mut(0xdead_beef);
        assert_eq!(isola_get_info(made_up, &mut info), ISOLA_ERR_BAD_CONTEXT);
        assert!(last_error().contains("not a live context"), "{}", last_error());
        // An operator never registered here: refused, nothing submitted.
        let good = task(op, 0, 9, 4096, 1);
        let stray = task(op + 1000, 0, 9, 4096, 2);
        let mut n = usize::MAX;
        assert_eq!(
            isola_submit(ctx, [good, stray].as_ptr(), 2, &mut n),
            ISOLA_ERR_BAD_HANDLE
        );
        assert_eq!(n, 0);
        assert!(last_error().contains("task 1 (tag 2)"), "{}", last_error());
        let flagged = isola_task { flags: 1, ..good };
        assert_eq!(isola_submit(ctx, &flagged, 1, &mut n), ISOLA_ERR_INVALID);
        // Nothing went out: nothing to wait for.
        let s = isola_wait(ctx, Some(collect), null_mut(), 0, null_mut());
        assert_eq!(s, ISOLA_ERR_IDLE);
        // An operator the daemon does not know.
        let mut h = 0;
        let s = isola_register(ctx, c"no-such-op".as_ptr(), null(), 0, &mut h);
        assert_eq!(s, ISOLA_ERR_FAILED, "{}", last_error());
        assert!(last_error().contains("no-such-op"), "{}", last_error());
        // A destroyed context is dead for good.
        assert_eq!(isola_destroy(ctx), ISOLA_OK);
        assert_eq!(isola_destroy(ctx), ISOLA_ERR_BAD_CONTEXT);
        assert_eq!(isola_get_info(ctx, &mut info), ISOLA_ERR_BAD_CONTEXT);
        assert_eq!(isola_submit(ctx, &good, 1, null_mut()), ISOLA_ERR_BAD_CONTEXT);
    }
}

#[test]
fn ranges_outside_the_arena_and_foreign_buffers_are_errors() {
    let (_d, socket) = common::daemon("arena");
    let ctx = create(&socket);
    let op = crc32c(ctx);
    let arena = 64u64 << 10;
    let mut bytes = [0u8; 8];
    let mut buf = isola_buf::default();
    // SAFETY (all below): every pointer is valid for its length.
    unsafe {
        assert_eq!(
            isola_write(ctx, arena - 2, bytes.as_ptr().cast(), 4),
            ISOLA_ERR_OUT_OF_ARENA
        );
        assert!(last_error().contains("not inside the arena"), "{}", last_error());
        assert_eq!(
            isola_read(ctx, arena - 2, bytes.as_mut_ptr().cast(), 4),
            ISOLA_ERR_OUT_OF_ARENA
        );
        assert_eq!(
            isola_read(ctx, u64::MAX, bytes.as_mut_ptr().cast(), 8),
            ISOLA_ERR_OUT_OF_ARENA
        );
        assert_eq!(isola_read(ctx, arena - 4, bytes.as_mut_ptr().cast(), 4), ISOLA_OK);
        for t in [
            task(op, arena - 4, 9, 0, 1),
            task(op, 0, 9, arena - 2, 2),
            task(op, u64::MAX - 3, 9, 4096, 3),
        ] {
            assert_eq!(isola_submit(ctx, &t, 1, null_mut()), ISOLA_ERR_OUT_OF_ARENA);
        }
        // The allocator: within the arena, then out of room.
        assert_eq!(isola_buf_alloc(ctx, 0, &mut buf), ISOLA_ERR_INVALID);
        assert_eq!(isola_buf_alloc(ctx, arena + 1, &mut buf), ISOLA_ERR_INVALID);
        assert_eq!(isola_buf_alloc(ctx, arena - 64, &mut buf), ISOLA_OK);
        let mut more = isola_buf::default();
        assert_eq!(isola_buf_alloc(ctx, 65, &mut more), ISOLA_ERR_NO_MEMORY);
        assert!(last_error().contains("no free block"), "{}", last_error());
        assert_eq!(isola_buf_alloc(ctx, 64, &mut more), ISOLA_OK);
        // Only what was handed out may be given back, once.
        let foreign = isola_buf {
            offset: buf.offset + 64,
            len: 64,
        };
        assert_eq!(isola_buf_free(ctx, foreign), ISOLA_ERR_BAD_BUFFER);
        assert_eq!(
            isola_buf_free(ctx, isola_buf { len: 1, ..buf }),
            ISOLA_ERR_BAD_BUFFER
        );
        assert_eq!(isola_buf_free(ctx, buf), ISOLA_OK);
        assert_eq!(isola_buf_free(ctx, buf), ISOLA_ERR_BAD_BUFFER);
        assert_eq!(isola_buf_free(ctx, more), ISOLA_OK);
        // Ranges the daemon refuses (overlapping) come back as a bad entry.
        let overlap = task(op, 0, 9, 4, 9);
        assert_eq!(isola_submit(ctx, &overlap, 1, null_mut()), ISOLA_OK);
    }
    let c = wait_for(ctx, 1)[0];
    assert_eq!(
        (c.tag, c.outcome, c.detail),
        (9, ISOLA_OUTCOME_BAD_ENTRY, ISOLA_BAD_ENTRY_OVERLAP)
    );
    // SAFETY: a live context.
    assert_eq!(unsafe { isola_destroy(ctx) }, ISOLA_OK);
}

#[test]
fn a_daemon_gone_is_a_typed_error() {
    let (d, socket) = common::daemon("gone");
    let ctx = create(&socket);
    let op = crc32c(ctx);
    let t = task(op, 0, 9, 4096, 1);
    // SAFETY: a readable task.
    assert_eq!(unsafe { isola_submit(ctx, &t, 1, null_mut()) }, ISOLA_OK);
    assert_eq!(wait_for(ctx, 1)[0].outcome, ISOLA_OUTCOME_OK);
    assert!(d.drain(std::time::Duration::from_secs(10)), "the drain timed out");
    // SAFETY (all below): every pointer is valid.
    unsafe {
        // The tenant was told.
        let mut events = [isola_event::default(); 4];
        let mut n = 0;
        assert_eq!(isola_events(ctx, events.as_mut_ptr(), 4, &mut n), ISOLA_OK);
        assert!(
            events[..n].iter().any(|e| e.kind == ISOLA_EVENT_DRAINING),
            "{events:?}"
        );
        // A request is answered by no one.
        let mut h = 0;
        let s = isola_register(ctx, c"crc32c".as_ptr(), null(), 0, &mut h);
        assert_eq!(s, ISOLA_ERR_DISCONNECTED, "{}", last_error());
        // A task may still go on the ring (shared memory), but its wait is an
        // error, not a hang.
        let s = isola_submit(ctx, &t, 1, null_mut());
        if s == ISOLA_OK {
            let s = isola_wait(ctx, Some(collect), null_mut(), 0, null_mut());
            assert_eq!(s, ISOLA_ERR_DISCONNECTED, "{}", last_error());
        } else {
            assert_eq!(s, ISOLA_ERR_DISCONNECTED, "{}", last_error());
        }
        assert_eq!(isola_destroy(ctx), ISOLA_OK);
        // No daemon there now.
        let path = CString::new(socket.to_str().unwrap()).unwrap();
        let mut ctx = null_mut();
        assert_eq!(
            isola_create(path.as_ptr(), c"a".as_ptr(), &mut ctx),
            ISOLA_ERR_CONNECT
        );
        assert!(last_error().contains("connecting to isolad"), "{}", last_error());
    }
}

#[test]
fn a_tenant_not_granted_is_refused() {
    let (_d, socket) = common::daemon("refused");
    let path = CString::new(socket.to_str().unwrap()).unwrap();
    let mut ctx: *mut isola_ctx = std::ptr::without_provenance_mut(1);
    for tenant in [c"b", c"nobody"] {
        // SAFETY: NUL-terminated strings and room for the handle.
        let s = unsafe { isola_create(path.as_ptr(), tenant.as_ptr(), &mut ctx) };
        assert_eq!(s, ISOLA_ERR_REFUSED, "{}", last_error());
        assert!(ctx.is_null(), "the handle is nulled on failure");
    }
    assert!(last_error().contains("no tenant"), "{}", last_error());
}

#[test]
fn statuses_have_names_and_messages_are_copied_safely() {
    for s in isola_status::ALL {
        // SAFETY: a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(isola_status_name(s as i32)) };
        assert_eq!(name.to_str().unwrap(), s.name().trim_end_matches('\0'));
    }
    // SAFETY: a static NUL-terminated string.
    let unknown = unsafe { CStr::from_ptr(isola_status_name(-1)) };
    assert_eq!(unknown, c"ISOLA_STATUS_UNKNOWN");
    // SAFETY (all below): every pointer is valid for its length.
    unsafe {
        assert_eq!(isola_destroy(null_mut()), ISOLA_ERR_NULL);
        let full = "`ctx` is null";
        assert_eq!(isola_last_error(null_mut(), 0), full.len());
        let mut small = [0x55u8; 6];
        assert_eq!(isola_last_error(small.as_mut_ptr().cast(), 6), full.len());
        assert_eq!(&small, b"`ctx`\0");
        // Keys are never handed out this high: a made-up handle.
        let made_up: *mut isola_ctx = std::ptr::without_provenance_mut(usize::MAX - 8);
        let mut n = 0;
        assert_eq!(
            isola_events(made_up, null_mut(), 0, &mut n),
            ISOLA_ERR_BAD_CONTEXT
        );
        assert!(last_error().contains("0xfffffffffffffff7"), "{}", last_error());
        let _ = isola_status_name(0);
        assert!(
            !last_error().is_empty(),
            "a name lookup is not a call that clears"
        );
    }
}
