//! DPUBench's operator sweep (`isola bench ops`): the throughput
//! (MB/s and operations/s) of operators for each input size and thread
//! count on this machine ([`sweep`]), each operator on its own valid
//! input (a compressible text payload of the size, compressed for
//! decompressors, signed for verifiers, packetised for packet operators),
//! as data ([`Sweep`]), its CSV ([`Sweep::csv`]), its table for people
//! ([`Sweep::table`]) and one chart per operator ([`Sweep::charts`]).

use crate::Progress;
use anyhow::Context;
use isola_ops::{build_operator, find_operator, sample_params, text_payload, valid_input, Operator};
use isola_report::text::{bytes_binary, duration, table_with};
use isola_report::{Axis, Chart, Format, Series};
use serde::Serialize;
use std::fmt::Write;
use std::time::{Duration, Instant};

/// One measured operator, size and thread count.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Operator name.
    pub op: String,
    /// DPUBench category.
    pub category: String,
    /// Payload bytes per operation (what throughput counts).
    pub size_bytes: u64,
    /// Bytes the operator actually read per operation (payload plus framing,
    /// or compressed size for a decompressor).
    pub input_bytes: u64,
    /// Threads running the operator at once.
    pub threads: usize,
    /// Operations completed.
    pub operations: u64,
    /// Wall-clock seconds measured.
    pub seconds: f64,
    /// Operations per second, all threads together.
    pub ops_per_s: f64,
    /// Payload megabytes (10^6) per second, all threads together.
    pub mb_per_s: f64,
    /// Mean time of one operation on one thread, in ns.
    pub latency_ns: f64,
}

/// The whole sweep, as `isola bench ops --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    /// Seconds of measurement per point.
    pub seconds_per_point: f64,
    /// This machine's CPUs.
    pub cpus: usize,
    /// Every operator, size and thread count, in that order.
    pub points: Vec<Point>,
}

/// The payload of `size` bytes every operator gets (seeded by its size).
pub fn payload_of(size: u64) -> Vec<u8> {
    text_payload(size as usize, size)
}

/// Measures each of `ops` (registry names) on each of `sizes` on each of
/// `threads` thread counts for about `seconds` a point.
pub fn sweep(
    ops: &[&str],
    sizes: &[u64],
    threads: &[usize],
    seconds: f64,
    progress: &mut dyn Progress,
) -> anyhow::Result<Sweep> {
    let total = (ops.len() * sizes.len() * threads.len()).max(1) as f64;
    let mut points = Vec::new();
    for name in ops {
        let params = sample_params(name);
        let op = build_operator(name, &params)?;
        let category = find_operator(name)?.category;
        for &size in sizes {
            let payload = payload_of(size);
            let input = valid_input(name, &params, &payload)
                .with_context(|| format!("making a {size}-byte input for {name}"))?;
            op.run(&input)
                .with_context(|| format!("{name} failed on its own valid {size}-byte input"))?;
            for &threads in threads {
                progress.update(
                    points.len() as f64 / total,
                    &format!("{name} {} x{threads}", bytes_binary(size as f64)),
                );
                let (operations, seconds) = measure(op.as_ref(), &input, threads, seconds);
                let ops_per_s = operations as f64 / seconds;
                points.push(Point {
                    op: name.to_string(),
                    category: category.to_string(),
                    size_bytes: size,
                    input_bytes: input.len() as u64,
                    threads,
                    operations,
                    seconds,
                    ops_per_s,
                    mb_per_s: ops_per_s * size as f64 / 1e6,
                    latency_ns: seconds * threads as f64 / operations.max(1) as f64 * 1e9,
                });
            }
        }
    }
    Ok(Sweep {
        seconds_per_point: seconds,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        points,
    })
}

