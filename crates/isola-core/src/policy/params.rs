//! Policy parameters: `key = value` strings from a scenario or the command
//! line, checked against the policy's declared parameters so that a typo or a
//! bad value is an error that names the parameter and what it accepts.

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

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// No policy has this name.
    #[error("unknown policy `{name}`; known policies: {known}")]
    UnknownPolicy {
        /// The name asked for.
        name: String,
        /// Comma-separated registered names.
        known: String,
    },
    /// The policy has no such parameter.
    #[error("policy `{policy}` has no parameter `{param}`; it takes: {known}")]
    UnknownParam {
        /// Policy name.
        policy: String,
        /// The parameter given.
        param: String,
        /// Comma-separated accepted parameters (or "none").
        known: String,
    },
    /// A parameter's value is not allowed.
    #[error("policy `{policy}`: parameter `{param}` = `{value}` is invalid: expected {expected}")]
    BadParam {
        /// Policy name.
        policy: String,
        /// Parameter name.
        param: String,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// The policy cannot serve this engine and these tenants.
    #[error("policy `{policy}` cannot be used here: {reason}")]
    Infeasible {
        /// Policy name.
        policy: String,
        /// Why.
        reason: String,
    },
}

/// Checked parameters of one policy: every given key is declared, and
/// getters fall back to the declared default.
#[derive(Debug, Clone)]
pub struct PolicyParams<'a> {
    policy: &'a str,
    spec: &'a [ParamSpec],
    given: &'a BTreeMap<String, String>,
}

impl<'a> PolicyParams<'a> {
    /// Checks `given` against `spec`: an undeclared key is an error.
    pub fn new(
        policy: &'a str,
        spec: &'a [ParamSpec],
        given: &'a BTreeMap<String, String>,
    ) -> Result<Self, PolicyError> {
        if let Some(k) = given.keys().find(|k| !spec.iter().any(|p| p.name == *k)) {
            let known: Vec<&str> = spec.iter().map(|p| p.name).collect();
            return Err(PolicyError::UnknownParam {
                policy: policy.into(),
                param: k.clone(),
                known: if known.is_empty() {
                    "no parameters".into()
                } else {
                    known.join(", ")
                },
            });
        }
        Ok(PolicyParams { policy, spec, given })
    }

    /// The raw value of `name`, given or default.
    fn raw(&self, name: &str) -> &str {
        if let Some(v) = self.given.get(name) {
            return v;
        }
        self.spec
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.default)
            .unwrap_or_default()
    }

    /// An error for parameter `name` that expects `expected`.
    pub fn bad(&self, name: &str, expected: &str) -> PolicyError {
        PolicyError::BadParam {
            policy: self.policy.into(),
            param: name.into(),
            value: self.raw(name).into(),
            expected: expected.into(),
        }
    }

    /// `name` as a finite number that is at least `min`.
    pub fn f64_at_least(&self, name: &str, min: f64) -> Result<f64, PolicyError> {
        match self.raw(name).parse::<f64>() {
            Ok(v) if v.is_finite() && v >= min => Ok(v),
            _ => Err(self.bad(name, &format!("a number >= {min}"))),
        }
    }

    /// `name` as `None` when it is `auto`, else a number greater than zero.
    pub fn auto_or_positive(&self, name: &str) -> Result<Option<f64>, PolicyError> {
        if self.raw(name) == "auto" {
            return Ok(None);
        }
        match self.raw(name).parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Some(v)),
            _ => Err(self.bad(name, "`auto` or a number > 0")),
        }
    }

    /// `name` mapped through `choices` (value, result).
    pub fn choice<T: Copy>(&self, name: &str, choices: &[(&str, T)]) -> Result<T, PolicyError> {
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

    /// The `charge` parameter ([`super::CHARGE_PARAM`]).
    pub fn charge(&self) -> Result<super::Charge, PolicyError> {
        use super::Charge;
        self.choice(
            "charge",
            &[
                ("cost", Charge::Cost),
                ("bytes", Charge::Bytes),
                ("ops", Charge::Ops),
            ],
        )
    }

    /// The policy's name, for errors.
    pub fn policy(&self) -> &str {
        self.policy
    }
}
