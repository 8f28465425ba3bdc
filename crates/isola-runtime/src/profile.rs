//! Resource-occupation profiling (ASTRAEA): service time against input size
//! per operator, measured on this machine, fitted, and saved, so the
//! scheduler can predict a task's cost before running it; [`table`] is a
//! profile for people.

pub use isola_core::profile::{OperatorProfile, Profile, ProfilePoint};
use isola_ops::{build_operator, find_operator, sample_params, text_payload, valid_input, OpError};
use isola_report::text::{bytes_binary, duration, table_with};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a profile could not be made, saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The operator could not be built or failed on its valid input.
    #[error(transparent)]
    Operator(#[from] OpError),
    /// No sizes to measure.
    #[error("no sizes to profile")]
    NoSizes,
    /// Profiling one of several operators failed.
    #[error("profiling {op}: {cause}")]
    Profiling {
        /// The operator.
        op: String,
        /// What failed.
        cause: Box<ProfileError>,
    },
    /// Reading or writing the file failed.
    #[error("{path}: {cause}")]
    Io {
        /// The file.
        path: String,
        /// What failed.
        cause: std::io::Error,
    },
    /// The file is not a profile.
    #[error("{path}: not a profile: {cause}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong, with line and column.
        cause: serde_json::Error,
    },
}

/// Profiles each of `ops` (registry names) on `sizes` for about `budget`
/// each, with its sample parameters (`isola_ops::sample_params`), those
/// of `given` that it takes replacing them, into a profile of this
/// `machine`; `progress` is told each operator (its index and name) before
/// it is measured.
pub fn profile_operators(
    ops: &[&str],
    given: &BTreeMap<String, String>,
    sizes: &[u64],
    budget: Duration,
    machine: String,
    progress: &mut dyn FnMut(usize, &str),
) -> Result<Profile, ProfileError> {
    let mut operators = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        progress(i, op);
        let info = find_operator(op)?;
        let mut params = sample_params(op);
        for (k, v) in given {
            if info.params.iter().any(|p| p.name == k) {
                params.insert(k.clone(), v.clone());
            }
        }
        let profile = profile_operator(op, &params, sizes, budget).map_err(|e| ProfileError::Profiling {
            op: op.to_string(),
            cause: Box::new(e),
        })?;
        operators.push(profile);
    }
    Ok(Profile { machine, operators })
}

/// Measures `op` with `params` on valid inputs carrying payloads of each of
/// `sizes`, spending about `budget` in all; at least 3 samples per size.
pub fn profile_operator(
    op: &str,
    params: &BTreeMap<String, String>,
    sizes: &[u64],
    budget: Duration,
) -> Result<OperatorProfile, ProfileError> {
    if sizes.is_empty() {
        return Err(ProfileError::NoSizes);
    }
    let operator = build_operator(op, params)?;
    let per_size = budget / sizes.len() as u32;
    let mut points = Vec::new();
    for &size in sizes {
        let input = valid_input(op, params, &text_payload(size as usize, size))?;
        operator.run(&input)?; // warm-up, and a check that it runs
        let mut samples = Vec::new();
        let start = Instant::now();
        while samples.len() < 3 || (start.elapsed() < per_size && samples.len() < 100_000) {
            let t = Instant::now();
            std::hint::black_box(operator.run(std::hint::black_box(&input))?);
            samples.push(t.elapsed().as_nanos() as f64);
        }
        let median_ns = isola_core::metrics::median_f64(&mut samples).expect("at least 3 samples");
        points.push(ProfilePoint {
            bytes: input.len() as u64,
            median_ns,
            samples: samples.len(),
        });
    }
    points.sort_by_key(|p| p.bytes);
    let (base_ns, per_byte_ns) = least_squares(&points);
    let affine_error = points
        .iter()
        .map(|p| ((base_ns + per_byte_ns * p.bytes as f64) - p.median_ns).abs() / p.median_ns.max(1.0))
        .fold(0.0, f64::max);
    Ok(OperatorProfile {
        op: op.to_string(),
        params: params.clone(),
        points,
        base_ns,
        per_byte_ns,
        affine_error,
    })
}

