//! What every call returns ([`isola_status`]), the human message kept
//! for the last failed call on each thread, and the guard every exported
//! function runs its body in: a panic inside becomes
//! [`isola_status::ISOLA_ERR_INTERNAL`], never an unwind into C.

use isola_client::ClientError;
use isola_wire::control::ControlError;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A call's result: `ISOLA_OK`, or why it failed (`isola_status` in
/// `include/isola.h`, same names and values).
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum isola_status {
    /// Done.
    ISOLA_OK = 0,
    /// A pointer argument that must not be null was null.
    ISOLA_ERR_NULL = 1,
    /// The context is not a live one (made up, or destroyed).
    ISOLA_ERR_BAD_CONTEXT = 2,
    /// The operator handle was not registered on this context.
    ISOLA_ERR_BAD_HANDLE = 3,
    /// The buffer was not allocated by this context (or was freed).
    ISOLA_ERR_BAD_BUFFER = 4,
    /// A byte range is not inside the context's arena.
    ISOLA_ERR_OUT_OF_ARENA = 5,
    /// The arena has no free block large enough.
    ISOLA_ERR_NO_MEMORY = 6,
    /// Another argument is invalid (a string not UTF-8, reserved flags
    /// set, a zero length).
    ISOLA_ERR_INVALID = 7,
    /// The daemon could not be reached (no socket there, not a daemon).
    ISOLA_ERR_CONNECT = 8,
    /// The daemon refused to attach this process as the tenant.
    ISOLA_ERR_REFUSED = 9,
    /// The daemon refused a request (an operator registration).
    ISOLA_ERR_FAILED = 10,
    /// The submission ring is full: progress completions, then submit
    /// the rest.
    ISOLA_ERR_RING_FULL = 11,
    /// Nothing is in flight: a blocking wait would never return.
    ISOLA_ERR_IDLE = 12,
    /// The daemon went away (stopped, drained, killed).
    ISOLA_ERR_DISCONNECTED = 13,
    /// The daemon broke the protocol (an answer out of turn, a corrupt
    /// ring index, a region that is not one).
    ISOLA_ERR_PROTOCOL = 14,
    /// A bug in the library, caught (a panic): the context may be unusable.
    ISOLA_ERR_INTERNAL = 15,
    /// No completion came within the wait's time limit.
    ISOLA_ERR_TIMEOUT = 16,
}

impl isola_status {
    /// Every status, in value order.
    pub const ALL: [isola_status; 17] = [
        isola_status::ISOLA_OK,
        isola_status::ISOLA_ERR_NULL,
        isola_status::ISOLA_ERR_BAD_CONTEXT,
        isola_status::ISOLA_ERR_BAD_HANDLE,
        isola_status::ISOLA_ERR_BAD_BUFFER,
        isola_status::ISOLA_ERR_OUT_OF_ARENA,
        isola_status::ISOLA_ERR_NO_MEMORY,
        isola_status::ISOLA_ERR_INVALID,
        isola_status::ISOLA_ERR_CONNECT,
        isola_status::ISOLA_ERR_REFUSED,
        isola_status::ISOLA_ERR_FAILED,
        isola_status::ISOLA_ERR_RING_FULL,
        isola_status::ISOLA_ERR_IDLE,
        isola_status::ISOLA_ERR_DISCONNECTED,
        isola_status::ISOLA_ERR_PROTOCOL,
        isola_status::ISOLA_ERR_INTERNAL,
        isola_status::ISOLA_ERR_TIMEOUT,
    ];

    /// Its name in the header, NUL-terminated (a static string).
    pub fn name(self) -> &'static str {
        match self {
            isola_status::ISOLA_OK => "ISOLA_OK\0",
            isola_status::ISOLA_ERR_NULL => "ISOLA_ERR_NULL\0",
            isola_status::ISOLA_ERR_BAD_CONTEXT => "ISOLA_ERR_BAD_CONTEXT\0",
            isola_status::ISOLA_ERR_BAD_HANDLE => "ISOLA_ERR_BAD_HANDLE\0",
            isola_status::ISOLA_ERR_BAD_BUFFER => "ISOLA_ERR_BAD_BUFFER\0",
            isola_status::ISOLA_ERR_OUT_OF_ARENA => "ISOLA_ERR_OUT_OF_ARENA\0",
            isola_status::ISOLA_ERR_NO_MEMORY => "ISOLA_ERR_NO_MEMORY\0",
            isola_status::ISOLA_ERR_INVALID => "ISOLA_ERR_INVALID\0",
            isola_status::ISOLA_ERR_CONNECT => "ISOLA_ERR_CONNECT\0",
            isola_status::ISOLA_ERR_REFUSED => "ISOLA_ERR_REFUSED\0",
            isola_status::ISOLA_ERR_FAILED => "ISOLA_ERR_FAILED\0",
            isola_status::ISOLA_ERR_RING_FULL => "ISOLA_ERR_RING_FULL\0",
            isola_status::ISOLA_ERR_IDLE => "ISOLA_ERR_IDLE\0",
            isola_status::ISOLA_ERR_DISCONNECTED => "ISOLA_ERR_DISCONNECTED\0",
            isola_status::ISOLA_ERR_PROTOCOL => "ISOLA_ERR_PROTOCOL\0",
            isola_status::ISOLA_ERR_INTERNAL => "ISOLA_ERR_INTERNAL\0",
            isola_status::ISOLA_ERR_TIMEOUT => "ISOLA_ERR_TIMEOUT\0",
        }
    }
}

