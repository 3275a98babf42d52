//! Context entries on a shared store: what one replica's context offload
//! stores, any replica's read and grep find, for the layer's context tools
//! (lro-tower) and the ReMe HTTP service (lro-context-http) alike.
//!
//! lro-context keeps its entries as files under its store roots, and its
//! placement (the caller's own area, every file reached through an open
//! handle) stays the only judge of who reads what. The store holds a copy
//! of each entry, under `context/{root index}/{path in the root}`:
//! written after an offload stored it, and copied back into the same path
//! on a replica that lacks it, before a read or a grep there. Only paths in
//! the caller's own area are ever copied back, so another principal's
//! entry never lands on disk for the asking. Replicas must be given the
//! same store roots, in the same order.
//!
//! Entries keep the context store's retention (none by default): cleanup
//! does not expire them; a bucket lifecycle rule on `PREFIX/context/` does.

use std::{
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use futures::TryStreamExt as _;
use lro_context::Roots;
use lro_core::principal::{Principal, is_principal_folder};
use serde_json::{Value, json};

use crate::{Key, Store};
use tokio::io::AsyncWriteExt as _;

/// Where context entries are kept in the store.
const CONTEXT: &str = "context";

/// What a context request does, for [`Mirror::before`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// Stores entries (`context_offload`).
    Offload,
    /// Searches a directory (`context_grep`, `/grep`).
    Grep,
    /// Reads one file (`context_read_file`, `/read_file`).
    ReadFile,
}

/// The store copy of the context roots.
#[derive(Debug, Clone)]
pub struct Mirror {
    store: Arc<dyn Store>,
    roots: Roots,
}

impl Mirror {
    /// Entries of `roots` copied through `store`.
    pub fn new(store: Arc<dyn Store>, roots: Roots) -> Self {
        Self { store, roots }
    }