/// Runs `op` on `input` on `threads` threads for about `seconds`; returns
/// the operations completed by all threads and the wall-clock time.
///
/// Each thread times batches of operations sized to about a millisecond,
/// so reading the clock costs nothing next to the operations.
fn measure(op: &dyn Operator, input: &[u8], threads: usize, seconds: f64) -> (u64, f64) {
    let single = {
        let t = Instant::now();
        std::hint::black_box(op.run(input).ok());
        t.elapsed().as_secs_f64().max(1e-8)
    };
    let batch = ((1e-3 / single) as u64).clamp(1, 1 << 20);
    let budget = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let operations: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut done = 0u64;
                    while start.elapsed() < budget {
                        for _ in 0..batch {
                            std::hint::black_box(op.run(std::hint::black_box(input)).ok());
                        }
                        done += batch;
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    (operations, start.elapsed().as_secs_f64())
}

impl Sweep {
    /// Every point as a table for people: operator, category, size,
    /// threads, MB/s, operations/s and the mean latency of one operation.
    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .points
            .iter()
            .map(|p| {
                vec![
                    p.op.clone(),
                    p.category.clone(),
                    bytes_binary(p.size_bytes as f64),
                    p.threads.to_string(),
                    format!("{:.1}", p.mb_per_s),
                    format!("{:.0}", p.ops_per_s),
                    duration(p.latency_ns),
                ]
            })
            .collect();
        table_with(
            &[
                "operator", "category", "size", "threads", "MB/s", "ops/s", "latency",
            ],
            &rows,
            2,
        )
    }

    /// Every point as CSV (`results.csv`), a header line first.
    pub fn csv(&self) -> String {
        let mut csv = String::from(
            "op,category,size_bytes,input_bytes,threads,operations,seconds,ops_per_s,mb_per_s,latency_ns\n",
        );
        for p in &self.points {
            // Infallible: writing to a String.
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{:.6},{:.3},{:.3},{:.1}",
                p.op,
                p.category,
                p.size_bytes,
                p.input_bytes,
                p.threads,
                p.operations,
                p.seconds,
                p.ops_per_s,
                p.mb_per_s,
                p.latency_ns
            );
        }
        csv
    }

    /// Each operator's throughput by input size, a line per thread count,
    /// with the operator's name.
    pub fn charts(&self) -> Vec<(String, Chart)> {
        let mut names: Vec<&str> = self.points.iter().map(|p| p.op.as_str()).collect();
        names.dedup();
        names
            .into_iter()
            .map(|name| {
                let mine: Vec<&Point> = self.points.iter().filter(|p| p.op == name).collect();
                let mut threads: Vec<usize> = mine.iter().map(|p| p.threads).collect();
                threads.sort_unstable();
                threads.dedup();
                let series = threads
                    .iter()
                    .map(|&t| Series {
                        name: format!("{t} thread{}", if t == 1 { "" } else { "s" }),
                        points: mine
                            .iter()
                            .filter(|p| p.threads == t)
                            .map(|p| (p.size_bytes as f64, p.mb_per_s))
                            .collect(),
                    })
                    .collect();
                let chart = Chart::lines(
                    format!("{name}: throughput by input size"),
                    Axis::new("payload bytes per operation")
                        .log2()
                        .format(Format::Bytes)
                        .ticks_at_data(),
                    Axis::new("MB/s"),
                    series,
                );
                (name.to_string(), chart)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_measures_every_point_and_writes_them_as_csv_and_charts() {
        let s = sweep(&["crc32c"], &[64, 256], &[1, 2], 0.005, &mut crate::NoProgress).unwrap();
        assert_eq!(s.points.len(), 4);
        assert!(s.points.iter().all(|p| p.operations > 0 && p.mb_per_s > 0.0));
        let csv = s.csv();
        assert_eq!(csv.lines().count(), 5);
        assert!(csv.lines().nth(1).unwrap().starts_with("crc32c,"), "{csv}");
        let charts = s.charts();
        assert_eq!(charts.len(), 1);
        assert_eq!(charts[0].0, "crc32c");
    }
}
