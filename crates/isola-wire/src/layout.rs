//! Where everything is in a connection's region. The daemon computes the
//! layout from the connection's geometry and writes it into the region's
//! header for the tenant; it never reads it back (a tenant could have
//! changed it). Offsets are in bytes from the region's start; every ring
//! and the arena start on a 4 KiB page, every index on its own cache line.
//!
//! ```text
//! header (16 words) | SQ control | SQ entries | CQ control | CQ entries |
//!                     EQ control | EQ entries | arena (the tenant's quota)
//! ```

use crate::entry::{CompletionEntry, Event, Submission};

/// The region's first word: "ISOLA", a zero, the format's major version.
pub const MAGIC: u64 = u64::from_le_bytes(*b"ISOLA\0\x01\0");

/// The format's version, in the header's second word.
pub const VERSION: u64 = 1;

/// Most entries one ring may have: 2^16.
pub const MAX_RING_ENTRIES: u32 = 1 << 16;

/// Largest arena: 16 GiB (a tenant's memory quota is at most this).
pub const MAX_ARENA_BYTES: u64 = 16 << 30;

/// Words of the header.
pub const HEADER_WORDS: usize = 16;

/// Words of a ring's control block: the consumer's head on the first
/// cache line, the producer's tail on the second.
pub const CONTROL_WORDS: usize = 16;

/// Word of the control block holding the consumer's head.
pub const HEAD_WORD: usize = 0;

/// Word of the control block holding the producer's tail.
pub const TAIL_WORD: usize = 8;

/// Word of the control block where the consumer says it sleeps (1) and
/// wants a wake-up when an entry comes, or polls (0) and needs none.
pub const SLEEPING_WORD: usize = 1;

const PAGE: u64 = 4096;

/// Why a geometry cannot be laid out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A ring's entry count is not a power of two in 1..=MAX_RING_ENTRIES.
    #[error("the {ring} ring's {entries} entries: use a power of two from 1 to {MAX_RING_ENTRIES}")]
    RingEntries {
        /// Which ring.
        ring: &'static str,
        /// The count asked for.
        entries: u32,
    },
    /// The arena is larger than MAX_ARENA_BYTES.
    #[error("an arena of {0} bytes is above the limit of {MAX_ARENA_BYTES}")]
    ArenaTooLarge(u64),
}

/// A connection's ring sizes and arena size: all the daemon needs to lay
/// its region out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Submission ring entries (a power of two).
    pub sq_entries: u32,
    /// Completion ring entries (a power of two).
    pub cq_entries: u32,
    /// Event ring entries (a power of two).
    pub eq_entries: u32,
    /// The arena's size in bytes (the tenant's memory quota).
    pub arena_bytes: u64,
}

/// One ring's place: its control block and its entries, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingPlace {
    /// First word of the control block.
    pub control: usize,
    /// First word of entry 0.
    pub entries: usize,
    /// Number of entries (a power of two).
    pub count: u32,
    /// Words per entry.
    pub entry_words: usize,
}

/// Every part's place in the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The geometry it was laid out for.
    pub geometry: Geometry,
    /// The submission ring (tenant produces, daemon consumes).
    pub sq: RingPlace,
    /// The completion ring (daemon produces, tenant consumes).
    pub cq: RingPlace,
    /// The event ring (daemon produces, tenant consumes).
    pub eq: RingPlace,
    /// The arena's first byte.
    pub arena_offset: u64,
    /// The region's size in bytes (a whole number of pages).
    pub total_bytes: u64,
}

