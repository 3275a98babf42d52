//! Where offloaded content lives: names made here (never by the caller),
//! atomic 0600 writes in 0700 directories, and reads (`grep`, `read_file`)
//! confined to the configured roots and to the caller's own area in them
//! (see `scope.rs`), every file reached relative to an open directory.

use std::{
    fmt::Write as _,
    fs,
    io::{self, Read as _, Write as _},
    os::unix::fs::DirBuilderExt as _,
    path::{Component, Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use cap_std::fs::{Dir, OpenOptionsExt as _};
use lro_core::{principal::Principal, quota::Quota};
use sha2::{Digest as _, Sha256};

use crate::{
    ContextError,
    scope::{Located, Place},
    tree::{collect_files, ledger_for, measure_tree},
};

/// Longest part of a caller's id kept in a file name; the content hash that
/// follows keeps names unique whatever was cut.
const MAX_ID_CHARS: usize = 48;

/// `id` with every character outside `[A-Za-z0-9_-]` replaced by `_`, at
/// most [`MAX_ID_CHARS`] long: odd or long ids cannot break a file name.
pub(crate) fn sanitize(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_ID_CHARS)
        .collect();
    if s.is_empty() { "_".to_owned() } else { s }
}

/// The first 16 hex digits of the content's SHA-256.
pub(crate) fn digest(content: &[u8]) -> String {
    let hash = Sha256::digest(content);
    let mut out = String::with_capacity(16);
    for b in &hash[..8] {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The file of a compacted tool result: the same call with the same content
/// always maps to the same name, and anything else to another one.
pub(crate) fn tool_file_name(call_id: &str, content: &[u8]) -> String {
    format!("tool_call_{}_{}.txt", sanitize(call_id), digest(content))
}

/// The file of a compressed group.
pub(crate) fn group_file_name(chat_id: &str, idx: usize, content: &[u8]) -> String {
    format!(
        "compressed_group_{}_{idx}_{}.json",
        sanitize(chat_id),
        digest(content)
    )
}

/// Whether a write created the file or found it already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    New,
    Existing,
}

/// Writes `content` to `name` in `dir`, the directory `at` names, open
/// (see `Located::open_dir`), atomically (a temp file renamed into place),
/// mode 0600. Every step is taken relative to that handle, so a symlink
/// swapped inside it cannot move the write outside. A file already there
/// with the same content is left alone; a new one must fit `quota`.
/// Like the LRO offload writer it does not fsync: readers never see half a
/// file, and the history keeps the preview if a crash loses one.
pub(crate) fn write(
    dir: &Dir,
    at: &Located,
    name: &str,
    content: &[u8],
    quota: &Quota,
) -> io::Result<(PathBuf, Written)> {
    let path = at.full.join(name);
    if read_regular(dir, name).is_ok_and(|old| old == content) {
        return Ok((path, Written::Existing));
    }
    let reservation = at
        .reserve(quota, content.len() as u64)
        .map_err(io::Error::other)?;
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    let result = (|| {
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true).mode(0o600);
        let mut f = dir.open_with(&tmp, &opts)?;
        f.write_all(content)?;
        dir.rename(&tmp, dir, name)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
        if let Some(r) = reservation {
            r.release();
        }
    }
    result.map(|()| (path, Written::New))
}

/// Opens `name` in `dir` for reading without blocking (a FIFO planted in
/// the store must not hang a worker thread) and checks, on the open handle,
/// that it is a regular file.
pub(crate) fn open_regular(dir: &Dir, name: &str) -> io::Result<cap_std::fs::File> {
    let mut opts = cap_std::fs::OpenOptions::new();
    opts.read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    let file = dir.open_with(name, &opts)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory, not a file",
        ));
    }
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file",
        ));
    }
    Ok(file)
}

fn read_regular(dir: &Dir, name: &str) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(dir, name)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The directories reads and writes are confined to.
#[derive(Debug, Clone, Default)]
pub struct Roots(Vec<PathBuf>);

