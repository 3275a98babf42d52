//! The disk side of the offload directory's quotas: measuring what each
//! principal's folder holds, and the ledger writers and cleanup share. The
//! limits and the ledger itself are lro-core's ([`lro_core::quota`]); making
//! room under the total is [`crate::room`]'s.
//!
//! ```
//! use lro_core::quota::Quota;
//! use lro_store::quota::{ledger, measure};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a"), "12345").unwrap();
//! let root = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
//! let quota = Quota::new().total(Some(8));
//! let ledger = ledger(dir.path());
//! // The first write measures the directory: 5 bytes there, 4 more do not fit.
//! assert!(ledger.reserve(&quota, "", 4, || measure(&root)).is_err());
//! assert!(ledger.reserve(&quota, "", 3, || measure(&root)).is_ok());
//! ```

use std::{io, path::Path, sync::Arc};

use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;
use lro_core::{
    principal::is_principal_folder,
    quota::{Ledger, Usage},
};

/// The process's ledger of the directory at `root`, by its canonical path,
/// so that the writers and the cleanup pass that name it differently still
/// meet.
pub fn ledger(root: &Path) -> Arc<Ledger> {
    Ledger::for_root(&root.canonicalize().unwrap_or_else(|_| root.to_owned()))
}

/// Bytes of the regular files directly in `root` (key `""`) and in each
/// `p-*` folder (one level, key the folder's name). Symlinks are never
/// followed: neither a linked file nor a linked folder counts.
///
/// # Errors
///
/// When `root` cannot be listed; a folder that cannot be is skipped.
pub fn measure(root: &Dir) -> io::Result<Usage> {
    let mut usage = Usage::new();
    usage.insert(String::new(), files_bytes(root)?);
    for entry in root.entries()?.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !is_principal_folder(&name) || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if let Ok(sub) = root.open_dir_nofollow(&name)
            && let Ok(bytes) = files_bytes(&sub)
        {
            usage.insert(name, bytes);
        }
    }
    Ok(usage)
}

fn files_bytes(dir: &Dir) -> io::Result<u64> {
    let mut total = 0u64;
    for entry in dir.entries()?.flatten() {
        // `DirEntry::metadata` does not follow a symlink.
        if let Ok(meta) = entry.metadata()
            && meta.is_file()
        {
            total = total.saturating_add(meta.len());
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_counts_one_level_of_principal_folders_and_no_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a"), "12345").unwrap();
        std::fs::create_dir(tmp.path().join("p-x")).unwrap();
        std::fs::write(tmp.path().join("p-x/b"), "123").unwrap();
        std::fs::create_dir_all(tmp.path().join("p-x/deeper")).unwrap();
        std::fs::write(tmp.path().join("p-x/deeper/c"), "1234567").unwrap();
        std::os::unix::fs::symlink("/etc", tmp.path().join("p-etc")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tmp.path().join("link")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let usage = measure(&dir).unwrap();
        assert_eq!(usage[""], 5);
        assert_eq!(usage["p-x"], 3);
        assert!(!usage.contains_key("p-etc"));
    }
}
