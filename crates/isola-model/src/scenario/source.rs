//! Where a mistake is: byte offsets in a TOML file's text turned into line,
//! column and key, and the `ScenarioError` that names them. Scenarios use
//! it, and so does every other TOML file Isola reads (the daemon's
//! configuration), so that all of them report mistakes alike.

use super::ScenarioError;
use std::ops::Range;

/// Turns byte offsets into line and column, and builds errors.
pub struct Source<'a> {
    /// The file, as errors name it.
    pub file: String,
    /// Its text.
    pub text: &'a str,
}

impl Source<'_> {
    /// An error at `span` (its start), naming `key`, or else the key written
    /// there.
    pub fn at(&self, span: Range<usize>, key: Option<&str>, message: impl Into<String>) -> ScenarioError {
        let message = message.into();
        let start = span.start.min(self.text.len());
        // Serde reports some errors at the enclosing inline table; when the
        // message quotes the offending value and it appears in that table,
        // point at the value itself (and so at its key).
        let start = match (key, quoted(&message)) {
            (None, Some(value)) => {
                let end = span.end.clamp(start, self.text.len());
                self.text[start..end]
                    .find(&format!("\"{value}\""))
                    .map_or(start, |p| start + p)
            }
            _ => start,
        };
        let before = &self.text[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ScenarioError {
            file: self.file.clone(),
            line,
            column,
            key: key.map(str::to_owned).or_else(|| self.key_near(start)),
            message,
        }
    }

    /// Where key `key` is written in the table whose span is `span` (a
    /// line `key = ...` in it, up to the next table's header), else `span`
    /// itself: for tables read without positions inside them.
    pub fn key_in(&self, span: Range<usize>, key: &str) -> Range<usize> {
        let start = span.start.min(self.text.len());
        let mut offset = start;
        // A `[[table]]`'s span may cover its header alone: its keys run to
        // the next header.
        for (i, line) in self.text[start..].split_inclusive('\n').enumerate() {
            let trimmed = line.trim_start();
            if i > 0 && trimmed.starts_with('[') && offset >= span.end {
                break;
            }
            let rest = trimmed.strip_prefix(key).map(str::trim_start);
            if rest.is_some_and(|r| r.starts_with('=')) {
                let at = offset + (line.len() - trimmed.len());
                return at..at + key.len();
            }
            offset += line.len();
        }
        span
    }

    /// The key whose value starts at `offset` (`key = <offset>`), or the key
    /// written at `offset` (`<offset>key = ...`).
    fn key_near(&self, offset: usize) -> Option<String> {
        let is_key = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let before = self.text[line_start..offset].trim_end();
        if let Some(lhs) = before.strip_suffix('=') {
            let lhs = lhs.trim_end();
            let key: String = lhs.chars().rev().take_while(|&c| is_key(c)).collect();
            if !key.is_empty() {
                return Some(key.chars().rev().collect());
            }
        }
        let after: String = self.text[offset..].chars().take_while(|&c| is_key(c)).collect();
        let rest = self.text[offset + after.len()..].trim_start();
        (!after.is_empty() && rest.starts_with('=')).then_some(after)
    }
}

/// The first `backticked` word of an error message.
fn quoted(message: &str) -> Option<&str> {
    let rest = message.split_once('`')?.1;
    Some(rest.split_once('`')?.0)
}