    /// The key of `path`, lexically inside a root and with plain
    /// components only; and whether it lies in `principal`'s own area.
    fn key(&self, principal: &Principal, path: &Path) -> Option<(Key, bool)> {
        let (i, root) = self
            .roots
            .dirs()
            .iter()
            .enumerate()
            .find(|(_, r)| path.starts_with(r))?;
        let rel = path.strip_prefix(root).ok()?;
        let parts: Vec<&str> = rel
            .components()
            .map(|c| match c {
                Component::Normal(n) => n.to_str(),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let own = match principal.folder() {
            Some(folder) => parts.first() == Some(&folder.as_str()),
            None => parts.first().is_none_or(|p| !is_principal_folder(p)),
        };
        let key = if parts.is_empty() {
            format!("{CONTEXT}/{i}")
        } else {
            format!("{CONTEXT}/{i}/{}", parts.join("/"))
        };
        Some((Key::new(key).ok()?, own))
    }

    /// Copies the files `context_offload` just stored into the store; the
    /// paths whose copy failed.
    pub async fn push(&self, principal: &Principal, files: &[PathBuf]) -> Vec<PathBuf> {
        let mut failed = Vec::new();
        for file in files {
            let copied = match (self.key(principal, file), tokio::fs::read(file).await) {
                (Some((key, true)), Ok(bytes)) => {
                    self.store.put_bytes(&key, bytes.into()).await.is_ok()
                }
                _ => false,
            };
            if !copied {
                failed.push(file.clone());
            }
        }
        failed
    }

    /// Before a read of `path` (as the caller gave it, resolved against its
    /// area like lro-context does): copies the store's entry there when this
    /// replica lacks it and it is the caller's own.
    pub async fn pull_file(&self, principal: &Principal, path: &Path) {
        let path = self.roots.area_path(principal, path);
        if tokio::fs::try_exists(&path).await.unwrap_or(true) {
            return;
        }
        if let Some((key, true)) = self.key(principal, &path) {
            self.fetch(&key, &path).await;
        }
    }

    /// Before a grep of `dir`: copies every entry the store holds under it
    /// that this replica lacks, when `dir` is in the caller's own area.
    pub async fn pull_dir(&self, principal: &Principal, dir: &Path) {
        let dir = self.roots.area_path(principal, dir);
        let Some((prefix, true)) = self.key(principal, &dir) else {
            return;
        };
        let Ok(listed) = self.store.list(Some(&prefix)).try_collect::<Vec<_>>().await else {
            return;
        };
        let base = prefix.as_str().len();
        for object in listed {
            let rel = object.key.as_str()[base..].trim_start_matches('/');
            let path = dir.join(rel);
            // Another principal's folder under an anonymous root stays theirs.
            if self.key(principal, &path).is_some_and(|(_, own)| own)
                && !tokio::fs::try_exists(&path).await.unwrap_or(true)
            {
                self.fetch(&object.key, &path).await;
            }
        }
    }

    /// Before `op` with the request `args` (the field names are the MCP
    /// tools' and ReMe's alike: `absolute_path`, `path`): copies back what
    /// the store holds of the caller's that this replica lacks.
    pub async fn before(&self, principal: &Principal, op: Op, args: &Value) {
        let path = |field: &str| args.get(field).and_then(Value::as_str).map(PathBuf::from);
        match op {
            Op::ReadFile => {
                if let Some(path) = path("absolute_path") {
                    self.pull_file(principal, &path).await;
                }
            }
            Op::Grep => {
                let dir = path("path").unwrap_or_else(|| PathBuf::from("."));
                self.pull_dir(principal, &dir).await;
            }
            Op::Offload => {}
        }
    }

    /// After an offload: copies the files its answer lists
    /// (`metadata.stored_files`) to the store; one that could not be copied
    /// is named in the answer's warnings (only this replica has it).
    pub async fn share(&self, principal: &Principal, answer: &mut Value) {
        let files: Vec<PathBuf> = answer["metadata"]["stored_files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(PathBuf::from)
            .collect();
        let failed = self.push(principal, &files).await;
        if failed.is_empty() {
            return;
        }
        let warning = json!(format!(
            "{} stored file(s) could not be copied to the shared store: only this server can read them back",
            failed.len()
        ));
        match answer["metadata"]["warnings"].as_array_mut() {
            Some(warnings) => warnings.push(warning),
            None => answer["metadata"]["warnings"] = json!([warning]),
        }
    }

    /// Writes the object `key` at `path`: directories 0700, the file 0600,
    /// through a temp file and a rename. A failure leaves nothing; the read
    /// then answers as for a missing entry.
    async fn fetch(&self, key: &Key, path: &Path) {
        let Some(parent) = path.parent() else { return };
        let temp = parent.join(format!(".lro-fetch-{}", ulid::Ulid::new()));
        let fetched = async {
            let mut dirs = tokio::fs::DirBuilder::new();
            dirs.recursive(true).mode(0o700);
            dirs.create(parent).await?;
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
                .await?;
            crate::fetch::copy(&*self.store, key, &mut file, None)
                .await
                .map_err(std::io::Error::other)?;
            file.flush().await?;
            tokio::fs::rename(&temp, path).await
        }
        .await;
        if let Err(err) = fetched {
            tracing::debug!(error = %lro_core::error::chain(&err), "a context entry could not be copied from the store");
            let _ = tokio::fs::remove_file(&temp).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_root_and_the_path_in_it_and_whose_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(
            crate::LocalStore::open(&tmp.path().join("bucket"), crate::LOCAL_READ_CHUNK).unwrap(),
        );
        let roots = Roots::new([tmp.path().join("a"), tmp.path().join("b")]).unwrap();
        let (a, b) = (roots.dirs()[0].clone(), roots.dirs()[1].clone());
        let m = Mirror::new(store, roots);
        let alice = Principal::new("alice");
        let folder = alice.folder().unwrap();
        let own = b.join(&folder).join("store/x.txt");
        let (key, mine) = m.key(&alice, &own).unwrap();
        assert_eq!(key.as_str(), format!("context/1/{folder}/store/x.txt"));
        assert!(mine);
        let bobs = a
            .join(Principal::new("bob").folder().unwrap())
            .join("x.txt");
        assert!(!m.key(&alice, &bobs).unwrap().1);
        // The anonymous principal owns its root but no one's folder in it.
        let anon = Principal::anonymous();
        assert!(m.key(&anon, &a.join("store/x.txt")).unwrap().1);
        assert!(!m.key(&anon, &own).unwrap().1);
        // Outside the roots, or with `..`: no key at all.
        let sibling = PathBuf::from(format!("{}b/x", a.display()));
        for path in [PathBuf::from("/etc/passwd"), a.join("../b/x"), sibling] {
            assert!(m.key(&anon, &path).is_none(), "{}", path.display());
        }
        // A relative path is taken from the caller's folder in the first root.
        assert_eq!(
            m.roots.area_path(&alice, "store"),
            a.join(&folder).join("store")
        );
    }
}
