//! Parameters of policies and operators: `key = value` strings from a
//! scenario or the command line, checked against what the policy or operator
//! declares, so that a typo or a bad value is an error that names the owner,
//! the parameter and what it accepts.

use std::collections::BTreeMap;

/// One parameter a policy accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ParamSpec {
    /// Parameter name.
    pub name: &'static str,
    /// Default value, as it would be written.
    pub default: &'static str,
    /// What it means and what values it takes.
    pub description: &'static str,
}

/// A parameter that is unknown, missing or invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The owner has no such parameter.
    #[error("{owner} has no parameter `{param}`; it takes: {known}")]
    Unknown {
        /// What takes the parameters, e.g. "policy `drr`".
        owner: String,
        /// The parameter given.
        param: String,
        /// Comma-separated accepted parameters (or "no parameters").
        known: String,
    },
    /// A parameter's value is not allowed.
    #[error("{owner}: parameter `{param}` = `{value}` is invalid: expected {expected}")]
    Bad {
        /// What takes the parameters.
        owner: String,
        /// Parameter name.
        param: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// A parameter without a default was not given.
    #[error("{owner} needs parameter `{param}`: {expected}")]
    Missing {
        /// What takes the parameters.
        owner: String,
        /// Parameter name.
        param: String,
        /// What it accepts.
        expected: String,
    },
}

/// Checked parameters: every given key is declared, and getters fall back to
/// the declared default (an empty default means the parameter is required).
#[derive(Debug, Clone)]
pub struct Params<'a> {
    owner: String,
    spec: &'a [ParamSpec],
    given: &'a BTreeMap<String, String>,
}

impl<'a> Params<'a> {
    /// Checks `given` against `spec` for `owner` (e.g. "policy `drr`"): an
    /// undeclared key is an error.
    pub fn new(
        owner: impl Into<String>,
        spec: &'a [ParamSpec],
        given: &'a BTreeMap<String, String>,
    ) -> Result<Self, ParamError> {
        let owner = owner.into();
        if let Some(k) = given.keys().find(|k| !spec.iter().any(|p| p.name == *k)) {
            let known: Vec<&str> = spec.iter().map(|p| p.name).collect();
            return Err(ParamError::Unknown {
                owner,
                param: k.clone(),
                known: if known.is_empty() {
                    "no parameters".into()
                } else {
                    known.join(", ")
                },
            });
        }
        Ok(Params { owner, spec, given })
    }

