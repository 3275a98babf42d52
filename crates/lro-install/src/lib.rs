//! `lro install`: puts `lro proxy` in front of the MCP servers a client
//! already has, in the client's own configuration files, and takes it out
//! again exactly.
//!
//! Each configured server is wrapped: a stdio entry runs
//! `lro proxy -- COMMAND ARGS…` with its environment, working directory and
//! every other key kept; a streamable-HTTP entry runs
//! `lro proxy --url URL --header 'Name: ${LRO_HEADER_NAME}'` with each header's
//! value moved into the entry's environment, so that no secret shows in a
//! process list. Entries `lro proxy` cannot carry are left as they are and
//! listed with the reason (OAuth, legacy SSE).
//!
//! Only the text of the entries it wraps changes: comments, key order and
//! spacing elsewhere stay byte for byte. The file is backed up first and
//! written atomically; each wrapped entry's text before and after is
//! recorded, so that [`uninstall`] restores it exactly, whatever else was
//! edited in between.
//!
//! ```
//! use lro_install::{Client, Env, LroCommand, Options};
//!
//! let home = tempfile::tempdir().unwrap();
//! let file = home.path().join(".cursor/mcp.json");
//! std::fs::create_dir_all(file.parent().unwrap()).unwrap();
//! let before = r#"{
//!   // my servers
//!   "mcpServers": {
//!     "docs": { "command": "npx", "args": ["-y", "docs-mcp"] }
//!   }
//! }"#;
//! std::fs::write(&file, before).unwrap();
//!
//! let env = Env::new(home.path(), home.path());
//! let options = Options::new(LroCommand::parse("/usr/local/bin/lro").unwrap());
//! let report = lro_install::install(Client::Cursor, &options, &env).unwrap();
//! assert_eq!(report.files[0].outcome.as_ref().unwrap().changed, ["docs"]);
//! let after = std::fs::read_to_string(&file).unwrap();
//! assert!(after.contains(r#"["proxy", "--", "npx", "-y", "docs-mcp"]"#));
//!
//! lro_install::uninstall(Client::Cursor, &options, &env).unwrap();
//! assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
//! ```

#![forbid(unsafe_code)]

mod client;
mod entry;
mod error;
mod file;
mod json;
mod record;
mod toml;

use std::{
    ops::Range,
    path::{Path, PathBuf},
};

pub use client::{Client, Env, Os, Place, Scope};
pub use entry::{Leave, LroCommand};
pub use error::Error;

use entry::{Decision, decide};
use file::Found;
use record::{Record, Records};

/// What to wrap or restore, and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The command wrapped entries run: by default the `lro` that runs
    /// `install`.
    pub lro: LroCommand,
    /// Only these scopes' files. Defaults to every scope of the client.
    pub scope: Option<Scope>,
    /// Only servers of these names (`--only`); a remote entry with no
    /// credentials is wrapped when named here. Defaults to all.
    pub only: Vec<String>,
    /// Not servers of these names (`--except`).
    pub except: Vec<String>,
    /// Print what would change as a diff and write nothing.
    pub dry_run: bool,
}

impl Options {
    /// Every server of every scope, wrapped with `lro`, written.
    pub fn new(lro: LroCommand) -> Self {
        Self {
            lro,
            scope: None,
            only: Vec::new(),
            except: Vec::new(),
            dry_run: false,
        }
    }

    fn selects(&self, name: &str) -> bool {
        (self.only.is_empty() || self.only.iter().any(|n| n == name))
            && !self.except.iter().any(|n| n == name)
    }
}

/// What happened to every file of a client.
#[derive(Debug)]
#[non_exhaustive]
pub struct Report {
    /// One per file that exists.
    pub files: Vec<FileReport>,
}

