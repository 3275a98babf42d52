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
//! keys) or logged: the name itself may be an e-mail address. A server
//! names folders with a keyed digest ([`Principal::keyed`], HMAC-SHA256
//! under its [`FolderKey`]), so a folder, a store key or a presigned URL
//! does not tell whose it is to anyone who can guess names: without the
//! key, `p-2bd806c97f0e00af` is just "alice".
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
    sync::{Arc, OnceLock},
};

use sha2::{Digest as _, Sha256};

/// The name of the principal of unauthenticated calls.
const ANONYMOUS: &str = "anonymous";

/// An authenticated caller, or the anonymous one. Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>, Arc<str>);

impl Principal {
    /// The principal named `name`, as the transport authenticated it, its
    /// digest unkeyed (see [`Principal::keyed`]).
    pub fn new(name: impl AsRef<str>) -> Self {
        let name = name.as_ref();
        Self(Arc::from(name), Arc::from(short_digest(name)))
    }

    /// This principal with its digest, and so its folder, keyed by `key`
    /// (HMAC-SHA256, 16 hex digits as before). The anonymous principal has
    /// no folder and stays as it is.
    #[must_use]
    pub fn keyed(self, key: &FolderKey) -> Self {
        if self.is_anonymous() {
            return self;
        }
        let mac = key.mac(self.0.as_bytes());
        let digest: String = mac[..8].iter().map(|b| format!("{b:02x}")).collect();
        Self(self.0, Arc::from(digest))
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

    /// 16 hex digits of the SHA-256 of the name, or of its HMAC under the
    /// server's key once [`Principal::keyed`]: what folders, store keys and
    /// logs carry.
    pub fn digest(&self) -> String {
        self.1.to_string()
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

/// The server's secret that principal folders are named with
/// ([`Principal::keyed`]). Replicas of one store share it through their
/// configuration; a server with none configured generates one and keeps it
/// ([`FolderKey::kept_in`]). Never shown: `Debug` prints no byte.
#[derive(Clone)]
pub struct FolderKey(Arc<Source>);

enum Source {
    Secret(Box<[u8]>),
    /// Read, or made, on first use: a server that only ever sees the
    /// anonymous principal (stdio) leaves no key file behind.
    Kept(PathBuf, OnceLock<Box<[u8]>>),
}

impl fmt::Debug for FolderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FolderKey(..)")
    }
}

impl PartialEq for FolderKey {
    fn eq(&self, other: &Self) -> bool {
        self.secret() == other.secret()
    }
}

impl Eq for FolderKey {}

/// The name of the file a generated [`FolderKey`] is kept in.
pub const FOLDER_KEY_FILE: &str = ".principal-key";

impl FolderKey {
    /// The key `secret` (its text, trimmed), or none when it is empty.
    pub fn new(secret: &str) -> Option<Self> {
        let secret = secret.trim();
        (!secret.is_empty()).then(|| Self(Arc::new(Source::Secret(secret.as_bytes().into()))))
    }