impl Roots {
    /// The resolved root directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.0
    }

    /// Roots at `dirs`, each created (0700) when missing and resolved.
    ///
    /// # Errors
    ///
    /// [`ContextError::Io`] when a root cannot be created or resolved.
    pub fn new(dirs: impl IntoIterator<Item = impl AsRef<Path>>) -> Result<Self, ContextError> {
        let mut out = Vec::new();
        for d in dirs {
            let d = d.as_ref();
            let io = |source| ContextError::Io {
                path: d.to_owned(),
                source,
            };
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(d)
                .map_err(io)?;
            out.push(d.canonicalize().map_err(io)?);
        }
        Ok(Self(out))
    }

    /// No root at all: every path is accepted (the library used directly).
    pub fn any() -> Self {
        Self(Vec::new())
    }

    /// `path` resolved (symlinks followed as far as it exists) and checked
    /// to lie inside a root. A relative path is taken from the first root.
    ///
    /// # Errors
    ///
    /// [`ContextError::OutsideRoots`], naming `field`.
    pub fn resolve(&self, field: &'static str, path: &Path) -> Result<PathBuf, ContextError> {
        let outside = || ContextError::OutsideRoots {
            field,
            path: path.to_owned(),
        };
        let joined = match (path.is_absolute(), self.0.first()) {
            (false, Some(root)) => root.join(path),
            _ => path.to_owned(),
        };
        // Resolve the longest existing ancestor; what does not exist yet may
        // hold no `..` that could climb back out.
        let mut existing = joined.as_path();
        let mut rest = Vec::new();
        let resolved = loop {
            match existing.canonicalize() {
                Ok(p) => break p,
                Err(_) => {
                    let name = existing.file_name().ok_or_else(outside)?;
                    rest.push(name.to_owned());
                    existing = existing.parent().ok_or_else(outside)?;
                }
            }
        };
        let mut full = resolved;
        for part in rest.iter().rev() {
            if Path::new(part)
                .components()
                .any(|c| !matches!(c, Component::Normal(_)))
            {
                return Err(outside());
            }
            full.push(part);
        }
        if self.0.is_empty() || self.0.iter().any(|r| full.starts_with(r)) {
            Ok(full)
        } else {
            Err(outside())
        }
    }
}

/// Whether `name` is one the store makes (a compacted result or a
/// compressed group): the only files retention ever deletes.
pub(crate) fn is_store_name(name: &str) -> bool {
    (name.starts_with("tool_call_") && name.ends_with(".txt"))
        || (name.starts_with("compressed_group_") && name.ends_with(".json"))
}

/// What a retention pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expired {
    /// Files deleted.
    pub deleted: usize,
    /// Files that could not be deleted.
    pub errors: usize,
}

/// Deletes the store's files under `dir` last modified more than
/// `retention` before `now`. Only names the store makes are touched; a
/// symlink is never followed.
pub fn expire(dir: &Path, retention: Duration, now: std::time::SystemTime) -> Expired {
    let mut out = Expired::default();
    let Ok(root) = Dir::open_ambient_dir(dir, cap_std::ambient_authority()) else {
        return out;
    };
    let ledger = ledger_for(dir);
    let mark = ledger.begin_pass();
    let root = Arc::new(root);
    let mut files = Vec::new();
    collect_files(&root, Path::new(""), false, 0, &mut files);
    for (path, folder, _) in files {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        // Stat and remove relative to the folder's handle: no symlink on
        // the way is followed.
        let Ok(meta) = folder.symlink_metadata(name) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m.into_std()).ok())
            .is_some_and(|age| age > retention);
        if is_store_name(name) && meta.is_file() && old {
            match folder.remove_file(name) {
                Ok(()) => out.deleted += 1,
                Err(_) => out.errors += 1,
            }
        }
    }
    // The writers' ledger never sees a deletion: this pass corrects it.
    if let Ok(usage) = measure_tree(&root) {
        ledger.correct(mark, usage);
    }
    out
}

