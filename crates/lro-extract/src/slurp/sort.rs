//! `sort_by(.path)` and `sort_by(-.path)` over raw lines: the file is read
//! once, each line's key and rendering are found and sorted on two
//! threads, the (key, line) runs are merged stably (as jq's sort is) and the
//! lines are
//! printed as they are on disk, rewritten only where jq would print them
//! differently.

use std::{borrow::Cow, io::Read, thread};

use super::key::{Key, key_of, raw_at};
use crate::{ExtractError, jq::Guard};

/// Most threads one sort uses.
const THREADS: usize = 2;

/// One record: its key and its line as jq prints it.
type Entry<'a> = (Key<'a>, Cow<'a, [u8]>);

/// The record lines of `text` (what [`crate::jq::Lines`] yields: line ends
/// trimmed, blank lines skipped).
fn lines(text: &[u8]) -> Vec<&[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', text)
        .chain([text.len()])
        .filter_map(|end| {
            let mut line = &text[start..end];
            start = end + 1;
            while let Some(rest) = line.strip_suffix(b"\r") {
                line = rest;
            }
            (!line.iter().all(u8::is_ascii_whitespace)).then_some(line)
        })
        .collect()
}

/// The entries of `lines`, or `None` when one has no key jq would sort by
/// without an error (or that is not a scalar).
fn entries<'a>(
    lines: &[&'a [u8]],
    path: &[String],
    negate: bool,
    guard: &Guard,
) -> Option<Vec<Entry<'a>>> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        if guard.cancelled() {
            return None;
        }
        // jaq leaves out and names a record jq cannot read, or may not.
        if crate::jq::too_deep(line) || crate::jq::high_surrogate(line) {
            return None;
        }
        let key = key_of(raw_at(line, path)?)?;
        let key = if negate { key.negated()? } else { key };
        out.push((key, crate::jq::canonical(line)));
    }
    // Stable: records with equal keys keep their file order, as in jq.
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Some(out)
}

/// The records of `reader` (about `size` bytes) sorted by the key at
/// `path` (negated with `negate`), each as jq prints it; `Ok(None)` when
/// jaq must decide.
pub(super) fn sorted<'t>(
    mut reader: impl Read,
    size: usize,
    text: &'t mut Vec<u8>,
    path: &[String],
    negate: bool,
    guard: &Guard,
) -> Result<Option<Vec<Cow<'t, [u8]>>>, ExtractError> {
    // Sized up front: growing by doubling would copy the text and
    // briefly hold it twice.
    text.reserve_exact(size);
    reader
        .read_to_end(text)
        .map_err(|source| ExtractError::Io {
            path: Default::default(),
            source,
        })?;
    let lines = lines(text);
    let chunk = lines.len().div_ceil(THREADS).max(1);
    let mut chunks = lines.chunks(chunk);
    let first = chunks.next().unwrap_or_default();
    let parts: Vec<Option<Vec<Entry<'t>>>> = thread::scope(|s| {
        let others: Vec<_> = chunks
            .map(|part| {
                let worker = thread::Builder::new()
                    .spawn_scoped(s, move || entries(part, path, negate, guard));
                (part, worker)
            })
            .collect();
        let mut parts = vec![entries(first, path, negate, guard)];
        for (part, worker) in others {
            parts.push(match worker {
                Ok(worker) => worker.join().unwrap_or(None),
                // No thread to be had (a worker's address-space limit):
                // this one does the part too.
                Err(_) => entries(part, path, negate, guard),
            });
        }
        parts
    });
    if guard.cancelled() {
        return Err(super::cancelled());
    }
    let mut all = Vec::with_capacity(lines.len());
    for part in parts {
        let Some(part) = part else { return Ok(None) };
        all.extend(part);
    }
    // The sorted runs, in file order, merged: a stable sort finds the runs.
    all.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(all.into_iter().map(|(_, line)| line).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(text: &str, path: &[&str], negate: bool) -> Option<Vec<String>> {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        let mut buf = Vec::new();
        let guard = Guard::unbounded();
        sorted(text.as_bytes(), 0, &mut buf, &path, negate, &guard)
            .unwrap()
            .map(|lines| {
                lines
                    .iter()
                    .map(|l| String::from_utf8(l.to_vec()).unwrap())
                    .collect()
            })
    }

    #[test]
    fn sorts_stably_and_prints_as_jq() {
        let text = "{\"k\":2,\"i\":1}\r\n\n{\"k\":1.0,\"i\":2}\n  \n{\"i\":3}\n{\"k\":1e0,\"i\":4}\n{\"k\":\"a\",\"i\":5}\n{\"k\":null,\"i\":6}";
        assert_eq!(
            sort(text, &["k"], false).unwrap(),
            [
                r#"{"i":3}"#,
                r#"{"k":null,"i":6}"#,
                r#"{"k":1,"i":2}"#,
                r#"{"k":1,"i":4}"#,
                r#"{"k":2,"i":1}"#,
                r#"{"k":"a","i":5}"#,
            ]
        );
        let text = "{\"p\":{\"c\":0.5}}\n{\"p\":{\"c\":0.9}}\n{\"p\":{\"c\":0.50}}";
        assert_eq!(
            sort(text, &["p", "c"], true).unwrap(),
            [
                r#"{"p":{"c":0.9}}"#,
                r#"{"p":{"c":0.5}}"#,
                r#"{"p":{"c":0.5}}"#
            ]
        );
        assert_eq!(sort("", &["k"], false).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn leaves_errors_and_compound_keys_to_jaq() {
        assert!(sort("{\"k\":1}\n{\"k\":null}", &["k"], true).is_none());
        assert!(sort("{\"k\":[1]}", &["k"], false).is_none());
        assert!(sort("{\"k\":1}\n[1]", &["k"], false).is_none());
        assert!(sort("{\"k\":\"s\"}", &["k", "x"], false).is_none());
    }
}
