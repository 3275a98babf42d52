//! The filesystem a bench writes on, which it prints beside its figures.
//! Shared by the benches with a raw-write baseline (this crate's offload
//! bench and lro-context's compaction bench, which includes this file).

use std::{fs, path::Path};

/// The type of the filesystem `path` is on, from the longest mount point
/// of /proc/mounts that holds it.
pub(crate) fn filesystem(path: &Path) -> String {
    let path = fs::canonicalize(path).unwrap();
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, kind) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(at).then(|| (at.len(), kind.to_owned()))
        })
        .max()
        .map_or_else(|| "an unknown filesystem".to_owned(), |(_, kind)| kind)
}