    /// A new random key's text: 64 hex digits from the system's random
    /// source.
    ///
    /// # Errors
    ///
    /// When `/dev/urandom` cannot be read.
    pub fn generate() -> std::io::Result<String> {
        use std::io::Read as _;
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The key kept in `dir`'s [`FOLDER_KEY_FILE`], read on its first use,
    /// and made then (0600, published whole, never replaced) when there is
    /// none: every server on that directory names folders alike, across
    /// restarts. Should it be neither readable nor makeable, this process
    /// uses a random key of its own, with a warning.
    pub fn kept_in(dir: impl Into<PathBuf>) -> Self {
        Self(Arc::new(Source::Kept(dir.into(), OnceLock::new())))
    }

    /// [`FolderKey::kept_in`], read or made now.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or made, or holds no key.
    pub fn load_or_create(dir: &Path) -> std::io::Result<Self> {
        let secret = load_or_create(dir)?;
        Ok(Self(Arc::new(Source::Secret(secret))))
    }

    fn secret(&self) -> &[u8] {
        match &*self.0 {
            Source::Secret(secret) => secret,
            Source::Kept(dir, secret) => secret.get_or_init(|| {
                load_or_create(dir).unwrap_or_else(|err| {
                    tracing::warn!(err = %crate::error::chain(&err), "no principal key could be kept; this process uses one of its own");
                    Self::generate()
                        .unwrap_or_else(|_| format!("{:?}", std::time::SystemTime::now()))
                        .into_bytes()
                        .into()
                })
            }),
        }
    }

    /// HMAC-SHA256 of `message` under this key (RFC 2104).
    fn mac(&self, message: &[u8]) -> [u8; 32] {
        const BLOCK: usize = 64;
        let key = self.secret();
        let mut block = [0u8; BLOCK];
        if key.len() > BLOCK {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| block.map(|b| b ^ byte);
        let inner = Sha256::new()
            .chain_update(pad(0x36))
            .chain_update(message)
            .finalize();
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize()
            .into()
    }
}

/// The key text in `dir`'s [`FOLDER_KEY_FILE`], written first when there is
/// none: to a temp file, then linked into place, so no reader sees it half
/// written and of two servers starting at once one key wins.
fn load_or_create(dir: &Path) -> std::io::Result<Box<[u8]>> {
    use std::{io::Write as _, os::unix::fs::OpenOptionsExt as _};
    std::fs::create_dir_all(dir)?;
    let path = dir.join(FOLDER_KEY_FILE);
    if !path.exists() {
        let temp = dir.join(format!("{FOLDER_KEY_FILE}.{}.tmp", ulid::Ulid::new()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut file| file.write_all(FolderKey::generate()?.as_bytes()));
        let linked = written.and_then(|()| match std::fs::hard_link(&temp, &path) {
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
        let _ = std::fs::remove_file(&temp);
        linked?;
    }
    let text = std::fs::read_to_string(&path)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the principal key file is empty",
        ));
    }
    Ok(text.as_bytes().into())
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
    fn keyed_folders_are_hmac_sha256_and_differ_by_key() {
        // RFC 4231, test case 2.
        let key = FolderKey::new("Jefe").unwrap();
        let mac = key.mac(b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let alice = Principal::new("alice");
        let keyed = alice.clone().keyed(&key);
        assert_eq!(keyed.name(), "alice");
        assert_eq!(keyed.digest().len(), 16);
        assert_ne!(keyed.digest(), alice.digest());
        assert_ne!(
            keyed.folder(),
            alice
                .clone()
                .keyed(&FolderKey::new("other").unwrap())
                .folder()
        );
        assert!(keyed.folder().unwrap().starts_with("p-"));
        let anon = Principal::anonymous().keyed(&key);
        assert!(anon.is_anonymous() && anon.folder().is_none());
        assert!(!format!("{key:?}").contains("Jefe"));
    }

    #[test]
    fn a_generated_key_is_kept_and_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = FolderKey::load_or_create(dir.path()).unwrap();
        let b = FolderKey::load_or_create(dir.path()).unwrap();
        assert_eq!(a, b);
        let text = std::fs::read_to_string(dir.path().join(FOLDER_KEY_FILE)).unwrap();
        assert_eq!(text.len(), 64);
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join(FOLDER_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(FolderKey::new("  ").is_none());
        // Kept, it is made only when first used, and read back alike.
        let lazy = tempfile::tempdir().unwrap();
        let kept = FolderKey::kept_in(lazy.path());
        assert!(!lazy.path().join(FOLDER_KEY_FILE).exists());
        let keyed = Principal::new("alice").keyed(&kept);
        assert!(lazy.path().join(FOLDER_KEY_FILE).exists());
        let again = Principal::new("alice").keyed(&FolderKey::kept_in(lazy.path()));
        assert_eq!(keyed.folder(), again.folder());
        assert_eq!(
            std::fs::read_dir(lazy.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn digests_are_stable_and_distinct() {
        assert_eq!(Principal::anonymous().digest(), short_digest("anonymous"));
        assert_ne!(short_digest("a"), short_digest("b"));
        assert_eq!(short_digest("a"), short_digest("a"));
        assert!(short_digest("x").chars().all(|c| c.is_ascii_hexdigit()));
    }
}
