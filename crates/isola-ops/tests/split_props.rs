//! For every splittable operator: running as subtasks over any chunk size
//! (including sizes that do not divide the input) and reassembling gives
//! exactly the one-shot output, or, for a compressor, a stream that its
//! decompressor turns back into the input.

use isola_core::TaskId;
use isola_ops::{build_operator, run_split, sample_params, valid_input, Operator, OPERATORS};

/// Drives `run_part` and `reassemble` (the path without in-place output),
/// as a runtime without shared output buffers would.
fn via_parts(op: &dyn Operator, input: &[u8], chunk: usize) -> Vec<u8> {
    let split = op.splitter().unwrap();
    let parts = split.plan(TaskId(1), input.len(), chunk).unwrap();
    let mut carries = Vec::new();
    let mut previous = None;
    for p in &parts {
        let c = split.run_part(p, input, previous.take()).unwrap();
        if split.ordered() {
            previous = Some(c);
        } else {
            carries.push(c);
        }
    }
    carries.extend(previous);
    split.reassemble(input.len(), carries).unwrap()
}
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn split_equals_one_shot(payload in proptest::collection::vec(any::<u8>(), 0..20_000), chunk in 1usize..5_000) {
        for info in OPERATORS.iter().filter(|o| o.splittable) {
            let params = sample_params(info.name);
            let op = build_operator(info.name, &params).unwrap();
            // The random bytes in the framing the operator takes (whole
            // shards for ec-encode, whole records for lpm and toeplitz).
            let input = valid_input(info.name, &params, &payload).unwrap();
            let input = &input[..];
            let split = run_split(op.as_ref(), input, chunk).unwrap();
            prop_assert_eq!(&via_parts(op.as_ref(), input, chunk), &split, "{}: parts vs in place", info.name);
            match info.inverse {
                Some(inverse) => {
                    let back = build_operator(inverse, &sample_params(inverse)).unwrap().run(&split).unwrap();
                    prop_assert_eq!(back.as_slice(), input, "{} with chunk {}", info.name, chunk);
                }
                None => prop_assert_eq!(split, op.run(input).unwrap(), "{} with chunk {}", info.name, chunk),
            }
        }
    }
}
