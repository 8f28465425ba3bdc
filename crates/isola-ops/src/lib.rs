//! # isola-ops
//!
//! Real operators for the live runtime: the work a DPU offloads (DPUBench's
//! operator set and the accelerator task types), each on a well-kept crate,
//! behind one [`Operator`] trait and a registry by name. Operators that can be
//! split into subtasks (ASTRAEA's task splitting) say how through
//! [`Splitter`]; the reassembled result is identical to running the operator
//! on the whole input, which the property tests prove for every such
//! operator.
//!
//! Operators are pure functions of their input, except `flow-table`
//! (DPUBench's flow-table program, in [`apps`]), whose instance keeps its
//! flow table across tasks.
//!
//! What it must not do: schedule, keep time or spawn threads (that is the
//! runtime's), or copy the input to split it: subtasks work on slices.

#![warn(missing_docs)]

pub mod aead;
pub mod apps;
pub mod checksum;
pub mod cipher;
pub mod compress;
pub mod erasure;
pub mod evp;
pub mod hash;
pub mod limits;
pub mod lpm;
pub mod lz4_frame;
pub mod operator;
pub mod packet;
pub mod records;
pub mod registry;
pub mod sample;
pub mod scan;
pub mod sign;
mod table;
pub mod toeplitz;
pub mod watch;
pub mod zlib_stream;

pub use limits::DEFAULT_MAX_OUTPUT;
pub use operator::{run_split, Carry, OpError, Operator, Placement, Splitter};
pub use registry::{build_operator, find_operator, OperatorInfo, OPERATORS};
pub use sample::{sample_params, text_payload, valid_input};
pub use table::operators_table;
pub use watch::{for_each_chunk, Checkpoint, NeverStop, Watch, WATCH_CHUNK_BYTES};
