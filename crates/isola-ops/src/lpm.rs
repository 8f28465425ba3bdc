//! `lpm`: IPv4 and IPv6 longest-prefix match, the route lookup of a
//! router's forwarding plane, on the `prefix-trie` crate (a multi-bit
//! tree-bitmap trie).
//!
//! Input is addresses back to back, network byte order (4 bytes each for
//! `family=ipv4`, 16 for `ipv6`). Output is, per address, the next hop of
//! the longest matching prefix as a u32, big-endian, or [`NO_ROUTE`]
//! (`ffffffff`) when no prefix matches. The table is built once, when the
//! operator is built, from a route file (`routes`) or from seeded random
//! routes (`random-routes`, `seed`); addresses are independent, so a task
//! splits into subtasks of whole addresses ([`crate::records`]).
//!
//! Route file: one route a line, `prefix/len next_hop` (e.g.
//! `192.0.2.0/24 7`, `2001:db8::/32 9`), the next hop a whole number below
//! `ffffffff`; `#` starts a comment; blank lines are skipped. A prefix with
//! bits set past its length is an error (as `ip route` says); a prefix
//! listed twice keeps its last next hop.
//!
//! Random routes mimic the shape of an Internet (default-free) table, so
//! there is no default route and addresses outside every prefix miss. IPv4:
//! 60% /24, 20% /22-/23, 17% /16-/21, 3% /8-/15. IPv6: 50% /48, 15% /32,
//! 25% /29-/47 (without /32), 10% /49-/64. Next hops are 0 to 1023.

use crate::operator::{OpError, Operator};
use crate::records::{whole_records, PerRecord, RecordMap, RESULT_BYTES};
use isola_core::params::{ParamError, Params};
use prefix_trie::{Prefix, PrefixMap};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// The result for an address no route covers.
pub const NO_ROUTE: u32 = u32::MAX;

/// Largest `random-routes`.
pub const MAX_RANDOM_ROUTES: u64 = 2_000_000;

/// An address family: the integer an address is read into (its first bit
/// the most significant), and how addresses are written.
pub(crate) trait Family: Copy + Eq + Debug + Send + Sync + 'static
where
    (Self, u8): Prefix<R = Self>,
{
    /// `ipv4` or `ipv6`.
    const NAME: &'static str;
    /// Address width in bytes.
    const BYTES: usize;
    /// The address of `bytes` (exactly `BYTES` of them), network order.
    fn from_be(bytes: &[u8]) -> Option<Self>;
    /// The address written as text (`192.0.2.1`, `2001:db8::1`).
    fn parse(text: &str) -> Option<Self>;
    /// The address made of the top bits of a random 128-bit number.
    fn from_random(bits: u128) -> Self;
    /// `self` with every bit after the first `len` cleared.
    fn masked(self, len: u8) -> Self;
    /// A random prefix length with the shape of a real table.
    fn random_len(r: u64) -> u8;
}

impl Family for u32 {
    const NAME: &'static str = "ipv4";
    const BYTES: usize = 4;

    fn from_be(bytes: &[u8]) -> Option<Self> {
        Some(u32::from_be_bytes(bytes.try_into().ok()?))
    }

    fn parse(text: &str) -> Option<Self> {
        text.parse::<std::net::Ipv4Addr>().ok().map(u32::from)
    }

    fn from_random(bits: u128) -> Self {
        (bits >> 96) as u32
    }

    fn masked(self, len: u8) -> Self {
        self.checked_shr(32 - u32::from(len.min(32)))
            .and_then(|a| a.checked_shl(32 - u32::from(len.min(32))))
            .unwrap_or(0)
    }

    fn random_len(r: u64) -> u8 {
        match r % 100 {
            0..60 => 24,
            60..80 => 22 + (r / 100 % 2) as u8,
            80..97 => 16 + (r / 100 % 6) as u8,
            _ => 8 + (r / 100 % 8) as u8,
        }
    }
}

impl Family for u128 {
    const NAME: &'static str = "ipv6";
    const BYTES: usize = 16;

    fn from_be(bytes: &[u8]) -> Option<Self> {
        Some(u128::from_be_bytes(bytes.try_into().ok()?))
    }

    fn parse(text: &str) -> Option<Self> {
        text.parse::<std::net::Ipv6Addr>().ok().map(u128::from)
    }

    fn from_random(bits: u128) -> Self {
        bits
    }

    fn masked(self, len: u8) -> Self {
        self.checked_shr(128 - u32::from(len.min(128)))
            .and_then(|a| a.checked_shl(128 - u32::from(len.min(128))))
            .unwrap_or(0)
    }

