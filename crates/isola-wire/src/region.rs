//! A connection's region: a sealed `memfd` of the layout's size, mapped
//! shared. The daemon creates it ([`Region::create`]): sized, then sealed
//! against shrinking and growing (so the tenant cannot truncate it under
//! the daemon's mapping and make its reads fault), its header written. The
//! tenant maps the descriptor it was passed ([`Region::open`]) and reads
//! the layout from the header, checked.
//!
//! Every access is through [`Region::words`], the mapping as aligned
//! atomic words, or the arena copies, which use those words too.

use crate::layout::{Layout, HEADER_WORDS};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Why a region could not be made, opened or used.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// A system call failed.
    #[error("{what}: {source}")]
    Os {
        /// The call.
        what: &'static str,
        /// Its error.
        source: rustix::io::Errno,
    },
    /// The descriptor is not a region this format lays out (no seals, a
    /// bad header, too small).
    #[error("not an Isola region: {0}")]
    NotARegion(&'static str),
    /// A byte range is not inside the arena.
    #[error("bytes {offset}..+{len} are not inside the arena of {arena} bytes")]
    OutsideArena {
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// The arena's size.
        arena: u64,
    },
}

fn os(what: &'static str) -> impl FnOnce(rustix::io::Errno) -> RegionError {
    move |source| RegionError::Os { what, source }
}

/// A mapped region and its descriptor.
#[derive(Debug)]
pub struct Region {
    fd: OwnedFd,
    base: NonNull<AtomicU64>,
    words: usize,
    layout: Layout,
}

// SAFETY: the mapping is shared memory accessed only through atomics; the
// region owns it until drop, so it may move to and be shared by threads.
unsafe impl Send for Region {}
// SAFETY: as above: every access through `&Region` is an atomic one.
unsafe impl Sync for Region {}