/// Most bytes `read_file` returns at once (the seed returns whole files).
pub const READ_CAP: usize = 4 << 20;
/// Most matches `grep` returns.
pub const GREP_MAX_MATCHES: usize = 1000;
/// Longest matching line `grep` shows.
const GREP_LINE_CHARS: usize = 400;
/// How long `grep` may search.
const GREP_TIME: Duration = Duration::from_secs(10);
/// Largest file `grep` reads.
const GREP_FILE_CAP: u64 = 64 << 20;

/// `read_file`: the whole file, or `limit` lines from line `offset`
/// (0-based), as the exact bytes of those lines. Past [`READ_CAP`] the answer
/// stops at a line boundary and says how to read on.
///
/// # Errors
///
/// [`ContextError::NotFound`] for a missing file, [`ContextError::Io`] when
/// it cannot be read.
pub fn read_file(
    path: &Path,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String, ContextError> {
    read_placed(
        Roots::any().place(&Principal::anonymous(), "absolute_path", path)?,
        offset,
        limit,
    )
}

/// [`read_file`] of a path already placed: another principal's file is
/// answered exactly as a missing one.
pub(crate) fn read_placed(
    place: Place,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String, ContextError> {
    let not_found = |path: &Path| ContextError::NotFound {
        path: path.to_owned(),
        // A name only the store makes, gone: retention deleted it.
        expired: path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_store_name),
    };
    let at = match place {
        Place::Own(at) => at,
        Place::Foreign(path) => return Err(not_found(&path)),
    };
    let bytes = at
        .open_parent()
        .and_then(|(dir, name)| read_regular(&dir, &name))
        .map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => not_found(&at.full),
            io::ErrorKind::IsADirectory | io::ErrorKind::InvalidInput => ContextError::NotAFile {
                path: at.full.clone(),
                reason: source.to_string(),
            },
            _ => ContextError::Io {
                path: at.full.clone(),
                source,
            },
        })?;
    let text = String::from_utf8_lossy(&bytes);
    let start = offset.unwrap_or(0);
    let lines = text.split_inclusive('\n').skip(start);
    let mut out = String::new();
    for (taken, line) in lines.enumerate() {
        if limit.is_some_and(|l| taken >= l) {
            break;
        }
        if out.len() + line.len() > READ_CAP {
            let at = start + taken;
            if out.is_empty() {
                // Paging by lines cannot split a line longer than the cap, and
                // pointing the reader back at it would loop: its head is shown
                // and the reader is sent past it.
                let mut cut = READ_CAP;
                while !line.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&line[..cut]);
                let _ = write!(
                    out,
                    "\n[line {at} is {} bytes, over the {} MiB cap: its first {cut} bytes are shown; read on with offset={}]",
                    line.len(),
                    READ_CAP >> 20,
                    at + 1
                );
            } else {
                let _ = write!(
                    out,
                    "\n[stopped at {} MiB: read on with offset={at} and a limit]",
                    READ_CAP >> 20
                );
            }
            break;
        }
        out.push_str(line);
    }
    Ok(out)
}

/// `grep`: lines matching `pattern` in the files under `dir` whose names
/// match `glob`, at most `limit` (and [`GREP_MAX_MATCHES`]) of them, in the
/// seed's answer format.
///
/// # Errors
///
/// [`ContextError::Invalid`] for a bad pattern or glob.
pub fn grep(
    pattern: &str,
    dir: &Path,
    shown_dir: &str,
    glob: Option<&str>,
    limit: Option<usize>,
) -> Result<String, ContextError> {
    let place = Roots::any().place(&Principal::anonymous(), "path", dir)?;
    grep_placed(pattern, place, shown_dir, glob, limit)
}

