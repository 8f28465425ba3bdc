//! Reading the files a user names (scenarios, traces, profiles) within a
//! limit: a path that is a device (`/dev/zero`), a FIFO or a directory is
//! refused before it is read, and a file is read only up to its limit, so
//! no input can make a command read forever or fill memory.

use std::io::Read;
use std::path::Path;

/// Largest scenario file: 16 MiB (the shipped ones are a few KiB).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;

/// Largest trace file: 64 MiB (about two million rows).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// Largest cost-profile file: 16 MiB.
pub const MAX_PROFILE_BYTES: u64 = 16 << 20;

/// Reads `path` whole if it is a regular file of at most `limit` bytes.
/// The error says what is wrong, without the path (the caller names it).
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file (a directory, device or FIFO is not read)".into());
    }
    if meta.len() > limit {
        return Err(format!(
            "{} bytes, above the limit of {limit} bytes for this kind of file",
            meta.len()
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut out = Vec::with_capacity(meta.len() as usize);
    // The file may grow between the check and the read: read one byte past
    // the limit to see it.
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!(
            "more than the limit of {limit} bytes for this kind of file"
        ));
    }
    Ok(out)
}

/// [`read_bounded`], as UTF-8 text.
pub fn read_text_bounded(path: &Path, limit: u64) -> Result<String, String> {
    String::from_utf8(read_bounded(path, limit)?).map_err(|e| format!("not UTF-8 text: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_large_files_are_refused() {
        assert!(read_bounded(Path::new("/dev/zero"), 1 << 20)
            .unwrap_err()
            .contains("not a regular file"));
        assert!(read_bounded(Path::new("/tmp"), 1 << 20).is_err());
        let dir = std::env::temp_dir().join(format!("isola-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("big.toml");
        std::fs::write(&file, vec![b'#'; 2048]).unwrap();
        assert!(read_bounded(&file, 1024).unwrap_err().contains("limit of 1024"));
        assert_eq!(read_bounded(&file, 2048).unwrap().len(), 2048);
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        assert!(read_text_bounded(&file, 10).unwrap_err().contains("UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