impl Report {
    /// Whether no file of the client exists.
    pub fn none_found(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether any file failed.
    pub fn failed(&self) -> bool {
        self.files.iter().any(|f| f.outcome.is_err())
    }

    /// The names given with `--only` that no file has.
    pub fn unmatched<'a>(&self, options: &'a Options) -> Vec<&'a str> {
        options
            .only
            .iter()
            .filter(|n| {
                !self.files.iter().any(|f| {
                    f.outcome.as_ref().is_ok_and(|o| {
                        o.changed.contains(n) || o.left.iter().any(|(name, _)| name == *n)
                    })
                })
            })
            .map(String::as_str)
            .collect()
    }
}

/// What happened to one file.
#[derive(Debug)]
#[non_exhaustive]
pub struct FileReport {
    /// The file and where its servers are.
    pub place: Place,
    /// What was done, or why nothing could be.
    pub outcome: Result<Outcome, Error>,
}

/// What was done to one file.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Outcome {
    /// The servers wrapped (by `install`) or restored (by `uninstall`).
    pub changed: Vec<String>,
    /// The servers left as they are, and why.
    pub left: Vec<(String, Leave)>,
    /// The copy made before writing.
    pub backup: Option<PathBuf>,
    /// With `dry_run`, the change as a unified diff.
    pub diff: Option<String>,
}

/// Wraps the servers of every existing file of `client`; an error when the
/// records of wrapped entries cannot be read.
pub fn install(client: Client, options: &Options, env: &Env) -> Result<Report, Error> {
    run(client, options, env, Op::Install)
}

/// Restores every server `install` wrapped in the files of `client`; an
/// error when the records of wrapped entries cannot be read.
pub fn uninstall(client: Client, options: &Options, env: &Env) -> Result<Report, Error> {
    run(client, options, env, Op::Uninstall)
}

/// A server as `lro install --list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// It runs `lro proxy`.
    Wrapped,
    /// `install` would wrap it.
    NotWrapped,
    /// `install` leaves it, for this reason.
    Left(Leave),
}

/// The servers of one file, as `lro install --list` shows them.
pub type Listing = Vec<(String, Status)>;

/// Each existing file of a client, and its servers or why they cannot be
/// read.
pub type Listings = Vec<(Place, Result<Listing, Error>)>;

/// Every server of every existing file of `client`, and whether it is
/// wrapped; an error when the records cannot be read.
pub fn list(client: Client, lro: &LroCommand, env: &Env) -> Result<Listings, Error> {
    let records = Records::load(&env.state_dir())?;
    let mut out = Vec::new();
    for place in client.places(None, env) {
        match list_place(&place, lro, &records) {
            Ok(None) => {}
            Ok(Some(servers)) => out.push((place, Ok(servers))),
            Err(e) => out.push((place, Err(e))),
        }
    }
    Ok(out)
}

fn list_place(
    place: &Place,
    lro: &LroCommand,
    records: &Records,
) -> Result<Option<Listing>, Error> {
    let Some(text) = file::read(&place.path)? else {
        return Ok(None);
    };
    let file = resolved(&place.path);
    let servers = entries(place, &text)?
        .into_iter()
        .map(|f| {
            let current = &text[f.range.clone()];
            let status = match &f.props {
                None => Status::Left(not_a_map()),
                Some(_) if records.find(&file, &place.at, &f.name, current).is_some() => {
                    Status::Wrapped
                }
                Some(props) => match decide(props, place.client.dialect(), lro, false) {
                    Decision::Wrap(_) => Status::NotWrapped,
                    Decision::Leave(Leave::Wrapped) => Status::Wrapped,
                    Decision::Leave(why) => Status::Left(why),
                },
            };
            (f.name, status)
        })
        .collect();
    Ok(Some(servers))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Install,
    Uninstall,
}

fn run(client: Client, options: &Options, env: &Env, op: Op) -> Result<Report, Error> {
    let state = env.state_dir();
    let mut records = Records::load(&state)?;
    let files = client
        .places(options.scope, env)
        .into_iter()
        .filter_map(
            |place| match edit(&place, options, &state, &mut records, op) {
                Ok(None) => None,
                Ok(Some(outcome)) => Some(FileReport {
                    place,
                    outcome: Ok(outcome),
                }),
                Err(e) => Some(FileReport {
                    place,
                    outcome: Err(e),
                }),
            },
        )
        .collect();
    Ok(Report { files })
}

