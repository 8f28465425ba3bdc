//! The quantities of scenario files as serde types: each value is read
//! through `isola_core::quantity`'s checked conversions (re-exported here),
//! so a mistake is reported at the value's line.

pub use isola_core::quantity::{
    format_duration, parse_duration, parse_frequency, parse_rate, parse_size, MAX_DURATION_NS,
    MAX_RATE_PER_SEC, MAX_SIZE_BYTES,
};
use isola_core::{Nanos, Rate};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;

/// Deserializes through `parse` from a string; a bare number is handed to
/// `parse` as written, which refuses it for want of a unit.
struct ParseVisitor<T> {
    what: &'static str,
    parse: fn(&str) -> Result<T, String>,
}

impl<'de, T> Visitor<'de> for ParseVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {}", self.what)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        (self.parse)(&v.to_string()).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.parse)(&v.to_string()).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        (self.parse)(&v.to_string()).map_err(E::custom)
    }
}

macro_rules! quantity {
    ($(#[$doc:meta])* $name:ident($inner:ty), $what:literal, $parse:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(ParseVisitor { what: $what, parse: $parse }).map($name)
            }
        }
    };
}

quantity!(
    /// A duration in a scenario file (`"50ms"`, or nanoseconds).
    Duration(Nanos),
    "duration such as \"50ms\"",
    parse_duration
);
quantity!(
    /// A size in a scenario file (`"4KiB"`, or bytes).
    Size(u64),
    "size such as \"4KiB\"",
    parse_size
);
quantity!(
    /// A rate with its unit in a scenario file (`"500k/s"`, `"10Gbit/s"`).
    RateValue(Rate),
    "rate such as \"500k/s\" or \"10Gbit/s\"",
    parse_rate
);
quantity!(
    /// A frequency in a scenario file (`"1GHz"`).
    Frequency(f64),
    "frequency such as \"1GHz\"",
    parse_frequency
);
