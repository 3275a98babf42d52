//! Authorization of one extraction: whose result a `file_path` may name,
//! and whether it has expired.
//!
//! On a shared server, a result's name is a handle, not a capability: the
//! caller's [`Principal`] is checked on every call. [`Access::check`] decides
//! two things before any file is looked up:
//!
//! 1. **Expired**: from the name's own ULID timestamp plus the TTL, so an
//!    expired name gets its own error (call the original tool again) without
//!    touching the disk.
//! 2. **Where to look**: the caller's own folder, `principal.dir(output_dir)`.
//!    The path guards then confine the lookup to it.
//!
//! Everything that is not found there (another principal's file, a file that
//! does not exist, a name that does not parse, a path outside the folder)
//! gets one and the same [`AccessError::Unknown`], apart from echoing the
//! argument: no answer tells a caller that someone else's result exists.
//!
//! The `lro extract FILE` command reads a local file and needs none of this;
//! it runs an [`Extractor`](crate::Extractor) directly.
//!
//! ```
//! use std::time::Duration;
//! use lro_core::principal::Principal;
//! use lro_extract::access::{Access, AccessError};
//!
//! let access = Access::new("/srv/lro").ttl(Duration::from_secs(3600));
//! let alice = Principal::new("alice");
//! // A fresh name: look in alice's own folder.
//! let name = lro_core::file::OffloadFileName::new("list").to_string();
//! let grant = access.check(&alice, &name).unwrap();
//! assert_eq!(grant.root(), alice.dir("/srv/lro".as_ref()));
//! // A name that does not parse is unknown, like any other.
//! let err = access.check(&alice, "/etc/passwd").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "no offloaded result named \"/etc/passwd\": it does not exist or is not yours"
//! );
//! // A name from 2016 expired long ago; nothing was looked up.
//! let old = "atlatl-list-01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl";
//! assert!(matches!(access.check(&alice, old), Err(AccessError::Expired { .. })));
//! ```

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use lro_core::{file::OffloadFileName, principal::Principal};

use crate::ExtractError;

/// Why a caller may not read the result it named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// Not a result of this caller: it does not exist, belongs to another
    /// principal, is not an offload file's name, or lies outside the
    /// caller's folder. One text for all, so that none is an oracle.
    #[error("no offloaded result named {path:?}: it does not exist or is not yours")]
    Unknown {
        /// The `file_path` as given.
        path: String,
    },
    /// The name's own timestamp plus the TTL has passed.
    #[error(
        "the offloaded result {path:?} has expired (results expire after {}); call the original tool again to make a new one",
        lifetime(*.ttl)
    )]
    Expired {
        /// The `file_path` as given.
        path: String,
        /// How long results live.
        ttl: Duration,
    },
}

/// Where offload files live and how long they live: checks a caller's
/// `file_path` before any lookup. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    output_dir: PathBuf,
    ttl: Option<Duration>,
}

impl Access {
    /// Checks names against the offload directory `output_dir`; results
    /// never expire until [`Access::ttl`] is set.
    pub fn new(output_dir: impl Into<PathBuf>) -> Self {
        Self {
            output_dir: output_dir.into(),
            ttl: None,
        }
    }

    /// Sets how long a result lives after the timestamp in its name.
    /// Defaults to forever (the scheduler may still delete files).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How long results live, when set.
    pub fn lifetime(&self) -> Option<Duration> {
        self.ttl
    }

    /// Decides, from `file_path` alone, whether `principal` may look for it
    /// now, and where.
    pub fn check(&self, principal: &Principal, file_path: &str) -> Result<Grant, AccessError> {
        self.check_at(principal, file_path, SystemTime::now())
    }

    /// [`Access::check`] at the time `now`.
    pub fn check_at(
        &self,
        principal: &Principal,
        file_path: &str,
        now: SystemTime,
    ) -> Result<Grant, AccessError> {
        let unknown = || AccessError::Unknown {
            path: file_path.to_owned(),
        };
        let name = Path::new(file_path)
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(OffloadFileName::parse)
            .ok_or_else(unknown)?;
        if let Some(ttl) = self.ttl
            && name
                .created_at()
                .checked_add(ttl)
                .is_some_and(|end| end < now)
        {
            return Err(AccessError::Expired {
                path: file_path.to_owned(),
                ttl,
            });
        }
        Ok(Grant {
            root: principal.dir(&self.output_dir),
            path: file_path.to_owned(),
        })
    }
}

