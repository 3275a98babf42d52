//! The walk over a store root: its regular files, each with its folder's
//! open handle, never through a symlink, and the bytes each principal's area
//! holds. `store.rs` greps and expires over it; `scope.rs` starts the quota
//! ledger from it, found by the root's canonical path ([`ledger_for`]).

use std::{
    io,
    path::{Path, PathBuf},
    sync::Arc,
};

use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use lro_core::{
    principal::is_principal_folder,
    quota::{Ledger, Usage},
};

/// The process's quota ledger of the root `root`, by its canonical path, so
/// that writes and expiry meet whatever path each was given.
pub(crate) fn ledger_for(root: &Path) -> Arc<Ledger> {
    Ledger::for_root(&root.canonicalize().unwrap_or_else(|_| root.to_owned()))
}

/// Deepest folder level `grep` walks.
pub(crate) const GREP_DEPTH: usize = 16;

/// A file `grep` may read: its path under the searched directory, its
/// folder (open) and its size when listed.
pub(crate) type Listed = (PathBuf, Arc<Dir>, u64);

/// Regular files under `dir`, never following a symlink, each with its
/// folder's handle; in the anonymous principal's root, the `p-*` folders of
/// the others are skipped.
pub(crate) fn collect_files(
    dir: &Arc<Dir>,
    at: &Path,
    skip_principals: bool,
    depth: usize,
    out: &mut Vec<Listed>,
) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    for e in entries.flatten() {
        let Ok(ty) = e.file_type() else { continue };
        let name = e.file_name();
        if ty.is_dir() {
            let is_principal = name.to_str().is_some_and(is_principal_folder);
            if depth < GREP_DEPTH
                && !(skip_principals && is_principal)
                && let Ok(sub) = dir.open_dir_nofollow(&name)
            {
                collect_files(&Arc::new(sub), &at.join(&name), false, depth + 1, out);
            }
        } else if ty.is_file() {
            let len = e.metadata().map_or(0, |m| m.len());
            out.push((at.join(&name), dir.clone(), len));
        }
    }
}

/// Bytes of every regular file under `root`, per area: `""` for the
/// anonymous principal's, `p-{digest}` for each other's (the whole tree,
/// never through a symlink). What the store's quota ledger starts from.
pub(crate) fn measure_tree(root: &Dir) -> io::Result<Usage> {
    let mut files = Vec::new();
    collect_files(
        &Arc::new(root.try_clone()?),
        Path::new(""),
        false,
        0,
        &mut files,
    );
    let mut usage = Usage::new();
    usage.insert(String::new(), 0);
    for (path, _, len) in files {
        let first = path
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default();
        let key = if path.components().count() > 1 && is_principal_folder(first) {
            first.to_owned()
        } else {
            String::new()
        };
        *usage.entry(key).or_default() += len;
    }
    Ok(usage)
}
