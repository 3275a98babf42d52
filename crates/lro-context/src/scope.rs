//! Whose entries a path names, and the open directory it is reached through.
//!
//! Each principal's entries live under `principal.dir(root)` of a store
//! root: the root itself for the anonymous principal (less every `p-*`
//! folder in it), `root/p-{digest}` for another. A path is first resolved
//! as before (symlinks followed as far as it exists) to decide which area it
//! names; then it is reached *relative to an open handle of that area*
//! (`cap-std`, `openat`-style), so a symlink swapped in between cannot lead
//! a read or a write outside the area.
//!
//! ```
//! use lro_context::Roots;
//! use lro_core::principal::Principal;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let roots = Roots::new([dir.path()]).unwrap();
//! let alice = Principal::new("alice");
//! // A relative path is taken from the caller's own folder.
//! let at = roots.area_path(&alice, "store");
//! assert!(at.starts_with(alice.dir(&roots.dirs()[0])));
//! ```

use std::{
    io,
    path::{Component, Path, PathBuf},
    sync::Arc,
};

use cap_std::{
    ambient_authority,
    fs::{Dir, DirBuilder, DirBuilderExt as _},
};
use lro_core::{
    principal::{Principal, is_principal_folder},
    quota::{Ledger, Quota, QuotaExceeded},
};

use crate::{
    ContextError, Roots,
    tree::{ledger_for, measure_tree},
};

/// A path inside the caller's area, and how to reach it.
#[derive(Debug)]
pub(crate) struct Located {
    /// The resolved absolute path (what answers and pointers show).
    pub(crate) full: PathBuf,
    /// The caller's area, open (`None` with no roots: the file system root).
    area: Option<PathBuf>,
    /// `full` relative to the area.
    pub(crate) rel: PathBuf,
    /// The ledger key of the area (`""` or `p-{digest}`) and the ledger of
    /// its store root, when confined.
    quota: Option<(String, Arc<Ledger>, PathBuf)>,
    /// Whether this names the anonymous principal's whole root, where the
    /// `p-*` folders of others are skipped.
    pub(crate) anonymous_root: bool,
}

/// Where a path lies for a caller.
#[derive(Debug)]
pub(crate) enum Place {
    /// In the caller's own area.
    Own(Located),
    /// Inside a store root, but in another principal's area: answered as if
    /// it did not exist.
    Foreign(PathBuf),
}

impl Roots {
    /// `path` for a caller: relative paths are taken from the caller's
    /// folder in the first root.
    pub fn area_path(&self, principal: &Principal, path: impl AsRef<Path>) -> PathBuf {
        let path = path.as_ref();
        match self.dirs().first() {
            Some(root) if !path.is_absolute() => principal.dir(root).join(path),
            _ => path.to_owned(),
        }
    }

    /// Where `path` lies for `principal`.
    ///
    /// # Errors
    ///
    /// [`ContextError::OutsideRoots`] when it is outside every root.
    pub(crate) fn place(
        &self,
        principal: &Principal,
        field: &'static str,
        path: &Path,
    ) -> Result<Place, ContextError> {
        let full = self.resolve(field, &self.area_path(principal, path))?;
        let Some(root) = self.dirs().iter().find(|r| full.starts_with(r)) else {
            // No roots: the library used directly, unconfined.
            let rel = full.strip_prefix("/").unwrap_or(&full).to_owned();
            return Ok(Place::Own(Located {
                full,
                area: None,
                rel,
                quota: None,
                anonymous_root: false,
            }));
        };
        let area = principal.dir(root);
        let Ok(rel) = full.strip_prefix(&area) else {
            return Ok(Place::Foreign(full));
        };
        let foreign_folder = principal.is_anonymous()
            && rel.components().next().is_some_and(|c| {
                matches!(c, Component::Normal(n)
                    if n.to_str().is_some_and(is_principal_folder))
            });
        if foreign_folder {
            return Ok(Place::Foreign(full));
        }
        let key = principal.folder().unwrap_or_default();
        Ok(Place::Own(Located {
            rel: rel.to_owned(),
            anonymous_root: principal.is_anonymous() && rel.as_os_str().is_empty(),
            quota: Some((key, ledger_for(root), root.clone())),
            area: Some(area),
            full,
        }))
    }
}

impl Located {
    /// The caller's area, open; created (0700) first when `create`.
    fn open_area(&self, create: bool) -> io::Result<Dir> {
        let Some(area) = &self.area else {
            return Dir::open_ambient_dir("/", ambient_authority());
        };
        if create {
            let mut b = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(b.recursive(true), 0o700);
            b.create(area)?;
        }
        Dir::open_ambient_dir(area, ambient_authority())
    }

    /// The directory this names, open through the area (never outside it),
    /// created (0700) first when `create`.
    pub(crate) fn open_dir(&self, create: bool) -> io::Result<Dir> {
        let area = self.open_area(create)?;
        if self.rel.as_os_str().is_empty() {
            return Ok(area);
        }
        if create {
            area.create_dir_with(&self.rel, DirBuilder::new().recursive(true).mode(0o700))?;
        }
        area.open_dir(&self.rel)
    }

    /// The parent directory, open through the area, and the file name.
    pub(crate) fn open_parent(&self) -> io::Result<(Dir, String)> {
        let area = self.open_area(false)?;
        let name = self
            .rel
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?
            .to_owned();
        let parent = self.rel.parent().unwrap_or(Path::new(""));
        let dir = if parent.as_os_str().is_empty() {
            area
        } else {
            area.open_dir(parent)?
        };
        Ok((dir, name))
    }

    /// Counts `bytes` against the area's and the root's quota.
    pub(crate) fn reserve(
        &self,
        quota: &Quota,
        bytes: u64,
    ) -> Result<Option<lro_core::quota::Reservation>, QuotaExceeded> {
        let Some((key, ledger, root)) = &self.quota else {
            return Ok(None);
        };
        if !quota.is_limited() {
            return Ok(None);
        }
        ledger
            .reserve(quota, key, bytes, || {
                measure_tree(&Dir::open_ambient_dir(root, ambient_authority())?)
            })
            .map(Some)
    }
}