    /// The raw value of `name`, given or default.
    pub fn raw(&self, name: &str) -> &str {
        if let Some(v) = self.given.get(name) {
            return v;
        }
        self.spec
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.default)
            .unwrap_or_default()
    }

    /// An error for parameter `name` that expects `expected` (missing if it
    /// has no value, bad otherwise).
    pub fn bad(&self, name: &str, expected: &str) -> ParamError {
        if self.raw(name).is_empty() {
            return ParamError::Missing {
                owner: self.owner.clone(),
                param: name.into(),
                expected: expected.into(),
            };
        }
        ParamError::Bad {
            owner: self.owner.clone(),
            param: name.into(),
            value: self.raw(name).into(),
            expected: expected.into(),
        }
    }

    /// `name` as a whole number in `range`.
    pub fn u64_in(&self, name: &str, range: std::ops::RangeInclusive<u64>) -> Result<u64, ParamError> {
        match self.raw(name).parse::<u64>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(self.bad(
                name,
                &format!("a whole number from {} to {}", range.start(), range.end()),
            )),
        }
    }

    /// `name` as hex-encoded bytes whose length is one of `lengths` (any if empty).
    pub fn hex_bytes(&self, name: &str, lengths: &[usize]) -> Result<Vec<u8>, ParamError> {
        let raw = self.raw(name);
        let expected = if lengths.is_empty() {
            "hex bytes".to_string()
        } else {
            let l: Vec<String> = lengths.iter().map(|n| n.to_string()).collect();
            format!("hex bytes, {} bytes long", l.join(" or "))
        };
        // Byte by byte: slicing the text could split a multi-byte
        // character, and `from_str_radix` would accept a sign.
        let digit = |b: &u8| (*b as char).to_digit(16).map(|d| d as u8);
        let bytes = (raw.len() % 2 == 0)
            .then(|| {
                raw.as_bytes()
                    .chunks_exact(2)
                    .map(|pair| Some(digit(&pair[0])? << 4 | digit(&pair[1])?))
                    .collect::<Option<Vec<u8>>>()
            })
            .flatten();
        match bytes {
            Some(b) if lengths.is_empty() || lengths.contains(&b.len()) => Ok(b),
            _ => Err(self.bad(name, &expected)),
        }
    }

    /// `name` as a finite number that is at least `min`.
    pub fn f64_at_least(&self, name: &str, min: f64) -> Result<f64, ParamError> {
        match self.raw(name).parse::<f64>() {
            Ok(v) if v.is_finite() && v >= min => Ok(v),
            _ => Err(self.bad(name, &format!("a number >= {min}"))),
        }
    }

    /// `name` as a finite number within `(lower, upper)` bounds, each
    /// inclusive or exclusive; the error says the interval, e.g. `(0, 1]`.
    pub fn f64_in(
        &self,
        name: &str,
        (lower, upper): (std::ops::Bound<f64>, std::ops::Bound<f64>),
    ) -> Result<f64, ParamError> {
        use std::ops::{Bound, RangeBounds};
        let range = (lower, upper);
        match self.raw(name).parse::<f64>() {
            Ok(v) if v.is_finite() && range.contains(&v) => Ok(v),
            _ => {
                let low = match lower {
                    Bound::Included(v) => format!("[{v}"),
                    Bound::Excluded(v) => format!("({v}"),
                    Bound::Unbounded => "(-inf".to_string(),
                };
                let high = match upper {
                    Bound::Included(v) => format!("{v}]"),
                    Bound::Excluded(v) => format!("{v})"),
                    Bound::Unbounded => "inf)".to_string(),
                };
                Err(self.bad(name, &format!("a number in {low}, {high}")))
            }
        }
    }

    /// `name` as `None` when it is `auto`, else a number greater than zero.
    pub fn auto_or_positive(&self, name: &str) -> Result<Option<f64>, ParamError> {
        if self.raw(name) == "auto" {
            return Ok(None);
        }
        match self.raw(name).parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
            _ => Err(self.bad(name, "`auto` or a number > 0")),
        }
    }

    /// `name` mapped through `choices` (value, result).
    pub fn choice<T: Copy>(&self, name: &str, choices: &[(&str, T)]) -> Result<T, ParamError> {
        let v = self.raw(name);
        choices
            .iter()
            .find(|(k, _)| *k == v)
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|(k, _)| *k).collect();
                self.bad(name, &format!("one of {}", names.join(", ")))
            })
    }

    /// The `charge` parameter of weighted policies ([`crate::policy::CHARGE_PARAM`]).
    pub fn charge(&self) -> Result<crate::policy::Charge, ParamError> {
        use crate::policy::Charge;
        self.choice(
            "charge",
            &[
                ("cost", Charge::Cost),
                ("bytes", Charge::Bytes),
                ("ops", Charge::Ops),
            ],
        )
    }

    /// What the parameters belong to, for errors (e.g. "policy `drr`").
    pub fn owner(&self) -> &str {
        &self.owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &[ParamSpec] = &[ParamSpec {
        name: "key",
        default: "",
        description: "hex",
    }];

    fn hex(value: &str, lengths: &[usize]) -> Result<Vec<u8>, ParamError> {
        let given: BTreeMap<String, String> = [("key".to_string(), value.to_string())].into();
        Params::new("test", SPEC, &given)
            .unwrap()
            .hex_bytes("key", lengths)
    }

    #[test]
    fn hex_bytes_decode_and_reject_anything_else() {
        assert_eq!(hex("00ff7A", &[]).unwrap(), vec![0x00, 0xff, 0x7a]);
        assert_eq!(hex("", &[]).unwrap(), Vec::<u8>::new());
        assert!(hex("abc", &[]).is_err(), "odd length");
        assert!(hex("0g", &[]).is_err(), "not a digit");
        // Signs are not digits (from_str_radix would take "+f").
        assert!(hex("+f+f", &[]).is_err());
        // A multi-byte character is an error, not a panic.
        assert!(hex("aéa", &[]).is_err());
        assert!(hex("éé", &[]).is_err());
        let err = hex("0011", &[16, 32]).unwrap_err().to_string();
        assert!(err.contains("`key`") && err.contains("16 or 32 bytes"), "{err}");
    }
}
