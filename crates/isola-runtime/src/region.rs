//! Host memory regions: where a DMA engine's workers copy a tenant's bytes
//! to (writes) or from (reads). The runtime only needs bounds-checked
//! `write_at` / `read_at`, so a region is a trait: `isola run` gives each
//! tenant a [`HeapRegion`] (an allocated buffer); the daemon can hand the
//! tenant's shared memory arena (a memfd mapping) through the same trait,
//! a wrapper of `isola_wire::Region` whose `write_at`/`read_at` are its
//! `write_arena`/`read_arena` (their `OutsideArena` error this module's
//! [`RegionError::OutOfBounds`]).
//!
//! A transfer that does not fit its region is a typed [`RegionError`],
//! checked before a byte moves: never a panic, never a partial copy.

use std::ops::Range;
use std::sync::Mutex;

/// Why a transfer could not touch a host region.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegionError {
    /// `[offset, offset + len)` does not lie inside the region.
    #[error("a transfer of {len} bytes at offset {offset} does not fit the {region}-byte host region")]
    OutOfBounds {
        /// First byte of the transfer in the region.
        offset: u64,
        /// Its length.
        len: u64,
        /// The region's size.
        region: u64,
    },
    /// The region could not be used (a lock poisoned by a panic, an arena
    /// unmapped): what the region says.
    #[error("the host region is unusable: {0}")]
    Unusable(String),
}

/// A tenant's host memory, as its DMA engine sees it: bytes at offsets
/// from 0 to `len()`. Implementations check bounds (with [`bounds`]) and
/// copy; concurrent transfers to one region come from several workers.
pub trait HostRegion: Send + Sync + std::fmt::Debug {
    /// Its size in bytes.
    fn len(&self) -> u64;

    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `bytes` into the region from `offset` on.
    fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), RegionError>;

    /// Copies `into.len()` bytes of the region from `offset` on into `into`.
    fn read_at(&self, offset: u64, into: &mut [u8]) -> Result<(), RegionError>;
}

/// The byte range `[offset, offset + len)` of a region of `region` bytes,
/// or why it does not fit (overflow included).
pub fn bounds(offset: u64, len: u64, region: u64) -> Result<Range<usize>, RegionError> {
    let out = || RegionError::OutOfBounds { offset, len, region };
    let end = offset.checked_add(len).filter(|&e| e <= region).ok_or_else(out)?;
    let start = usize::try_from(offset).map_err(|_| out())?;
    let end = usize::try_from(end).map_err(|_| out())?;
    Ok(start..end)
}

/// A host region in this process's heap: `isola run`'s per-tenant region,
/// and the tests'. Transfers copy under a lock, so concurrent writes to
/// overlapping bytes are each whole (the later one wins).
#[derive(Debug)]
pub struct HeapRegion {
    bytes: Mutex<Box<[u8]>>,
    len: u64,
}

impl HeapRegion {
    /// A zeroed region of `len` bytes.
    pub fn new(len: usize) -> HeapRegion {
        HeapRegion {
            bytes: Mutex::new(vec![0u8; len].into_boxed_slice()),
            len: len as u64,
        }
    }

    /// A copy of its bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes.lock().map(|b| b.to_vec()).unwrap_or_default()
    }

    fn locked(&self) -> Result<std::sync::MutexGuard<'_, Box<[u8]>>, RegionError> {
        self.bytes
            .lock()
            .map_err(|_| RegionError::Unusable("a transfer panicked holding its lock".into()))
    }
}

impl HostRegion for HeapRegion {
    fn len(&self) -> u64 {
        self.len
    }

    fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), RegionError> {
        let range = bounds(offset, bytes.len() as u64, self.len)?;
        self.locked()?[range].copy_from_slice(bytes);
        Ok(())
    }

    fn read_at(&self, offset: u64, into: &mut [u8]) -> Result<(), RegionError> {
        let range = bounds(offset, into.len() as u64, self.len)?;
        into.copy_from_slice(&self.locked()?[range]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_refuse_what_does_not_fit_and_overflows() {
        assert_eq!(bounds(2, 3, 5), Ok(2..5));
        assert_eq!(bounds(5, 0, 5), Ok(5..5));
        assert!(bounds(3, 3, 5).is_err());
        assert!(bounds(u64::MAX, 2, u64::MAX).is_err());
        let r = HeapRegion::new(4);
        assert_eq!(
            r.write_at(2, &[1, 2, 3]),
            Err(RegionError::OutOfBounds {
                offset: 2,
                len: 3,
                region: 4
            })
        );
        assert_eq!(r.to_vec(), [0; 4], "a refused transfer copies nothing");
    }
}
