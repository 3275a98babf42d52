//! Room under the total quota, made by the principals over their fair
//! share: see [`lro_core::quota`]'s module docs for the rule. The ledger
//! decides nothing here; this module lists and deletes the files.

use std::{collections::HashMap, io};

use cap_fs_ext::DirExt as _;
use cap_std::fs::Dir;

use lro_core::{
    file::OffloadFileName,
    quota::{Ledger, Quota},
};

/// What [`make_room`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Freed {
    /// Offload files deleted.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Deletes the oldest offload files of the principals over their fair
/// share of `quota.total` until a write of `bytes` into the folder `key`
/// fits (the rule: [`lro_core::quota`]); nothing when no such deletions can
/// make room, or when the write is over the principal's own quota anyway.
/// Call it when [`Ledger::reserve`] refused for the total, then reserve
/// again. Only files named as offload files, directly in the
/// root or in a `p-*` folder, are deleted; symlinks never.
pub fn make_room(ledger: &Ledger, root: &Dir, quota: &Quota, key: &str, bytes: u64) -> Freed {
    let _one = ledger.room_lock();
    let mut freed = Freed::default();
    let (Some(total), Some(mut usage)) = (quota.total, ledger.usage()) else {
        return freed;
    };
    usage.retain(|_, used| *used > 0);
    let mine = usage.entry(key.to_owned()).or_default();
    *mine += bytes;
    // Over its own quota the write is refused whatever is deleted.
    if quota.per_principal.is_some_and(|limit| *mine > limit) {
        return freed;
    }
    let share = total / usage.len() as u64;
    let all: u64 = usage.values().sum();
    let mut need = all.saturating_sub(total);
    let over: u64 = usage.values().map(|u| u.saturating_sub(share)).sum();
    if need == 0 || over < need {
        return freed;
    }
    let mut files: HashMap<String, Vec<(OffloadFileName, u64)>> = HashMap::new();
    while need > 0 {
        let Some((victim, _)) = usage
            .iter()
            .filter(|(k, used)| **used > share && files.get(*k).is_none_or(|f| !f.is_empty()))
            .max_by_key(|(_, used)| **used - share)
            .map(|(k, u)| (k.clone(), *u))
        else {
            break;
        };
        let Ok(dir) = folder(root, &victim) else {
            files.insert(victim, Vec::new());
            continue;
        };
        let list = files
            .entry(victim.clone())
            .or_insert_with(|| oldest_last(&dir));
        let Some((name, len)) = list.pop() else {
            continue;
        };
        if dir.remove_file(name.to_string()).is_ok() {
            freed.files += 1;
            freed.bytes += len;
            need = need.saturating_sub(len);
            if let Some(used) = usage.get_mut(&victim) {
                *used = used.saturating_sub(len);
            }
            ledger.forget(&victim, len);
        }
    }
    freed
}

/// The folder of key `key`: the root itself for `""`.
fn folder(root: &Dir, key: &str) -> io::Result<Dir> {
    if key.is_empty() {
        root.try_clone()
    } else {
        root.open_dir_nofollow(key)
    }
}

/// The offload files directly in `dir` with their sizes, newest first, so
/// the oldest is popped first. ULIDs sort by creation time.
fn oldest_last(dir: &Dir) -> Vec<(OffloadFileName, u64)> {
    let mut files: Vec<_> = dir
        .entries()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = OffloadFileName::parse(entry.file_name().to_str()?)?;
            // `DirEntry::metadata` does not follow a symlink.
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            Some((name, meta.len()))
        })
        .collect();
    files.sort_by_key(|(name, _)| std::cmp::Reverse(name.ulid()));
    files
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lro_core::quota::{QuotaScope, Usage};

    use super::*;
    use crate::quota::measure;

    fn empty() -> std::io::Result<Usage> {
        Ok(Usage::new())
    }

    #[test]
    fn at_the_total_the_principals_over_their_share_lose_their_oldest() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let file = |folder: &str, ms: u64| {
            let name = OffloadFileName::with_ulid("t", ulid::Ulid::from_parts(ms, 0));
            let dir = tmp.path().join(folder);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(name.to_string()), [b'x'; 10]).unwrap();
            name.to_string()
        };
        // A flood of 60 bytes, a quiet tenant's 10, a total of 80.
        let flood: Vec<_> = (1..=6).map(|ms| file("p-flood", ms)).collect();
        let quiet = file("p-quiet", 0);
        let ledger = Arc::new(Ledger::default());
        let quota = Quota::new().total(Some(80));
        let _ = ledger.reserve(&quota, "p-x", 0, || measure(&root)).unwrap();
        // The quiet tenant's 20 do not fit: the flood (over its 40) makes room.
        let err = ledger.reserve(&quota, "p-quiet", 20, empty).unwrap_err();
        assert_eq!(err.scope, QuotaScope::Total);
        let freed = make_room(&ledger, &root, &quota, "p-quiet", 20);
        assert_eq!((freed.files, freed.bytes), (1, 10));
        assert!(
            !tmp.path().join("p-flood").join(&flood[0]).exists(),
            "the oldest"
        );
        assert!(tmp.path().join("p-flood").join(&flood[1]).exists());
        assert!(ledger.reserve(&quota, "p-quiet", 20, empty).is_ok());
        // The flood, over its share, makes room from its own results only;
        // the quiet tenant, under its share, never loses one.
        let freed = make_room(&ledger, &root, &quota, "p-flood", 50);
        assert_eq!((freed.files, freed.bytes), (5, 50));
        assert_eq!(
            make_room(&ledger, &root, &quota, "p-flood", 200),
            Freed::default()
        );
        assert!(tmp.path().join("p-quiet").join(&quiet).exists());
    }
}