/// Least-squares line through the points, with a non-negative intercept
/// and slope (costs do not shrink with size).
fn least_squares(points: &[ProfilePoint]) -> (f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.bytes as f64).sum::<f64>() / n;
    let my = points.iter().map(|p| p.median_ns).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.bytes as f64 - mx).powi(2)).sum();
    let sxy: f64 = points
        .iter()
        .map(|p| (p.bytes as f64 - mx) * (p.median_ns - my))
        .sum();
    let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    ((my - slope * mx).max(0.0), slope)
}

/// The profile as a table for people: per operator its parameters, the
/// fitted base and cost per byte, how far the best straight line strays
/// from the measured points, and the points (size:median).
pub fn table(profile: &Profile) -> String {
    let rows: Vec<Vec<String>> = profile
        .operators
        .iter()
        .map(|p| {
            let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let points: Vec<String> = p
                .points
                .iter()
                .map(|x| format!("{}:{}", bytes_binary(x.bytes as f64), duration(x.median_ns)))
                .collect();
            vec![
                p.op.clone(),
                if params.is_empty() {
                    "-".into()
                } else {
                    params.join(",")
                },
                duration(p.base_ns),
                format!("{:.3}", p.per_byte_ns),
                format!("{:.1}%", p.affine_error * 100.0),
                points.join(" "),
            ]
        })
        .collect();
    table_with(
        &[
            "operator",
            "params",
            "base",
            "ns/byte",
            "affine err",
            "measured (size:median)",
        ],
        &rows,
        2,
    )
}

/// Reading and writing profile files.
pub trait ProfileFile: Sized {
    /// Writes the profile as JSON.
    fn save(&self, path: &Path) -> Result<(), ProfileError>;
    /// Reads a profile written by [`ProfileFile::save`].
    fn load(path: &Path) -> Result<Self, ProfileError>;
}

impl ProfileFile for Profile {
    fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let io = |cause| ProfileError::Io {
            path: path.display().to_string(),
            cause,
        };
        let text = serde_json::to_string_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        std::fs::write(path, text + "\n").map_err(io)
    }

    fn load(path: &Path) -> Result<Profile, ProfileError> {
        let shown = path.display().to_string();
        let text = isola_model::input::read_text_bounded(path, isola_model::input::MAX_PROFILE_BYTES)
            .map_err(|e| ProfileError::Io {
                path: shown.clone(),
                cause: std::io::Error::other(e),
            })?;
        serde_json::from_str(&text).map_err(|cause| ProfileError::Format { path: shown, cause })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use isola_core::{CostModel, Nanos};

    #[test]
    fn profiles_fit_and_round_trip_through_a_file() {
        let p = profile_operator(
            "crc32c",
            &BTreeMap::new(),
            &[1024, 65_536, 1 << 20],
            Duration::from_millis(30),
        )
        .unwrap();
        assert_eq!(p.points.len(), 3);
        assert!(p
            .points
            .windows(2)
            .all(|w| w[0].median_ns <= w[1].median_ns * 1.5));
        assert!(p.per_byte_ns > 0.0 && p.affine_error.is_finite());
        let profile = Profile {
            machine: "test".into(),
            operators: vec![p.clone()],
        };
        let path = std::env::temp_dir().join(format!("isola-profile-{}.json", std::process::id()));
        profile.save(&path).unwrap();
        let back = Profile::load(&path).unwrap();
        assert_eq!(back, profile);
        let model = back.cost_model();
        assert_eq!(
            model.predict("crc32c", 65_536),
            Some(p.points[1].median_ns.round() as Nanos)
        );
        assert_eq!(model.predict("sha256", 1), None);
        assert!(back.operator("sha256").unwrap_err().contains("crc32c"));
        std::fs::write(&path, "{ not json").unwrap();
        let err = Profile::load(&path).unwrap_err().to_string();
        assert!(err.contains("not a profile") && err.contains("line 1"), "{err}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn least_squares_recovers_a_line() {
        let pts: Vec<ProfilePoint> = [(100u64, 1_100.0), (200, 1_200.0), (400, 1_400.0)]
            .iter()
            .map(|&(bytes, median_ns)| ProfilePoint {
                bytes,
                median_ns,
                samples: 1,
            })
            .collect();
        let (base, slope) = least_squares(&pts);
        assert!((base - 1_000.0).abs() < 1e-6 && (slope - 1.0).abs() < 1e-9);
    }
}