    fn random_len(r: u64) -> u8 {
        match r % 100 {
            0..50 => 48,
            50..65 => 32,
            65..90 => [29, 30, 31, 33, 34, 35, 36, 40, 44, 46, 47][(r / 100 % 11) as usize],
            _ => 49 + (r / 100 % 16) as u8,
        }
    }
}

/// Prefix length bound for family `A`.
fn max_len<A: Family>() -> u8
where
    (A, u8): Prefix<R = A>,
{
    (A::BYTES * 8) as u8
}

/// A route table of one family.
pub(crate) struct Table<A: Family>
where
    (A, u8): Prefix<R = A>,
{
    pub(crate) trie: PrefixMap<(A, u8), u32>,
}

impl<A: Family> Table<A>
where
    (A, u8): Prefix<R = A>,
{
    /// Parses a route file's text; `Err` is the line number and what is wrong.
    fn parse(text: &str) -> Result<Table<A>, (usize, String)> {
        let mut trie = PrefixMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let (addr, len, hop) = Self::parse_route(line).map_err(|e| (n + 1, format!("`{line}`: {e}")))?;
            trie.insert((addr, len), hop);
        }
        Ok(Table { trie })
    }

    /// One `prefix/len next_hop` line (without comment).
    fn parse_route(line: &str) -> Result<(A, u8, u32), String> {
        let mut words = line.split_whitespace();
        let (Some(prefix), Some(hop), None) = (words.next(), words.next(), words.next()) else {
            return Err("expected `prefix/len next_hop`".into());
        };
        let (addr, len) = prefix
            .split_once('/')
            .ok_or_else(|| format!("prefix `{prefix}` has no `/len`"))?;
        let addr = A::parse(addr).ok_or_else(|| format!("`{addr}` is not an {} address", A::NAME))?;
        let len = len
            .parse::<u8>()
            .ok()
            .filter(|&l| l <= max_len::<A>())
            .ok_or_else(|| format!("prefix length `{len}` is not 0 to {}", max_len::<A>()))?;
        if addr.masked(len) != addr {
            return Err(format!("prefix `{prefix}` has bits set past its length"));
        }
        let hop = hop
            .parse::<u32>()
            .ok()
            .filter(|&h| h != NO_ROUTE)
            .ok_or_else(|| format!("next hop `{hop}` is not a whole number below {NO_ROUTE}"))?;
        Ok((addr, len, hop))
    }

    /// `count` random routes from `seed` (see [`random_routes`]).
    fn random(count: u64, seed: u64) -> Table<A> {
        let mut trie = PrefixMap::new();
        for (prefix, len, hop) in random_routes::<A>(count, seed) {
            trie.insert((prefix, len), hop);
        }
        Table { trie }
    }

    /// The next hop of `addr`, or [`NO_ROUTE`].
    pub(crate) fn lookup(&self, addr: A) -> u32 {
        self.trie
            .get_lpm(&(addr, max_len::<A>()))
            .map_or(NO_ROUTE, |(_, &hop)| hop)
    }
}

/// The `count` random routes of `seed` (splitmix64), in the order they are
/// inserted: (prefix, length, next hop); a later duplicate prefix replaces
/// an earlier one's next hop.
pub(crate) fn random_routes<A: Family>(count: u64, seed: u64) -> impl Iterator<Item = (A, u8, u32)>
where
    (A, u8): Prefix<R = A>,
{
    let mut rng = crate::apps::SplitMix(seed);
    let mut next = move || rng.next_u64();
    (0..count).map(move |_| {
        let bits = (u128::from(next()) << 64) | u128::from(next());
        let len = A::random_len(next());
        (A::from_random(bits).masked(len), len, (next() % 1024) as u32)
    })
}

/// The route table of either family.
enum Routes {
    V4(Table<u32>),
    V6(Table<u128>),
}

/// `lpm`'s per-address lookup (the operator is [`PerRecord`] of it).
pub struct Lpm {
    routes: Routes,
}

impl Debug for Lpm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (family, routes) = match &self.routes {
            Routes::V4(t) => ("ipv4", t.trie.len()),
            Routes::V6(t) => ("ipv6", t.trie.len()),
        };
        f.debug_struct("Lpm")
            .field("family", &family)
            .field("routes", &routes)
            .finish()
    }
}

/// Looks up every `A` address of `records` into `out`.
fn lookup_all<A: Family>(table: &Table<A>, records: &[u8], out: &mut [u8])
where
    (A, u8): Prefix<R = A>,
{
    for (addr, result) in records
        .chunks_exact(A::BYTES)
        .zip(out.chunks_exact_mut(RESULT_BYTES))
    {
        let hop = A::from_be(addr).map_or(NO_ROUTE, |a| table.lookup(a));
        result.copy_from_slice(&hop.to_be_bytes());
    }
}

