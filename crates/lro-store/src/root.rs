//! The offload directory as a handle: opened once, checked to be ours and
//! private, and every file in it reached *relative to the handle*, so a
//! symlink swapped inside it cannot lead a write outside.
//!
//! The default directory is `{temp_dir}/lro-{uid}` ([`default_output_dir`]):
//! created with mode 0700, refused when another user owns it (someone made
//! it first to read or plant results), its mode reset to 0700 when it is ours
//! but wider. A configured `output_dir` gets the same ownership and mode
//! checks, but its last component may be a symlink (an operator's choice).
//!
//! ```
//! use lro_store::root::{PrivateDir, default_output_dir};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let root = PrivateDir::open(&dir.path().join("out")).unwrap();
//! assert!(root.path().is_absolute());
//! # #[cfg(unix)] {
//! use std::os::unix::fs::PermissionsExt;
//! let mode = std::fs::metadata(root.path()).unwrap().permissions().mode() & 0o777;
//! assert_eq!(mode, 0o700);
//! # }
//! assert_ne!(default_output_dir(), std::env::temp_dir());
//! ```

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use cap_fs_ext::DirExt as _;
use cap_std::{
    ambient_authority,
    fs::{Dir, DirBuilder, DirBuilderExt as _, MetadataExt as _},
};
use lro_core::OffloadConfig;

/// How the default directory's name starts, before the user id.
pub const DEFAULT_DIR_PREFIX: &str = "lro-";

/// The current (effective) user id.
pub fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The default offload directory: `{temp_dir}/lro-{uid}`, one per user, so
/// no other local user can list result names or plant files there.
pub fn default_output_dir() -> PathBuf {
    std::env::temp_dir().join(format!("{DEFAULT_DIR_PREFIX}{}", current_uid()))
}

/// The directory `cfg`'s files are written to: its `output_dir`, or the
/// per-user [`default_output_dir`] when that is empty.
pub fn resolved_output_dir(cfg: &OffloadConfig) -> PathBuf {
    if cfg.output_dir.as_os_str().is_empty() {
        default_output_dir()
    } else {
        cfg.output_dir.clone()
    }
}

/// Why an offload directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RootError {
    /// It could not be created or opened.
    #[error("cannot open offload directory {path}")]
    Open {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// It belongs to another user: refused, since that user could read
    /// every result and plant files.
    #[error(
        "offload directory {path} belongs to uid {owner}, not to this process (uid {uid}): refused; remove it or set prompt.offload.output_dir"
    )]
    NotOwned {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// This process's effective user id.
        uid: u32,
    },
}

impl RootError {
    /// The OS error, when there is one.
    pub fn io(&self) -> Option<&io::Error> {
        match self {
            RootError::Open { source, .. } => Some(source),
            RootError::NotOwned { .. } => None,
        }
    }
}

/// An open, private directory: ours, mode 0700.
#[derive(Debug)]
pub struct PrivateDir {
    dir: Dir,
    path: PathBuf,
    /// Device and inode of the directory when opened.
    id: (u64, u64),
}

impl PrivateDir {
    /// Creates `path` (and parents, mode 0700) when missing, opens it,
    /// checks on the open handle that this user owns it and resets a wider
    /// mode to 0700. The last component may be a symlink.
    ///
    /// # Errors
    ///
    /// [`RootError::NotOwned`] for another user's directory,
    /// [`RootError::Open`] for anything else.
    pub fn open(path: &Path) -> Result<Self, RootError> {
        Self::open_with(path, true)
    }

    /// Like [`PrivateDir::open`], but the last component must be a real
    /// directory, not a symlink: for [`default_output_dir`], in a
    /// world-writable parent where anyone may have made the name first.
    ///
    /// # Errors
    ///
    /// As [`PrivateDir::open`]; a symlink is [`RootError::Open`].
    pub fn open_nofollow(path: &Path) -> Result<Self, RootError> {
        Self::open_with(path, false)
    }

