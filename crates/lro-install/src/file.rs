//! Reading a configuration file, and writing it back atomically after a
//! backup: a temporary file beside it, the original's permissions, a rename
//! over the file a symlink points to (the link stays a link).

use std::{
    fs,
    io::{self, Write as _},
    ops::Range,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use crate::{entry::Prop, error::Error};

/// One server entry of a file: its name, the range of its text, and its
/// properties when it is a map.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The server's name.
    pub name: String,
    /// Where the entry's text is (for JSON its value, for a TOML table its
    /// header and keys).
    pub range: Range<usize>,
    /// Its properties; `None` when the entry is not a map.
    pub props: Option<Vec<Prop>>,
    /// The indentation of the entry's first line.
    pub indent: String,
    /// The file's indentation step.
    pub unit: String,
    /// Whether the entry is written on one line (in TOML: an inline table).
    pub one_line: bool,
    /// A TOML table's header as written (`[mcp_servers.docs]`).
    pub header: Option<String>,
}

/// The file's text; `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<String>, Error> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Io("read it", e)),
    }
}

/// Refuses a file without write permission before anything is done, so a
/// read-only file is never touched (root included, whom the kernel would let
/// write it).
pub(crate) fn check_writable(path: &Path) -> Result<(), Error> {
    let meta = fs::metadata(path).map_err(|e| Error::Io("read it", e))?;
    if meta.permissions().readonly() {
        return Err(Error::ReadOnly);
    }
    Ok(())
}

/// Copies the file to `{dir}/{its path, '/' as '%'}.{milliseconds}` and
/// returns the copy's path.
pub(crate) fn backup(path: &Path, dir: &Path) -> Result<PathBuf, Error> {
    fs::create_dir_all(dir).map_err(|e| Error::Io("create the backup folder", e))?;
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = path.to_string_lossy().replace('/', "%");
    let copy = dir.join(format!("{name}.{ms}"));
    fs::copy(path, &copy).map_err(|e| Error::Io("back it up", e))?;
    Ok(copy)
}

/// Replaces the file's content with `text` in one rename.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), Error> {
    let target = fs::canonicalize(path).map_err(|e| Error::Io("resolve it", e))?;
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.lro-install.{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.set_permissions(fs::metadata(&target)?.permissions())?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temp, &target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(|e| Error::Io("write it", e))
}
