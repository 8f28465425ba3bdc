//! # isola-wire
//!
//! What a tenant process and `isolad` share, and nothing else: the layout
//! of a connection's shared-memory region (a header, a submission ring, a
//! completion ring, an event ring and the tenant's buffer arena:
//! [`layout`]), the fixed-size entries that travel on the rings
//! ([`entry`]), the rings' head/tail protocol ([`ring`]), the checks the
//! daemon applies to every entry it reads ([`check`]), the sealed `memfd`
//! that holds a region ([`region`]), and the control socket's messages
//! ([`control`]).
//!
//! The region is hostile memory to the daemon: the tenant may write any
//! byte at any time. So every read of it is an atomic load of an aligned
//! 64-bit word (never a reference into bytes another process mutates), an
//! entry is copied out before it is checked, the daemon keeps its own copy
//! of every index it owns and of the geometry, and what it reads of the
//! tenant's indices is checked before use. A bad entry fails that entry
//! only.
//!
//! What it must not do: schedule, run operators, hold connections' state
//! (the daemon and the client do); trust anything it reads from a region
//! or a socket.

#![warn(missing_docs)]

pub mod admin;
pub mod check;
pub mod control;
pub mod entry;
pub mod layout;
pub mod region;
pub mod ring;

pub use check::{check_submission, CheckedSubmission, EntryError};
pub use entry::{CompletionEntry, CompletionStatus, Event, EventKind, Submission};
pub use layout::{Geometry, Layout, LayoutError};
pub use region::{Region, RegionError};
pub use ring::{Consumer, Producer, RingError, RingSide};
