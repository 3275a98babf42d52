//! Which backend a store URL selects: a local path or `file://` for the
//! local directory, `s3://BUCKET/PREFIX` for object storage. Any other
//! scheme is an error naming it.
//!
//! ```
//! use lro_store::StoreUrl;
//!
//! let s3: StoreUrl = "s3://results/lro/prod".parse().unwrap();
//! assert_eq!(s3, StoreUrl::S3 { bucket: "results".into(), prefix: "lro/prod".into() });
//! assert!(matches!("/var/lib/lro".parse::<StoreUrl>().unwrap(), StoreUrl::Local(_)));
//! assert!(matches!("file:///var/lib/lro".parse::<StoreUrl>().unwrap(), StoreUrl::Local(_)));
//! let err = "ftp://x/y".parse::<StoreUrl>().unwrap_err();
//! assert!(err.to_string().contains("`ftp`"), "{err}");
//! ```

use std::{fmt, path::PathBuf, str::FromStr};

use crate::StoreError;

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreUrl {
    /// A local directory (a path, or `file://` and an absolute path).
    Local(PathBuf),
    /// An S3 bucket and a key prefix inside it (empty for the bucket's root).
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix, without leading or trailing `/`.
        prefix: String,
    },
}

impl FromStr for StoreUrl {
    type Err = StoreError;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        let invalid = |reason| StoreError::InvalidUrl {
            url: url.to_owned(),
            reason,
        };
        let Some((scheme, rest)) = url.split_once("://") else {
            if url.is_empty() {
                return Err(invalid("empty"));
            }
            return Ok(StoreUrl::Local(PathBuf::from(url)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                if !rest.starts_with('/') {
                    return Err(invalid("a file:// URL needs an absolute path"));
                }
                Ok(StoreUrl::Local(PathBuf::from(rest)))
            }
            "s3" => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(invalid("no bucket: write s3://BUCKET/PREFIX"));
                }
                if bucket.contains(['@', ':', '?', '#']) {
                    return Err(invalid(
                        "credentials, ports and queries do not belong in the URL: use the AWS_* variables",
                    ));
                }
                let prefix = prefix.trim_matches('/');
                if !prefix.is_empty() {
                    crate::Key::new(prefix)
                        .map_err(|_| invalid("the prefix must be plain `/`-separated names"))?;
                }
                Ok(StoreUrl::S3 {
                    bucket: bucket.to_owned(),
                    prefix: prefix.to_owned(),
                })
            }
            _ => Err(StoreError::UnknownScheme {
                scheme: scheme.to_owned(),
                url: url.to_owned(),
            }),
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Local(path) => write!(f, "file://{}", path.display()),
            StoreUrl::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            StoreUrl::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_urls_keep_bucket_and_prefix() {
        let u: StoreUrl = "s3://b".parse().unwrap();
        assert_eq!(
            u,
            StoreUrl::S3 {
                bucket: "b".into(),
                prefix: String::new()
            }
        );
        assert_eq!(u.to_string(), "s3://b");
        let u: StoreUrl = "S3://b/x/y/".parse().unwrap();
        assert_eq!(u.to_string(), "s3://b/x/y");
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        for (url, says) in [
            ("", "empty"),
            ("s3:///p", "no bucket"),
            ("s3://key:secret@b/p", "AWS_"),
            ("s3://b/../p", "plain"),
            ("file://relative", "absolute"),
            ("gs://b/p", "unknown store scheme `gs`"),
        ] {
            let err = url.parse::<StoreUrl>().unwrap_err();
            assert!(err.to_string().contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn local_urls_round_trip() {
        let u: StoreUrl = "file:///tmp/x".parse().unwrap();
        assert_eq!(u, StoreUrl::Local(PathBuf::from("/tmp/x")));
        assert_eq!(u.to_string(), "file:///tmp/x");
    }
}
