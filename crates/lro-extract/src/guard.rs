//! Path guards: only offload files directly inside the offload directory.
//!
//! A `file_path` comes from the model, so it is hostile until proven
//! otherwise. It is accepted only when
//!
//! 1. its directory, after resolving `..` and symlinks, *is* the canonical
//!    offload directory (not a subdirectory, not a sibling);
//! 2. its file name parses as `atlatl-{operation}-{ULID}.jsonl`;
//! 3. it is a regular file, or a symlink whose target also passes 1–3;
//! 4. the file that gets opened is the very inode that was checked (so a
//!    swap between check and open is caught).
//!
//! Every check uses metadata only: nothing is read from a rejected path.
//!
//! ```
//! use lro_extract::resolve;
//!
//! let root = tempfile::tempdir().unwrap();
//! let err = resolve(root.path(), "../etc/passwd").unwrap_err();
//! assert!(err.is_guard(), "{err}");
//! let err = resolve(root.path(), "/etc/passwd").unwrap_err();
//! assert!(err.to_string().contains("outside the offload directory"));
//! ```

use std::{
    fs::{self, File, Metadata},
    io,
    path::{Path, PathBuf},
};

use lro_core::file::OffloadFileName;

use crate::ExtractError;

/// An offload file that passed every guard.
#[derive(Debug)]
#[non_exhaustive]
pub struct ResolvedFile {
    /// Canonical path of the file.
    pub path: PathBuf,
    meta: Metadata,
}

impl ResolvedFile {
    /// Opens the file, checking that it is still the inode that was
    /// validated (a regular file, same device and inode on Unix).
    pub fn open(&self) -> Result<File, ExtractError> {
        let io_err = |source| ExtractError::Io {
            path: self.path.clone(),
            source,
        };
        // Opened relative to its directory's handle (cap-std: no path
        // outside it can be reached, whatever was swapped in), without
        // blocking (a FIFO swapped in cannot hang the worker), then checked
        // on the handle to be the inode that was validated.
        let (Some(parent), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return Err(ExtractError::NotOffloadFile {
                path: self.path.display().to_string(),
            });
        };
        let dir = cap_std::fs::Dir::open_ambient_dir(parent, cap_std::ambient_authority())
            .map_err(io_err)?;
        let mut opts = cap_std::fs::OpenOptions::new();
        cap_std::fs::OpenOptionsExt::custom_flags(
            opts.read(true),
            rustix::fs::OFlags::NONBLOCK.bits() as i32,
        );
        let file = dir.open_with(name, &opts).map_err(io_err)?.into_std();
        let opened = file.metadata().map_err(io_err)?;
        if !opened.is_file() || !same_file(&opened, &self.meta) {
            return Err(ExtractError::NotOffloadFile {
                path: self.path.display().to_string(),
            });
        }
        Ok(file)
    }

    /// Size in bytes when validated.
    pub fn len(&self) -> u64 {
        self.meta.len()
    }

    /// Whether the file was empty when validated.
    pub fn is_empty(&self) -> bool {
        self.meta.len() == 0
    }
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Resolves `file_path` (absolute, or relative to `root`) to an offload file
/// directly inside `root`, or says why not.
pub fn resolve(root: &Path, file_path: &str) -> Result<ResolvedFile, ExtractError> {
    let root_canon = root
        .canonicalize()
        .map_err(|source| ExtractError::BadRoot {
            root: root.to_owned(),
            source,
        })?;
    let given = file_path.to_owned();
    let outside = || ExtractError::OutsideRoot {
        path: given.clone(),
        root: root_canon.clone(),
    };
    let not_offload = || ExtractError::NotOffloadFile {
        path: given.clone(),
    };
    if file_path.is_empty() || file_path.contains('\0') {
        return Err(not_offload());
    }
    let raw = Path::new(file_path);
    let joined = if raw.is_absolute() {
        raw.to_owned()
    } else {
        root.join(raw)
    };
    // A trailing `..` or `/` has no file name: it names a directory.
    let (Some(parent), Some(name)) = (joined.parent(), joined.file_name()) else {
        return Err(outside());
    };
    if name == ".." {
        return Err(outside());
    }
    // A missing directory cannot be the offload directory.
    let parent_canon = parent.canonicalize().map_err(|_| outside())?;
    if parent_canon != root_canon {
        return Err(outside());
    }
    let name = name.to_str().ok_or_else(not_offload)?;
    if OffloadFileName::parse(name).is_none() {
        return Err(not_offload());
    }
    let candidate = root_canon.join(name);
    let link_meta = match fs::symlink_metadata(&candidate) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ExtractError::NotFound { path: given });
        }
        Err(source) => {
            return Err(ExtractError::Io {
                path: candidate,
                source,
            });
        }
    };
    if link_meta.file_type().is_symlink() {
        let escape = |target: PathBuf| ExtractError::SymlinkEscape {
            path: given.clone(),
            target,
        };
        let target = match candidate.canonicalize() {
            Ok(t) => t,
            Err(_) => {
                let target = fs::read_link(&candidate).unwrap_or_default();
                return Err(escape(target));
            }
        };
        let inside = target.parent() == Some(root_canon.as_path());
        let named = target
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| OffloadFileName::parse(n).is_some());
        let meta = fs::metadata(&target).map_err(|_| escape(target.clone()))?;
        if !inside || !named || !meta.is_file() {
            return Err(escape(target));
        }
        return Ok(ResolvedFile { path: target, meta });
    }
    if !link_meta.is_file() {
        return Err(not_offload());
    }
    Ok(ResolvedFile {
        path: candidate,
        meta: link_meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl";

    #[test]
    fn accepts_absolute_and_relative_names_of_real_files() {
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join(NAME), "{}\n").unwrap();
        let abs = root.path().join(NAME);
        let a = resolve(root.path(), abs.to_str().unwrap()).unwrap();
        let b = resolve(root.path(), NAME).unwrap();
        assert_eq!(a.path, b.path);
        assert_eq!(a.len(), 3);
        assert!(a.open().is_ok());
    }

    #[test]
    fn missing_file_is_not_found_and_subdirs_are_outside() {
        let root = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve(root.path(), NAME),
            Err(ExtractError::NotFound { .. })
        ));
        fs::create_dir(root.path().join("sub")).unwrap();
        fs::write(root.path().join("sub").join(NAME), "{}\n").unwrap();
        assert!(matches!(
            resolve(root.path(), &format!("sub/{NAME}")),
            Err(ExtractError::OutsideRoot { .. })
        ));
        // `sub/../NAME` resolves back into the root: allowed, file missing.
        assert!(matches!(
            resolve(root.path(), &format!("sub/../{NAME}")),
            Err(ExtractError::NotFound { .. })
        ));
    }

    #[test]
    fn swapped_file_is_caught_at_open() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join(NAME);
        fs::write(&p, "{}\n").unwrap();
        let resolved = resolve(root.path(), NAME).unwrap();
        // Both inodes exist at once, so the replacement cannot reuse the number.
        fs::write(root.path().join("other"), "x").unwrap();
        fs::rename(root.path().join("other"), &p).unwrap();
        assert!(resolved.open().is_err());
    }
}
