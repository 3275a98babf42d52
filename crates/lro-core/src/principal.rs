//! Who is calling: the principal a result and a context entry belong to.
//!
//! A shared server checks authorization on every call: a result offloaded
//! for one principal is, for every other, a name that does not exist. The
//! principal comes from the transport (a bearer token, OAuth claims, mTLS),
//! never from the MCP session: a client that reconnects must still read its
//! results, and some clients open a session per call. Without
//! authentication every caller is [`Principal::anonymous`], and the result's
//! name, with its 80 random bits, is the capability.
//!
//! Only [`Principal::digest`] is ever written down (offload headers, store
//! keys) or logged: the name itself may be an e-mail address.
//!
//! ```
//! use lro_core::principal::{Principal, short_digest};
//!
//! let alice = Principal::new("alice@example.test");
//! assert_ne!(alice.digest(), Principal::anonymous().digest());
//! assert_eq!(alice.digest().len(), 16);
//! assert!(Principal::anonymous().is_anonymous());
//! // Each authenticated principal's results live in a folder of its own.
//! let root = std::path::Path::new("/tmp/lro");
//! assert_eq!(Principal::anonymous().dir(root), root);
//! assert_eq!(alice.dir(root), root.join(format!("p-{}", alice.digest())));
//! // A result's name is logged as a short digest, never in full.
//! assert_eq!(short_digest("atlatl-list-01K.jsonl").len(), 16);
//! ```

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::Arc,
};

use sha2::{Digest as _, Sha256};

/// The name of the principal of unauthenticated calls.
const ANONYMOUS: &str = "anonymous";

/// An authenticated caller, or the anonymous one. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The principal named `name`, as the transport authenticated it.
    pub fn new(name: impl AsRef<str>) -> Self {
        Self(Arc::from(name.as_ref()))
    }

    /// The principal of every unauthenticated call.
    pub fn anonymous() -> Self {
        Self::new(ANONYMOUS)
    }

    /// Whether this is [`Principal::anonymous`].
    pub fn is_anonymous(&self) -> bool {
        &*self.0 == ANONYMOUS
    }

    /// The name, as the transport gave it. Never log it: log
    /// [`Principal::digest`].
    pub fn name(&self) -> &str {
        &self.0
    }

    /// 16 hex digits of the SHA-256 of the name: what store keys and logs
    /// carry.
    pub fn digest(&self) -> String {
        short_digest(&self.0)
    }

    /// This principal's own folder under a store `root`: `root` itself for
    /// the anonymous principal (a single-user server keeps today's layout),
    /// `root/p-{digest}` for any other. A reader confined to it cannot name
    /// another principal's file.
    pub fn dir(&self, root: &Path) -> PathBuf {
        match self.folder() {
            Some(folder) => root.join(folder),
            None => root.to_owned(),
        }
    }

    /// The name of this principal's folder under a store root,
    /// `p-{digest}`; none for the anonymous principal, whose folder is the
    /// root itself. Quota ledgers key each area by it (`""` for the root).
    pub fn folder(&self) -> Option<String> {
        (!self.is_anonymous()).then(|| format!("{PRINCIPAL_DIR_PREFIX}{}", self.digest()))
    }
}

/// Whether `name`, an entry of a store root, names a principal's folder.
pub fn is_principal_folder(name: &str) -> bool {
    name.starts_with(PRINCIPAL_DIR_PREFIX)
}

/// How the folder of a principal other than the anonymous one starts.
pub const PRINCIPAL_DIR_PREFIX: &str = "p-";

impl Default for Principal {
    fn default() -> Self {
        Self::anonymous()
    }
}

/// Shows only the digest, so a principal never reaches a log by accident.
impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({})", self.digest())
    }
}

/// 16 hex digits of the SHA-256 of `text`: how a result's name or a
/// principal appears in logs and spans, enough to correlate and too little
/// to use.
pub fn short_digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_the_digest_only() {
        let p = Principal::new("secret-user");
        let shown = format!("{p:?}");
        assert!(!shown.contains("secret-user"), "{shown}");
        assert!(shown.contains(&p.digest()));
    }

    #[test]
    fn each_principal_has_a_folder_of_its_own() {
        let root = Path::new("/srv/lro");
        assert_eq!(Principal::anonymous().dir(root), root);
        let alice = Principal::new("alice");
        assert_eq!(alice.dir(root), root.join(format!("p-{}", alice.digest())));
        assert_ne!(alice.dir(root), Principal::new("bob").dir(root));
    }

    #[test]
    fn digests_are_stable_and_distinct() {
        assert_eq!(Principal::anonymous().digest(), short_digest("anonymous"));
        assert_ne!(short_digest("a"), short_digest("b"));
        assert_eq!(short_digest("a"), short_digest("a"));
        assert!(short_digest("x").chars().all(|c| c.is_ascii_hexdigit()));
    }
}
