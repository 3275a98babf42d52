//! Handles: the opaque names of results kept in a shared object store.
//!
//! A result in the local directory is named by its path, which shell
//! recipes read. A result in an object store has no path a client could
//! read, so the descriptor carries a handle, `lro:{operation}-{ULID}`, and
//! `lro_extract` takes it. Any replica resolves a handle to the same object
//! key, `{principal folder}/atlatl-{operation}-{ULID}.jsonl`: the folder
//! comes from the caller, never from the handle, so a handle names an
//! object only for the principal that created it.
//!
//! ```
//! use lro_core::{file::OffloadFileName, handle, principal::Principal};
//!
//! let name = OffloadFileName::new("list_memories");
//! let h = handle::of(&name);
//! assert!(h.starts_with("lro:list_memories-"));
//! assert_eq!(handle::parse(&h), Some(name.clone()));
//! let alice = Principal::new("alice");
//! let key = handle::key(&alice, &name);
//! assert!(key.starts_with("p-") && key.ends_with(&name.to_string()));
//! assert_eq!(handle::key(&Principal::anonymous(), &name), name.to_string());
//! assert_eq!(handle::parse("lro:../../etc/passwd"), None);
//! ```

use crate::{
    file::{FILE_PREFIX, FILE_SUFFIX, OffloadFileName},
    principal::Principal,
};

/// How every handle starts.
pub const HANDLE_PREFIX: &str = "lro:";

/// The handle of the result stored under `name`.
pub fn of(name: &OffloadFileName) -> String {
    format!("{HANDLE_PREFIX}{}-{}", name.operation(), name.ulid())
}

/// The result name a handle stands for; `None` for anything that is not a
/// handle this module made.
pub fn parse(handle: &str) -> Option<OffloadFileName> {
    let stem = handle.strip_prefix(HANDLE_PREFIX)?;
    OffloadFileName::parse(&format!("{FILE_PREFIX}{stem}{FILE_SUFFIX}"))
}

/// The object key of `name` for `principal`, relative to the store's
/// prefix: the principal's folder (none for the anonymous principal), then
/// the file name, the same layout as the local directory.
pub fn key(principal: &Principal, name: &OffloadFileName) -> String {
    match principal.folder() {
        Some(folder) => format!("{folder}/{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_handles_parse() {
        for bad in [
            "",
            "lro:",
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "lro:list",
            "lro:list-01ARZ3NDEKTSV4RRFFQ69G5FA",
            "lro:LIST-01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "lro:a/b-01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "/tmp/atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        let name = parse("lro:list-01ARZ3NDEKTSV4RRFFQ69G5FAV").unwrap();
        assert_eq!(
            name.to_string(),
            "atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl"
        );
    }

    #[test]
    fn two_principals_never_share_a_key() {
        let name = OffloadFileName::new("x");
        let a = key(&Principal::new("alice"), &name);
        let b = key(&Principal::new("bob"), &name);
        assert_ne!(a, b);
        assert!(a.ends_with(&name.to_string()) && b.ends_with(&name.to_string()));
    }
}
