//! # isola-model
//!
//! What every driver of the Isola core reads and writes, whether it runs
//! a scenario in virtual time (`isola-sim`), on real cores (the live
//! runtime's harness, the demo) or as a service: the scenario format and its
//! checks ([`scenario`], with the quantities people write in it,
//! [`quantity`]), the results schema and the recorder that computes results
//! from a driver's records ([`results`]), ingress matching, 5-tuple
//! rules to flow queues ([`ingress`]), and the policies a scenario may
//! name as a person reads them ([`policies`]).
//!
//! What it must not do: run anything. It has no event loop, no threads, no
//! clock and no I/O beyond reading the scenario (and the trace or profile
//! files it names) it is given and writing the results it is asked to. It
//! depends on `isola-core` only, never on a driver (`isola-sim`,
//! `isola-runtime`) or on the operators (`isola-ops`).

#![warn(missing_docs)]

pub mod engine;
pub mod ingress;
pub mod input;
pub mod policies;
pub mod progress;
pub mod quantity;
pub mod results;
pub mod scenario;
pub mod tenant;

pub use results::{PolicyResult, RunRecorder, SimReport, TenantResult};
pub use scenario::{Scenario, ScenarioError};