/// A failed call: its status and the message for humans.
#[derive(Debug)]
pub(crate) struct Error {
    pub(crate) status: isola_status,
    pub(crate) message: String,
}

impl Error {
    /// A failure of `status`, saying `message`.
    pub(crate) fn new(status: isola_status, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// A null `what` argument.
    pub(crate) fn null(what: &str) -> Error {
        Error::new(isola_status::ISOLA_ERR_NULL, format!("`{what}` is null"))
    }
}

impl From<ClientError> for Error {
    fn from(e: ClientError) -> Error {
        use isola_status::*;
        let status = match &e {
            ClientError::Control(ControlError::Closed | ControlError::Os { .. }) => ISOLA_ERR_DISCONNECTED,
            ClientError::Control(_) => ISOLA_ERR_PROTOCOL,
            ClientError::Refused(_) => ISOLA_ERR_REFUSED,
            ClientError::Failed(_) => ISOLA_ERR_FAILED,
            ClientError::Protocol(_) => ISOLA_ERR_PROTOCOL,
            ClientError::Region(isola_wire::RegionError::OutsideArena { .. }) => ISOLA_ERR_OUT_OF_ARENA,
            ClientError::Region(_) => ISOLA_ERR_PROTOCOL,
            ClientError::Ring(isola_wire::RingError::Full) => ISOLA_ERR_RING_FULL,
            ClientError::Ring(_) => ISOLA_ERR_PROTOCOL,
            ClientError::TimedOut(..) => ISOLA_ERR_TIMEOUT,
        };
        Error::new(status, e.to_string())
    }
}

thread_local! {
    /// The message of this thread's last failed call, NUL-terminated.
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

// The message is reached with `try_with` and `try_borrow`: a call from a
// thread whose thread-locals are being torn down (a C thread destructor)
// loses its message rather than panicking outside the guard.

/// Forgets this thread's last message (each call starts so).
fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            m.clear();
        }
    });
}

/// Keeps `message` as this thread's last (interior NULs become spaces:
/// the C side reads up to the first).
fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            m.clear();
            m.extend(message.bytes().map(|b| if b == 0 { b' ' } else { b }));
        }
    });
}

/// Copies this thread's last message into `out` (NUL-terminated,
/// truncated to fit) and returns its full length without the NUL.
pub(crate) fn copy_last_error(out: &mut [u8]) -> usize {
    let copy = |m: &[u8], out: &mut [u8]| {
        if let Some(room) = out.len().checked_sub(1) {
            let n = room.min(m.len());
            out[..n].copy_from_slice(&m[..n]);
            out[n] = 0;
        }
        m.len()
    };
    LAST_ERROR
        .try_with(|m| match m.try_borrow() {
            Ok(m) => copy(&m, out),
            Err(_) => copy(&[], out),
        })
        .unwrap_or_else(|_| copy(&[], out))
}

/// Runs an exported function's body: its error becomes its status and
/// this thread's last message, a panic becomes `ISOLA_ERR_INTERNAL`.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Error>) -> isola_status {
    clear_last_error();
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => isola_status::ISOLA_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            set_last_error(&format!("internal error (a bug in libisola): {what}"));
            isola_status::ISOLA_ERR_INTERNAL
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        let mut buf = [0u8; 256];
        let n = copy_last_error(&mut buf);
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn a_panic_is_a_status_and_a_message_not_an_unwind() {
        let s = guard(|| panic!("boom"));
        assert_eq!(s, isola_status::ISOLA_ERR_INTERNAL);
        assert!(last().contains("boom"), "{}", last());
        let s = guard(|| Err(Error::new(isola_status::ISOLA_ERR_INVALID, "a\0b")));
        assert_eq!((s, last()), (isola_status::ISOLA_ERR_INVALID, "a b".to_string()));
        assert_eq!(guard(|| Ok(())), isola_status::ISOLA_OK);
        assert_eq!(last(), "");
    }
}
