//! Every example of `docs/kernels.md` runs as written: its `isola kernel`
//! shell blocks run with this build's `isola` from the repository's root
//! and print exactly the output block that follows them, with the exit
//! status they state; its TOML blocks are configurations isolad accepts.
//! (Its Rust block is a doctest of `isola-kernels`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fenced block of the page: its language, its first line's number and
/// its text.
struct Block {
    lang: String,
    line: usize,
    body: String,
}

/// The fenced blocks of `text`, in order.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    line: n + 1,
                    body: String::new(),
                })
            }
            (Some(_), Some("")) => out.push(open.take().unwrap()),
            (Some(b), _) => {
                b.body.push_str(line);
                b.body.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "docs/kernels.md: a block is never closed");
    out
}

fn page() -> String {
    std::fs::read_to_string(root().join("docs/kernels.md")).expect("docs/kernels.md")
}

#[test]
fn every_block_says_its_language() {
    // rustdoc runs an untagged block as Rust; the others are not code.
    for b in blocks(&page()) {
        assert!(
            ["rust", "wat", "toml", "sh", "text"].contains(&b.lang.as_str()),
            "docs/kernels.md:{}: a block tagged `{}`",
            b.line,
            b.lang
        );
    }
}

#[test]
fn its_isola_kernel_commands_print_what_it_shows() {
    let bin = Path::new(env!("CARGO_BIN_EXE_isola"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let blocks = blocks(&page());
    let mut ran = 0;
    for (i, b) in blocks.iter().enumerate() {
        if b.lang != "sh" || !b.body.contains("isola kernel") {
            continue;
        }
        let status: i32 = b
            .body
            .split_once("# exit status ")
            .map_or(0, |(_, rest)| rest.trim().parse().expect("# exit status N"));
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{{\n{}}} 2>&1", b.body))
            .env("PATH", &path)
            .current_dir(root())
            .stdin(Stdio::null())
            .output()
            .expect("sh runs");
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(status),
            "docs/kernels.md:{}: {}{said}",
            b.line,
            b.body
        );
        if let Some(shown) = blocks.get(i + 1).filter(|n| n.lang == "text") {
            assert_eq!(
                said, shown.body,
                "docs/kernels.md:{}: the output of\n{}differs from what the page shows at line {}",
                b.line, b.body, shown.line
            );
        }
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} `isola kernel` examples found");
}

#[test]
fn its_configurations_are_accepted_by_isolad() {
    let mut parsed = 0;
    for b in blocks(&page()).iter().filter(|b| b.lang == "toml") {
        // As if saved at the repository's root, as the page says.
        let config = isola_daemon::DaemonConfig::parse(&b.body, &root().join("isolad.toml"));
        if let Err(e) = config {
            panic!("docs/kernels.md:{}: {e}", b.line);
        }
        parsed += 1;
    }
    assert!(parsed >= 1);
}
