//! A first-fit allocator over a context's arena offsets: the arena is the
//! tenant's memory quota, and a buffer is a range of it (an offset and a
//! length), never an address. Blocks are aligned to [`ALIGN`] bytes; a
//! freed block merges with free neighbours.

use std::collections::BTreeMap;

/// Every buffer starts on, and is rounded up to, this many bytes (a cache
/// line: two buffers never share one).
pub const ALIGN: u64 = 64;

/// Why an allocation or a free failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArenaError {
    /// No free block is large enough.
    NoRoom,
    /// A buffer of no bytes, or of more than the arena holds.
    BadLength,
    /// The range freed is not a buffer this allocator handed out.
    NotAllocated,
}

/// The free and allocated blocks of one arena.
#[derive(Debug)]
pub struct Arena {
    size: u64,
    /// Free blocks: offset to length, never adjacent (merged).
    free: BTreeMap<u64, u64>,
    /// Allocated blocks: offset to (length asked, length taken).
    used: BTreeMap<u64, (u64, u64)>,
}

impl Arena {
    /// An allocator over `size` bytes, all free (a tail shorter than
    /// [`ALIGN`] is never handed out).
    pub fn new(size: u64) -> Arena {
        let usable = size - size % ALIGN;
        let mut free = BTreeMap::new();
        if usable > 0 {
            free.insert(0, usable);
        }
        Arena {
            size,
            free,
            used: BTreeMap::new(),
        }
    }

    /// The arena's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes not allocated (some may be in blocks too small for a request).
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }

    /// A block of at least `len` bytes: its offset.
    pub fn alloc(&mut self, len: u64) -> Result<u64, ArenaError> {
        if len == 0 || len > self.size {
            return Err(ArenaError::BadLength);
        }
        let taken = len.div_ceil(ALIGN) * ALIGN;
        let (&offset, &room) = self
            .free
            .iter()
            .find(|(_, &room)| room >= taken)
            .ok_or(ArenaError::NoRoom)?;
        self.free.remove(&offset);
        if room > taken {
            self.free.insert(offset + taken, room - taken);
        }
        self.used.insert(offset, (len, taken));
        Ok(offset)
    }

    /// Frees the block at `offset` of `len` bytes (as allocated).
    pub fn free(&mut self, offset: u64, len: u64) -> Result<(), ArenaError> {
        match self.used.get(&offset) {
            Some(&(asked, _)) if asked == len => {}
            _ => return Err(ArenaError::NotAllocated),
        }
        let (_, taken) = self.used.remove(&offset).ok_or(ArenaError::NotAllocated)?;
        let (mut start, mut end) = (offset, offset + taken);
        // Merge with the free block just before, and the one just after.
        if let Some((&before, &room)) = self.free.range(..start).next_back() {
            if before + room == start {
                self.free.remove(&before);
                start = before;
            }
        }
        if let Some(room) = self.free.remove(&end) {
            end += room;
        }
        self.free.insert(start, end - start);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_disjoint_and_merge_back() {
        let mut a = Arena::new(4096);
        let x = a.alloc(9).unwrap();
        let y = a.alloc(4).unwrap();
        let z = a.alloc(100).unwrap();
        assert_eq!((x, y, z), (0, 64, 128));
        assert_eq!(a.free_bytes(), 4096 - 64 - 64 - 128);
        a.free(y, 4).unwrap();
        // The hole is reused first.
        assert_eq!(a.alloc(60).unwrap(), 64);
        a.free(64, 60).unwrap();
        a.free(x, 9).unwrap();
        a.free(z, 100).unwrap();
        assert_eq!(a.free_bytes(), 4096);
        // Merged into one block: the whole arena fits again.
        assert_eq!(a.alloc(4096).unwrap(), 0);
    }

    #[test]
    fn mistakes_are_errors() {
        let mut a = Arena::new(1000);
        assert_eq!(a.alloc(0), Err(ArenaError::BadLength));
        assert_eq!(a.alloc(1001), Err(ArenaError::BadLength));
        // 1000 bytes hold 960 usable in aligned blocks.
        assert_eq!(a.alloc(961), Err(ArenaError::NoRoom));
        let x = a.alloc(960).unwrap();
        assert_eq!(a.alloc(1), Err(ArenaError::NoRoom));
        assert_eq!(a.free(x, 959), Err(ArenaError::NotAllocated));
        assert_eq!(a.free(x + 64, 1), Err(ArenaError::NotAllocated));
        a.free(x, 960).unwrap();
        assert_eq!(a.free(x, 960), Err(ArenaError::NotAllocated));
        let mut tiny = Arena::new(10);
        assert_eq!(tiny.alloc(10), Err(ArenaError::NoRoom));
    }
}