impl Geometry {
    /// Checks the geometry and lays it out.
    pub fn layout(self) -> Result<Layout, LayoutError> {
        for (ring, entries) in [
            ("submission", self.sq_entries),
            ("completion", self.cq_entries),
            ("event", self.eq_entries),
        ] {
            if !(entries.is_power_of_two() && entries <= MAX_RING_ENTRIES) {
                return Err(LayoutError::RingEntries { ring, entries });
            }
        }
        if self.arena_bytes > MAX_ARENA_BYTES {
            return Err(LayoutError::ArenaTooLarge(self.arena_bytes));
        }
        // Bounded above: 3 rings of at most 2^16 entries of at most 8
        // words, and an arena of at most 16 GiB, fit any u64 sum.
        let page_words = (PAGE / 8) as usize;
        let round = |words: usize| words.div_ceil(page_words) * page_words;
        let mut at = round(HEADER_WORDS);
        let mut place = |count: u32, entry_words: usize| {
            let p = RingPlace {
                control: at,
                entries: at + CONTROL_WORDS,
                count,
                entry_words,
            };
            at = round(p.entries + count as usize * entry_words);
            p
        };
        let sq = place(self.sq_entries, Submission::WORDS);
        let cq = place(self.cq_entries, CompletionEntry::WORDS);
        let eq = place(self.eq_entries, Event::WORDS);
        let arena_offset = at as u64 * 8;
        let total_bytes = (arena_offset + self.arena_bytes).div_ceil(PAGE) * PAGE;
        Ok(Layout {
            geometry: self,
            sq,
            cq,
            eq,
            arena_offset,
            total_bytes,
        })
    }
}

impl Layout {
    /// The header's words, as the daemon writes them for the tenant.
    pub fn header(&self) -> [u64; HEADER_WORDS] {
        let g = self.geometry;
        let mut h = [0u64; HEADER_WORDS];
        h[0] = MAGIC;
        h[1] = VERSION;
        h[2] = u64::from(g.sq_entries);
        h[3] = u64::from(g.cq_entries);
        h[4] = u64::from(g.eq_entries);
        h[5] = g.arena_bytes;
        h[6] = self.arena_offset;
        h[7] = self.total_bytes;
        h
    }

    /// The layout a header describes, as the tenant reads it: checked to
    /// be one this format lays out, for a region of `region_bytes`.
    pub fn from_header(h: &[u64; HEADER_WORDS], region_bytes: u64) -> Option<Layout> {
        if h[0] != MAGIC || h[1] != VERSION {
            return None;
        }
        let entries = |w: u64| u32::try_from(w).ok();
        let layout = Geometry {
            sq_entries: entries(h[2])?,
            cq_entries: entries(h[3])?,
            eq_entries: entries(h[4])?,
            arena_bytes: h[5],
        }
        .layout()
        .ok()?;
        (layout.header() == *h && layout.total_bytes <= region_bytes).then_some(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_and_arena_are_page_aligned_and_disjoint() {
        let g = Geometry {
            sq_entries: 256,
            cq_entries: 512,
            eq_entries: 64,
            arena_bytes: 1 << 20,
        };
        let l = g.layout().unwrap();
        let parts = [l.sq, l.cq, l.eq];
        let mut end = HEADER_WORDS;
        for p in parts {
            assert_eq!((p.control * 8) as u64 % PAGE, 0);
            assert!(p.control >= end);
            end = p.entries + p.count as usize * p.entry_words;
        }
        assert!(l.arena_offset >= end as u64 * 8 && l.arena_offset % PAGE == 0);
        assert_eq!(l.total_bytes, l.arena_offset + (1 << 20));
        assert_eq!(Layout::from_header(&l.header(), l.total_bytes), Some(l));
        assert_eq!(Layout::from_header(&l.header(), l.total_bytes - 1), None);
    }

    #[test]
    fn bad_geometries_are_refused() {
        let ok = Geometry {
            sq_entries: 8,
            cq_entries: 8,
            eq_entries: 8,
            arena_bytes: 4096,
        };
        for bad in [
            Geometry { sq_entries: 0, ..ok },
            Geometry { cq_entries: 12, ..ok },
            Geometry {
                eq_entries: MAX_RING_ENTRIES * 2,
                ..ok
            },
            Geometry {
                arena_bytes: MAX_ARENA_BYTES + 1,
                ..ok
            },
        ] {
            assert!(bad.layout().is_err(), "{bad:?}");
        }
        let mut h = ok.layout().unwrap().header();
        h[2] = 7;
        assert_eq!(Layout::from_header(&h, 1 << 30), None);
    }
}