impl Region {
    /// Creates a sealed `memfd` named `name` for `layout`, maps it and
    /// writes its header (the daemon's side).
    pub fn create(name: &str, layout: Layout) -> Result<Region, RegionError> {
        let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
            .map_err(os("memfd_create"))?;
        rustix::fs::ftruncate(&fd, layout.total_bytes).map_err(os("ftruncate"))?;
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
            .map_err(os("fcntl(F_ADD_SEALS)"))?;
        let region = Region::map(fd, layout)?;
        for (i, w) in layout.header().iter().enumerate() {
            region.words()[i].store(*w, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Ok(region)
    }

    /// Maps a region descriptor received from the daemon (the tenant's
    /// side): it must be sealed against resizing and carry a valid header.
    pub fn open(fd: OwnedFd) -> Result<Region, RegionError> {
        let seals = rustix::fs::fcntl_get_seals(&fd).map_err(os("fcntl(F_GET_SEALS)"))?;
        if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
            return Err(RegionError::NotARegion("not sealed against resizing"));
        }
        let size = rustix::fs::fstat(&fd).map_err(os("fstat"))?.st_size;
        let size = u64::try_from(size).map_err(|_| RegionError::NotARegion("negative size"))?;
        if size < (HEADER_WORDS * 8) as u64 || size % 8 != 0 {
            return Err(RegionError::NotARegion("too small for a header"));
        }
        // Map just the header first, to learn the layout.
        let header = {
            let probe = Region::map_words(&fd, HEADER_WORDS)?;
            let words = probe.as_slice();
            let mut h = [0u64; HEADER_WORDS];
            for (i, w) in h.iter_mut().enumerate() {
                *w = words[i].load(Ordering::Acquire);
            }
            h
        };
        let layout = Layout::from_header(&header, size).ok_or(RegionError::NotARegion("bad header"))?;
        Region::map(fd, layout)
    }

    fn map(fd: OwnedFd, layout: Layout) -> Result<Region, RegionError> {
        let words =
            usize::try_from(layout.total_bytes / 8).map_err(|_| RegionError::NotARegion("too large"))?;
        let mapping = Region::map_words(&fd, words)?;
        let base = mapping.base;
        std::mem::forget(mapping);
        Ok(Region {
            fd,
            base,
            words,
            layout,
        })
    }

    /// Maps `words` words of `fd` shared, read-write.
    fn map_words(fd: &OwnedFd, words: usize) -> Result<Mapping, RegionError> {
        let len = words * 8;
        // SAFETY: a fresh shared mapping of a file we hold; nothing else in
        // this process refers to the address range until it is returned.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }
        .map_err(os("mmap"))?;
        let base = NonNull::new(ptr.cast::<AtomicU64>()).ok_or(RegionError::NotARegion("null mapping"))?;
        Ok(Mapping { base, words })
    }

    /// The region as aligned atomic words: the only way its memory is
    /// touched.
    pub fn words(&self) -> &[AtomicU64] {
        // SAFETY: `base` maps `words` words, page-aligned (so aligned for
        // AtomicU64), valid until `self` drops; atomics make concurrent
        // writes by the peer process well-defined.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.words) }
    }

    /// Its layout (the daemon's own, or the header's as checked).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The descriptor, to pass to the tenant.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The arena's bytes as atomics (the arena starts on a page).
    fn arena_bytes(&self) -> &[AtomicU8] {
        let start = self.layout.arena_offset as usize;
        let len = self.layout.geometry.arena_bytes as usize;
        // The slice below is sound only inside the mapping: a layout's
        // arena is (checked when read from a header), and this costs one
        // comparison per copy.
        assert!(
            start.checked_add(len).is_some_and(|end| end <= self.words * 8),
            "the arena lies inside the mapping"
        );
        // SAFETY: the arena lies inside the mapping (the layout puts it
        // there and the mapping covers `total_bytes`); AtomicU8 has the
        // layout of u8 and any alignment; accesses are atomic.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().cast::<AtomicU8>().add(start), len) }
    }

    /// The arena's bytes `offset..offset + len`, or an error outside it.
    fn arena_range(&self, offset: u64, len: u64) -> Result<std::ops::Range<usize>, RegionError> {
        let arena = self.layout.geometry.arena_bytes;
        let range = match offset.checked_add(len) {
            Some(end) if end <= arena => offset as usize..end as usize,
            _ => return Err(RegionError::OutsideArena { offset, len, arena }),
        };
        debug_assert!(
            range.len() as u64 == len && range.end as u64 <= arena,
            "an arena range is the bytes asked, inside the arena"
        );
        Ok(range)
    }

    /// Copies `len` bytes of the arena at `offset` out (a snapshot: the
    /// peer may change them meanwhile, which changes the copy's bytes,
    /// never its length or this process's memory).
    pub fn read_arena(&self, offset: u64, len: u64) -> Result<Vec<u8>, RegionError> {
        self.arena_range(offset, len)?;
        let mut out = Vec::with_capacity(len as usize);
        self.copy_out(offset, &mut out.spare_capacity_mut()[..len as usize])?;
        // SAFETY: `copy_out` initialised all `len` bytes (its ranges tile
        // the range, checked there), and the capacity is at least `len`.
        unsafe { out.set_len(len as usize) };
        Ok(out)
    }

    /// Copies `out.len()` bytes of the arena at `offset` into `out`, as
    /// [`Region::read_arena`] does, without allocating.
    pub fn read_arena_into(&self, offset: u64, out: &mut [u8]) -> Result<(), RegionError> {
        // SAFETY: `u8` and `MaybeUninit<u8>` have one layout, and
        // `copy_out` only writes initialised bytes into it.
        let out = unsafe { &mut *(out as *mut [u8] as *mut [std::mem::MaybeUninit<u8>]) };
        self.copy_out(offset, out)
    }

    /// The one copy out of the arena (a snapshot: the peer may change the
    /// bytes meanwhile, never their length or this process's memory): every
    /// byte of `out` is written. A word at a time where the range covers
    /// whole words, each an 8-byte load and store (a 1 MiB input is read in
    /// tens of microseconds), no byte of `out` written twice.
    fn copy_out(&self, offset: u64, out: &mut [std::mem::MaybeUninit<u8>]) -> Result<(), RegionError> {
        let range = self.arena_range(offset, out.len() as u64)?;
        let (head, words, tail) = self.arena_split(range);
        let bytes = self.arena_bytes();
        let (first, rest) = out.split_at_mut(head.len());
        let (middle, last) = rest.split_at_mut(words.len() * 8);
        debug_assert_eq!(last.len(), tail.len(), "head, words and tail tile the copy");
        for (o, cell) in first.iter_mut().zip(&bytes[head]) {
            o.write(cell.load(Ordering::Relaxed));
        }
        for (chunk, w) in middle.chunks_exact_mut(8).zip(&self.words()[words]) {
            for (o, b) in chunk.iter_mut().zip(w.load(Ordering::Relaxed).to_le_bytes()) {
                o.write(b);
            }
        }
        for (o, cell) in last.iter_mut().zip(&bytes[tail]) {
            o.write(cell.load(Ordering::Relaxed));
        }
        std::sync::atomic::fence(Ordering::Acquire);
        Ok(())
    }

    /// Copies `data` into the arena at `offset`.
    pub fn write_arena(&self, offset: u64, data: &[u8]) -> Result<(), RegionError> {
        let range = self.arena_range(offset, data.len() as u64)?;
        let (head, words, tail) = self.arena_split(range);
        let bytes = self.arena_bytes();
        let (first, rest) = data.split_at(head.len());
        let (middle, last) = rest.split_at(words.len() * 8);
        for (cell, &b) in bytes[head].iter().zip(first) {
            cell.store(b, Ordering::Relaxed);
        }
        for (w, chunk) in self.words()[words].iter().zip(middle.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            w.store(u64::from_le_bytes(word), Ordering::Relaxed);
        }
        for (cell, &b) in bytes[tail].iter().zip(last) {
            cell.store(b, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Ok(())
    }

    /// Splits arena byte range `range` into its unaligned head (arena
    /// bytes), the whole words it covers (indices into `words()`) and its
    /// tail (arena bytes). The arena starts on a page, so arena offsets
    /// and region offsets agree on alignment.
    fn arena_split(
        &self,
        range: std::ops::Range<usize>,
    ) -> (
        std::ops::Range<usize>,
        std::ops::Range<usize>,
        std::ops::Range<usize>,
    ) {
        let first_word = range.start.div_ceil(8);
        let end_word = range.end / 8;
        if first_word >= end_word {
            return (range.clone(), 0..0, range.end..range.end);
        }
        let base = self.layout.arena_offset as usize / 8;
        debug_assert_eq!(self.layout.arena_offset % 8, 0, "the arena starts on a word");
        let split = (
            range.start..first_word * 8,
            base + first_word..base + end_word,
            end_word * 8..range.end,
        );
        debug_assert!(
            split.0.len() + split.1.len() * 8 + split.2.len() == range.len() && split.1.end <= self.words,
            "head, words and tail tile the range, the words inside the region"
        );
        split
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        drop(Mapping {
            base: self.base,
            words: self.words,
        });
    }
}

/// A mapping, unmapped when dropped.
struct Mapping {
    base: NonNull<AtomicU64>,
    words: usize,
}

impl Mapping {
    fn as_slice(&self) -> &[AtomicU64] {
        // SAFETY: as `Region::words`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr(), self.words) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range was mapped by `map_words` and nothing refers to
        // it any more (its owner is being dropped).
        unsafe {
            let _ = rustix::mm::munmap(self.base.as_ptr().cast(), self.words * 8);
        }
    }
}