/// [`grep`] in a directory already placed: only the caller's own files are
/// searched; another principal's folder is searched as an empty one.
pub(crate) fn grep_placed(
    pattern: &str,
    place: Place,
    shown_dir: &str,
    glob: Option<&str>,
    limit: Option<usize>,
) -> Result<String, ContextError> {
    let re = regex::Regex::new(pattern).map_err(|e| ContextError::invalid("pattern", e))?;
    let matcher = match glob {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| ContextError::invalid("glob", e))?
                .compile_matcher(),
        ),
        None => None,
    };
    let limit = limit.unwrap_or(GREP_MAX_MATCHES).min(GREP_MAX_MATCHES);
    let started = Instant::now();
    let mut files = Vec::new();
    if let Place::Own(at) = &place
        && let Ok(dir) = at.open_dir(false)
    {
        collect_files(
            &Arc::new(dir),
            Path::new(""),
            at.anonymous_root,
            0,
            &mut files,
        );
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut found = 0;
    let mut body = String::new();
    let mut stopped = None;
    'files: for (name, folder, len) in files {
        if matcher
            .as_ref()
            .is_some_and(|m| !m.is_match(name.file_name().unwrap_or_default()))
        {
            continue;
        }
        if len > GREP_FILE_CAP {
            continue;
        }
        let file_name = name
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let Ok(bytes) = read_regular(&folder, file_name) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut header = false;
        for (n, line) in text.lines().enumerate() {
            if !re.is_match(line) {
                continue;
            }
            if found >= limit {
                stopped = Some(format!("stopped at the limit of {limit} matches"));
                break 'files;
            }
            if started.elapsed() > GREP_TIME {
                stopped = Some(format!("stopped after {}s", GREP_TIME.as_secs()));
                break 'files;
            }
            if !header {
                let _ = write!(body, "---\nFile: {}\n", name.display());
                header = true;
            }
            let shown: String = line.chars().take(GREP_LINE_CHARS).collect();
            let _ = writeln!(body, "L{}: {shown}", n + 1);
            found += 1;
        }
    }
    let filter = glob
        .map(|g| format!(" (filter: \"{g}\")"))
        .unwrap_or_default();
    let mut answer = format!(
        "Found {found} matches for pattern \"{pattern}\" in path \"{shown_dir}\"{filter}:\n{body}"
    );
    if found > 0 {
        answer.push_str("---");
    }
    if let Some(why) = stopped {
        let _ = write!(answer, "\n[{why}]");
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn names_survive_odd_and_long_ids() {
        let long = "x".repeat(300);
        let name = tool_file_name(&format!("../{long}/\u{e9}"), b"c");
        assert!(name.starts_with("tool_call____xxx"), "{name}");
        assert!(name.len() < 100 && !name.contains('/'), "{name}");
        assert_ne!(
            tool_file_name("call_1", b"a"),
            tool_file_name("call_1", b"b")
        );
        assert_eq!(
            tool_file_name("call_1", b"a"),
            tool_file_name("call_1", b"a")
        );
    }

    #[test]
    fn writes_are_private_atomic_and_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let roots = Roots::new([dir.path()]).unwrap();
        let Place::Own(at) = roots
            .place(&Principal::anonymous(), "store_dir", &store)
            .unwrap()
        else {
            panic!("the anonymous principal's own root")
        };
        let open = at.open_dir(true).unwrap();
        let (p, w) = write(&open, &at, "a.txt", b"hello\n", &Quota::new()).unwrap();
        assert_eq!(w, Written::New);
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(&store).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            write(&open, &at, "a.txt", b"hello\n", &Quota::new())
                .unwrap()
                .1,
            Written::Existing
        );
        assert_eq!(
            fs::read_dir(&store).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn roots_confine_paths() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new([dir.path().join("root")]).unwrap();
        let inside = roots
            .resolve("path", &dir.path().join("root/new/sub"))
            .unwrap();
        assert!(inside.ends_with("root/new/sub"));
        assert!(
            roots
                .resolve("path", Path::new("rel/x"))
                .unwrap()
                .ends_with("root/rel/x")
        );
        assert!(
            roots
                .resolve("path", &dir.path().join("root/../elsewhere"))
                .is_err()
        );
        assert!(roots.resolve("path", Path::new("/etc/passwd")).is_err());
        std::os::unix::fs::symlink("/etc", dir.path().join("root/link")).unwrap();
        let err = roots
            .resolve("absolute_path", &dir.path().join("root/link/passwd"))
            .unwrap_err();
        assert!(err.to_string().starts_with("`absolute_path`"), "{err}");
    }

    #[test]
    fn read_file_pages_by_exact_lines() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f.txt");
        fs::write(&f, "a\nb\r\nc").unwrap();
        assert_eq!(read_file(&f, None, None).unwrap(), "a\nb\r\nc");
        assert_eq!(read_file(&f, Some(1), Some(1)).unwrap(), "b\r\n");
        assert_eq!(read_file(&f, Some(2), None).unwrap(), "c");
        assert!(matches!(
            read_file(&dir.path().join("no"), None, None),
            Err(ContextError::NotFound { .. })
        ));
    }

    #[test]
    fn reads_past_the_cap_page_on_and_a_longer_line_is_not_a_loop() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("big");
        let line = format!("{}\n", "é".repeat(1 << 19));
        fs::write(&f, line.repeat(6)).unwrap();
        let first = read_file(&f, None, None).unwrap();
        let hint = "\n[stopped at 4 MiB: read on with offset=3 and a limit]";
        assert_eq!(first, format!("{}{hint}", line.repeat(3)));
        assert_eq!(read_file(&f, Some(3), None).unwrap(), line.repeat(3));

        fs::write(&f, format!("a{}\nz\n", "é".repeat(READ_CAP))).unwrap();
        let head = read_file(&f, None, None).unwrap();
        let (shown, note) = head.split_once("\n[").unwrap();
        assert_eq!(shown.len(), READ_CAP - 1, "cut at a character boundary");
        assert_eq!(
            note,
            format!(
                "line 0 is {} bytes, over the 4 MiB cap: its first {} bytes are shown; read on with offset=1]",
                2 * READ_CAP + 2,
                READ_CAP - 1
            )
        );
        assert_eq!(read_file(&f, Some(1), None).unwrap(), "z\n");
    }

    #[test]
    fn retention_deletes_only_old_store_files_and_reads_say_expired() {
        let dir = tempfile::tempdir().unwrap();
        let stored = tool_file_name("c1", b"x");
        for name in [stored.as_str(), "notes.txt", "compressed_group_a_0_ff.json"] {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        assert_eq!(
            expire(dir.path(), Duration::from_secs(600), later).deleted,
            0
        );
        assert_eq!(
            expire(dir.path(), Duration::from_secs(60), later).deleted,
            2
        );
        assert!(
            dir.path().join("notes.txt").exists(),
            "not a store name: kept"
        );
        let err = read_file(&dir.path().join(&stored), None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("it expired"), "{err}");
        let other = read_file(&dir.path().join("never.txt"), None, None)
            .unwrap_err()
            .to_string();
        assert!(!other.contains("expired"), "{other}");
    }

    #[test]
    fn grep_in_the_seed_format() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "tool one\nnothing\ntool two\n").unwrap();
        fs::write(dir.path().join("b.json"), "tool three\n").unwrap();
        let out = grep("tool", dir.path(), "./store/", Some("*.txt"), None).unwrap();
        assert_eq!(
            out,
            "Found 2 matches for pattern \"tool\" in path \"./store/\" (filter: \"*.txt\"):\n---\nFile: a.txt\nL1: tool one\nL3: tool two\n---"
        );
        let capped = grep("tool", dir.path(), "d", None, Some(1)).unwrap();
        assert!(
            capped.contains("Found 1 matches")
                && capped.ends_with("[stopped at the limit of 1 matches]"),
            "{capped}"
        );
        assert!(
            grep("(", dir.path(), "d", None, None)
                .unwrap_err()
                .to_string()
                .starts_with("`pattern`")
        );
    }
}