/// Leave to look for one `file_path` in the caller's own folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    root: PathBuf,
    path: String,
}

impl Grant {
    /// The caller's own folder: the only directory the lookup may read.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What the caller sees of an extraction error: a failed lookup (a path
    /// guard, or a folder that does not exist yet) becomes
    /// [`AccessError::Unknown`]; any other error is the caller's own
    /// result's, and is shown as it is.
    pub fn conceal(&self, err: &ExtractError) -> Option<AccessError> {
        (err.is_guard() || matches!(err, ExtractError::BadRoot { .. })).then(|| {
            AccessError::Unknown {
                path: self.path.clone(),
            }
        })
    }
}

/// `ttl` for people: "1 hour", "90 minutes", "45 seconds".
pub fn lifetime(ttl: Duration) -> String {
    let secs = ttl.as_secs();
    let (n, unit) = match secs {
        s if s >= 3600 && s % 3600 == 0 => (s / 3600, "hour"),
        s if s >= 60 && s % 60 == 0 => (s / 60, "minute"),
        s => (s, "second"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ulid::Ulid;

    fn name_at(t: SystemTime) -> String {
        OffloadFileName::with_ulid("list", Ulid::from_datetime(t)).to_string()
    }

    #[test]
    fn every_kind_of_miss_reads_the_same_apart_from_the_argument() {
        let access = Access::new("/srv/lro");
        let alice = Principal::new("alice");
        let texts: Vec<String> = ["", "/etc/passwd", "atlatl-x.jsonl", "..", "a/b/"]
            .iter()
            .map(|p| {
                let e = access.check(&alice, p).unwrap_err();
                e.to_string().replace(&format!("{p:?}"), "<arg>")
            })
            .collect();
        assert!(texts.windows(2).all(|w| w[0] == w[1]), "{texts:?}");
        let grant = access.check(&alice, &name_at(SystemTime::now())).unwrap();
        for err in [
            ExtractError::NotFound { path: "x".into() },
            ExtractError::OutsideRoot {
                path: "x".into(),
                root: "/srv".into(),
            },
            ExtractError::BadRoot {
                root: "/srv".into(),
                source: std::io::ErrorKind::NotFound.into(),
            },
        ] {
            assert!(matches!(
                grant.conceal(&err),
                Some(AccessError::Unknown { .. })
            ));
        }
        assert_eq!(grant.conceal(&ExtractError::BadHeader("x".into())), None);
    }

    #[test]
    fn expiry_comes_from_the_name_alone() {
        let access = Access::new("/nonexistent").ttl(Duration::from_secs(60));
        let anon = Principal::anonymous();
        let now = SystemTime::now();
        let fresh = name_at(now - Duration::from_secs(30));
        let grant = access.check_at(&anon, &fresh, now).unwrap();
        assert_eq!(grant.root(), Path::new("/nonexistent"));
        let old = format!("/anywhere/{}", name_at(now - Duration::from_secs(61)));
        let err = access.check_at(&anon, &old, now).unwrap_err();
        assert!(matches!(err, AccessError::Expired { .. }));
        let text = err.to_string();
        assert!(text.contains("expire after 1 minute"), "{text}");
        assert!(text.contains("call the original tool again"), "{text}");
        // Without a TTL nothing expires.
        assert!(Access::new("/x").check_at(&anon, &old, now).is_ok());
    }

    #[test]
    fn lifetimes_read_naturally() {
        assert_eq!(lifetime(Duration::from_secs(3600)), "1 hour");
        assert_eq!(lifetime(Duration::from_secs(7200)), "2 hours");
        assert_eq!(lifetime(Duration::from_secs(5400)), "90 minutes");
        assert_eq!(lifetime(Duration::from_secs(45)), "45 seconds");
        assert_eq!(lifetime(Duration::from_secs(1)), "1 second");
    }
}