    fn open_with(path: &Path, follow: bool) -> Result<Self, RootError> {
        let open_err = |source| RootError::Open {
            path: path.to_owned(),
            source,
        };
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt as _;
            builder.mode(0o700);
        }
        match (follow, path.parent(), path.file_name()) {
            (false, Some(parent), Some(name)) => {
                builder.create(parent).map_err(open_err)?;
                let parent =
                    Dir::open_ambient_dir(parent, ambient_authority()).map_err(open_err)?;
                match parent.create_dir_with(name, DirBuilder::new().mode(0o700)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(open_err(e)),
                }
                let dir = parent.open_dir_nofollow(name).map_err(open_err)?;
                Self::checked(dir, path)
            }
            _ => {
                builder.create(path).map_err(open_err)?;
                let dir = Dir::open_ambient_dir(path, ambient_authority()).map_err(open_err)?;
                Self::checked(dir, path)
            }
        }
    }

    fn checked(dir: Dir, path: &Path) -> Result<Self, RootError> {
        let open_err = |source| RootError::Open {
            path: path.to_owned(),
            source,
        };
        let meta = dir.dir_metadata().map_err(open_err)?;
        let uid = current_uid();
        if meta.uid() != uid {
            return Err(RootError::NotOwned {
                path: path.to_owned(),
                owner: meta.uid(),
                uid,
            });
        }
        if meta.mode() & 0o077 != 0 {
            // Ours but readable by others: made private again, through the
            // handle itself (`.` of it, not a path, so no race with a
            // rename; cap-std's handles are `O_PATH`, which `fchmod` refuses).
            rustix::fs::chmodat(
                &dir,
                ".",
                rustix::fs::Mode::from_raw_mode(0o700),
                rustix::fs::AtFlags::empty(),
            )
            .map_err(|e| open_err(e.into()))?;
            tracing::warn!(
                mode = format!("{:o}", meta.mode() & 0o777),
                "offload directory was readable by others: mode reset to 0700"
            );
        }
        let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        let id = (meta.dev(), meta.ino());
        Ok(Self { dir, path, id })
    }

    /// Whether `meta` (of a path, symlinks followed) is this directory: the
    /// path still names what was opened.
    pub fn is_same(&self, meta: &fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        (meta.dev(), meta.ino()) == self.id
    }

    /// The directory handle; open files relative to it.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The absolute path it was opened at (for descriptors and messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `name` (one component, made 0700 when missing),
    /// opened without following a symlink.
    ///
    /// # Errors
    ///
    /// The OS error: a symlink or a file in its place is one.
    pub fn subdir(&self, name: &str) -> io::Result<PrivateDir> {
        match self
            .dir
            .create_dir_with(name, DirBuilder::new().mode(0o700))
        {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let dir = self.dir.open_dir_nofollow(name)?;
        let meta = dir.dir_metadata()?;
        Ok(PrivateDir {
            dir,
            path: self.path.join(name),
            id: (meta.dev(), meta.ino()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn an_empty_output_dir_is_the_per_user_default() {
        let cfg = OffloadConfig::from_toml_str("").unwrap();
        assert_eq!(resolved_output_dir(&cfg), default_output_dir());
        assert_ne!(resolved_output_dir(&cfg), std::env::temp_dir());
        let cfg = cfg.output_dir("/srv/lro");
        assert_eq!(resolved_output_dir(&cfg), Path::new("/srv/lro"));
    }

    #[test]
    fn a_wide_directory_of_ours_is_made_private() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("wide");
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        PrivateDir::open_nofollow(&d).unwrap();
        assert_eq!(mode(&d), 0o700);
    }

    #[test]
    fn a_symlink_in_place_of_the_default_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        fs::create_dir(&target).unwrap();
        let link = tmp.path().join("lro-x");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            PrivateDir::open_nofollow(&link),
            Err(RootError::Open { .. })
        ));
        // A configured directory may be a symlink: the operator chose it.
        assert!(PrivateDir::open(&link).is_ok());
    }

    #[test]
    fn another_users_directory_is_refused() {
        // `/` belongs to root; as root, a directory handed to nobody.
        let tmp = tempfile::tempdir().unwrap();
        let path = if current_uid() == 0 {
            let d = tmp.path().join("theirs");
            fs::create_dir(&d).unwrap();
            rustix::fs::chown(
                &d,
                Some(rustix::fs::Uid::from_raw(65534)),
                Some(rustix::fs::Gid::from_raw(65534)),
            )
            .unwrap();
            d
        } else {
            PathBuf::from("/")
        };
        let err = PrivateDir::open(&path).unwrap_err();
        assert!(matches!(err, RootError::NotOwned { .. }), "{err}");
        assert!(err.to_string().contains("refused"), "{err}");
    }

    #[test]
    fn subdirs_are_private_and_never_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let root = PrivateDir::open(tmp.path()).unwrap();
        let sub = root.subdir("p-1").unwrap();
        assert_eq!(mode(sub.path()), 0o700);
        std::os::unix::fs::symlink("/etc", tmp.path().join("p-2")).unwrap();
        assert!(root.subdir("p-2").is_err());
    }
}