/// Whether `family` is IPv6.
fn is_ipv6(p: &Params<'_>) -> Result<bool, ParamError> {
    p.choice("family", &[("ipv4", false), ("ipv6", true)])
}

/// Address length in bytes for the `family` parameter.
pub fn address_len(p: &Params<'_>) -> Result<usize, ParamError> {
    Ok(if is_ipv6(p)? { 16 } else { 4 })
}

/// The table of family `A` from `routes`, or random routes.
pub(crate) fn table<A: Family>(p: &Params<'_>) -> Result<Table<A>, ParamError>
where
    (A, u8): Prefix<R = A>,
{
    let path = p.raw("routes");
    if path.is_empty() {
        let count = p.u64_in("random-routes", 0..=MAX_RANDOM_ROUTES)?;
        let seed = p.u64_in("seed", 0..=u64::MAX)?;
        return Ok(Table::random(count, seed));
    }
    // 256 MiB: several full Internet tables.
    let text = crate::operator::read_text_file(path, 256 << 20)
        .map_err(|e| p.bad("routes", &format!("a readable route file ({e})")))?;
    Table::parse(&text).map_err(|(line, what)| {
        p.bad(
            "routes",
            &format!(
                "{} routes as `prefix/len next_hop` lines; {path} line {line}: {what}",
                A::NAME
            ),
        )
    })
}

impl Lpm {
    /// Builds the operator from `family`, `routes`, `random-routes` and `seed`.
    pub fn build(p: &Params<'_>) -> Result<Box<dyn Operator>, OpError> {
        let routes = if is_ipv6(p)? {
            Routes::V6(table(p)?)
        } else {
            Routes::V4(table(p)?)
        };
        Ok(Box::new(PerRecord(Lpm { routes })))
    }
}

impl RecordMap for Lpm {
    fn name(&self) -> &'static str {
        "lpm"
    }

    fn record_len(&self) -> usize {
        match self.routes {
            Routes::V4(_) => u32::BYTES,
            Routes::V6(_) => u128::BYTES,
        }
    }

    fn map_records(&self, records: &[u8], out: &mut [u8]) {
        match &self.routes {
            Routes::V4(t) => lookup_all(t, records, out),
            Routes::V6(t) => lookup_all(t, records, out),
        }
    }
}

/// A valid `lpm` input carrying `payload`: whole addresses of the `family`
/// in `params` (at least one, zero-padded).
pub fn sample_input(params: &BTreeMap<String, String>, payload: &[u8]) -> Result<Vec<u8>, OpError> {
    let p = crate::registry::checked_params("lpm", params)?;
    Ok(whole_records(payload, address_len(&p)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_and_route_lines() {
        assert_eq!(0xC0A8_01FFu32.masked(24), 0xC0A8_0100);
        assert_eq!(0xFFFF_FFFFu32.masked(0), 0);
        assert_eq!(0xFFFF_FFFFu32.masked(32), 0xFFFF_FFFF);
        assert_eq!(u128::MAX.masked(0), 0);
        assert_eq!(u128::MAX.masked(128), u128::MAX);
        assert_eq!(Table::<u32>::parse_route("10.0.0.0/8 5"), Ok((0x0A00_0000, 8, 5)));
        assert!(Table::<u32>::parse_route("10.0.0.1/8 5").is_err());
        assert!(Table::<u32>::parse_route("10.0.0.0/33 5").is_err());
        assert!(Table::<u32>::parse_route("10.0.0.0/8 4294967295").is_err());
        assert!(Table::<u32>::parse_route("10.0.0.0/8").is_err());
        assert!(Table::<u128>::parse_route("10.0.0.0/8 1").is_err());
        let t = Table::<u128>::parse("# comment\n\n2001:db8::/32 9 # doc\n2001:db8:1::/48 4\n").unwrap();
        assert_eq!(t.lookup(0x2001_0db8_0001_0000_0000_0000_0000_0001), 4);
        assert_eq!(t.lookup(0x2001_0db8_0002_0000_0000_0000_0000_0001), 9);
        assert_eq!(t.lookup(1), NO_ROUTE);
        assert_eq!(
            Table::<u32>::parse("1.0.0.0/8 1\nbad\n").err().map(|e| e.0),
            Some(2)
        );
    }

    #[test]
    fn random_tables_have_their_shape_and_no_default_route() {
        let t = Table::<u32>::random(10_000, 1);
        assert!(t.trie.len() > 9_000, "{}", t.trie.len());
        assert!(t.trie.get(&(0, 0)).is_none());
        let v6 = Table::<u128>::random(1_000, 2);
        assert!(v6.trie.iter().all(|((_, len), _)| (29..=64).contains(&len)));
    }
}