fn entries(place: &Place, text: &str) -> Result<Vec<Found>, Error> {
    if place.is_toml() {
        toml::entries(text, &place.at)
    } else {
        json::entries(text, &place.at)
    }
}

fn not_a_map() -> Leave {
    Leave::Unreadable("not a map of settings".into())
}

/// The file as records name it: symlinks resolved.
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// Wraps or restores the selected entries of one file; `None` when the
/// file does not exist.
fn edit(
    place: &Place,
    options: &Options,
    state: &Path,
    records: &mut Records,
    op: Op,
) -> Result<Option<Outcome>, Error> {
    let Some(text) = file::read(&place.path)? else {
        return Ok(None);
    };
    let file = resolved(&place.path);
    let mut outcome = Outcome::default();
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut added = Vec::new();
    for found in entries(place, &text)? {
        if !options.selects(&found.name) {
            continue;
        }
        let Some(props) = &found.props else {
            outcome.left.push((found.name, not_a_map()));
            continue;
        };
        let current = &text[found.range.clone()];
        let record = records.find(&file, &place.at, &found.name, current);
        match op {
            Op::Install => {
                if record.is_some() {
                    outcome.left.push((found.name, Leave::Wrapped));
                    continue;
                }
                let forced = options.only.contains(&found.name);
                match decide(props, place.client.dialect(), &options.lro, forced) {
                    Decision::Wrap(outs) => {
                        let wrapped = if place.is_toml() {
                            toml::render(&found, props, &outs)
                        } else {
                            json::render(&found, props, &outs)
                        };
                        added.push(Record {
                            file: file.clone(),
                            at: place.at.clone(),
                            name: found.name.clone(),
                            original: current.to_owned(),
                            wrapped: wrapped.clone(),
                        });
                        edits.push((found.range.clone(), wrapped));
                        outcome.changed.push(found.name);
                    }
                    Decision::Leave(why) => outcome.left.push((found.name, why)),
                }
            }
            Op::Uninstall => match record {
                Some(record) => {
                    edits.push((found.range.clone(), record.original.clone()));
                    outcome.changed.push(found.name);
                }
                None => {
                    if let Decision::Leave(Leave::Wrapped) =
                        decide(props, place.client.dialect(), &options.lro, false)
                    {
                        let why = "runs lro proxy, but lro install has no record of it as it is now \
                                   (changed since, or wrapped elsewhere): restore it by hand";
                        outcome
                            .left
                            .push((found.name, Leave::Unreadable(why.into())));
                    }
                }
            },
        }
    }
    if edits.is_empty() {
        return Ok(Some(outcome));
    }
    let new_text = splice(&text, edits);
    // What is written must read back as the same kind of file.
    entries(place, &new_text)?;
    if options.dry_run {
        let diff = similar::TextDiff::from_lines(&text, &new_text);
        let name = place.path.display().to_string();
        outcome.diff = Some(diff.unified_diff().header(&name, &name).to_string());
        return Ok(Some(outcome));
    }
    file::check_writable(&place.path)?;
    outcome.backup = Some(file::backup(&file, &state.join("backups"))?);
    match op {
        // The records first: a file wrapped without them could not be
        // restored, and a record of an entry left unwrapped is never used.
        Op::Install => {
            added.into_iter().for_each(|r| records.add(r));
            records.save()?;
            file::write_atomic(&place.path, &new_text)?;
        }
        Op::Uninstall => {
            file::write_atomic(&place.path, &new_text)?;
            for name in &outcome.changed {
                records.remove(&file, &place.at, name);
            }
            records.save()?;
        }
    }
    Ok(Some(outcome))
}

/// `text` with each range replaced; the ranges do not overlap.
fn splice(text: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for (range, new) in edits {
        out.push_str(&text[at..range.start]);
        out.push_str(&new);
        at = range.end;
    }
    out.push_str(&text[at..]);
    out
}
