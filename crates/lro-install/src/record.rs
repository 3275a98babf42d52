//! The records of wrapped entries: for each, the file, the entry, and its
//! text before and after, so that `lro uninstall` puts back exactly what was
//! there. Kept in `{state}/lro/installs.json`, written atomically.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// One wrapped entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The file, resolved.
    pub file: PathBuf,
    /// The keys leading to its servers.
    pub at: Vec<String>,
    /// The server's name.
    pub name: String,
    /// The entry's text before `lro install`.
    pub original: String,
    /// The entry's text `lro install` wrote.
    pub wrapped: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    version: u32,
    entries: Vec<Record>,
}

/// Every record, read once and written back whole.
#[derive(Debug)]
pub(crate) struct Records {
    path: PathBuf,
    entries: Vec<Record>,
}

impl Records {
    /// The records under `state_dir` (none when the file does not exist).
    pub(crate) fn load(state_dir: &Path) -> Result<Self, Error> {
        let path = state_dir.join("installs.json");
        let entries = match fs::read(&path) {
            Ok(bytes) => {
                let stored: Stored = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::Records(path.clone(), io::Error::other(e)))?;
                stored.entries
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::Records(path, e)),
        };
        Ok(Self { path, entries })
    }

    /// The record of this entry whose wrapped text is `current`.
    pub(crate) fn find(
        &self,
        file: &Path,
        at: &[String],
        name: &str,
        current: &str,
    ) -> Option<&Record> {
        self.entries
            .iter()
            .rev()
            .find(|r| r.file == file && r.at == at && r.name == name && r.wrapped == current)
    }

    /// Adds a record, replacing any other of the same entry.
    pub(crate) fn add(&mut self, record: Record) {
        self.remove(&record.file, &record.at, &record.name);
        self.entries.push(record);
    }

    /// Forgets an entry.
    pub(crate) fn remove(&mut self, file: &Path, at: &[String], name: &str) {
        self.entries
            .retain(|r| !(r.file == file && r.at == at && r.name == name));
    }

    /// Writes the records back.
    pub(crate) fn save(&self) -> Result<(), Error> {
        let fail = |e| Error::Records(self.path.clone(), e);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(fail)?;
        let stored = Stored {
            version: 1,
            entries: self.entries.clone(),
        };
        let text = serde_json::to_string_pretty(&stored).map_err(|e| fail(io::Error::other(e)))?;
        let temp = self
            .path
            .with_extension(format!("json.{}", std::process::id()));
        fs::write(&temp, text)
            .and_then(|()| fs::rename(&temp, &self.path))
            .map_err(fail)
    }
}
