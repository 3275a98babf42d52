//! Whether a stored result holds what was written: what one read saw,
//! checked against the header's `count` and `bytes`.
//!
//! A reader checks during the read it makes anyway: a whole read counts
//! the record lines and bytes after the header line; a partial read (a
//! line window) compares the object's size, from the store's metadata,
//! before it. Nothing is read twice. A file from before `bytes` was
//! written is checked by its count alone, when read whole.
//!
//! ```
//! use lro_core::descriptor::{Detail, OffloadHeader};
//! use lro_core::integrity::{Seen, check};
//!
//! let mut header = OffloadHeader::new("list", None, 2, 10, Detail::Light);
//! header.bytes = Some(8);
//! // Two lines of 4 bytes after a header line of 100.
//! assert!(check(&header, Seen::whole(100, 108, 2)).is_ok());
//! // Cut at a line end: one record, and 4 bytes fewer.
//! let damage = check(&header, Seen::whole(100, 104, 1)).unwrap_err();
//! assert!(damage.to_string().contains("2 records"), "{damage}");
//! // A partial read compares the size alone.
//! assert!(check(&header, Seen::sized(100, 108)).is_ok());
//! assert!(check(&header, Seen::sized(100, 100)).is_err());
//! ```

use std::fmt;

use crate::descriptor::OffloadHeader;

/// What one read of a stored result saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Bytes of the header line, its newline included.
    header_len: u64,
    /// Bytes of the whole object.
    size: u64,
    /// Record lines after the header, when the whole object was read.
    records: Option<u64>,
}

impl Seen {
    /// A whole read: `size` bytes, of which the header line took
    /// `header_len`, and `records` lines after it.
    pub fn whole(header_len: u64, size: u64, records: u64) -> Self {
        Self {
            header_len,
            size,
            records: Some(records),
        }
    }

    /// A partial read: the header line took `header_len` bytes, and the
    /// store says the object has `size`.
    pub fn sized(header_len: u64, size: u64) -> Self {
        Self {
            header_len,
            size,
            records: None,
        }
    }
}

/// A stored result that does not hold what its header says was written:
/// cut short, grown, or a header alone. Its text is what the model reads
/// (no name: the caller adds the one it was given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damaged {
    said_records: u64,
    said_bytes: Option<u64>,
    seen: Seen,
}

impl fmt::Display for Damaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = self.seen.size.saturating_sub(self.seen.header_len);
        write!(
            f,
            "it is damaged: its header says {} records",
            self.said_records
        )?;
        if let Some(bytes) = self.said_bytes {
            write!(f, " in {bytes} bytes")?;
        }
        match self.seen.records {
            Some(n) => write!(f, ", and it holds {n} in {body} bytes")?,
            None => write!(f, ", and it holds {body} bytes of records")?,
        }
        f.write_str(". Nothing was read from it; call the original tool again")
    }
}

/// Whether what a read `seen` matches `header`.
///
/// # Errors
///
/// [`Damaged`] when the record count (a whole read) or the size (when the
/// header states one) differs.
pub fn check(header: &OffloadHeader, seen: Seen) -> Result<(), Damaged> {
    let said_records = header.count as u64;
    let size_differs = header
        .bytes
        .is_some_and(|bytes| seen.header_len.checked_add(bytes) != Some(seen.size));
    let count_differs = seen.records.is_some_and(|n| n != said_records);
    if size_differs || count_differs {
        return Err(Damaged {
            said_records,
            said_bytes: header.bytes,
            seen,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::descriptor::Detail;

    fn header(count: usize, bytes: Option<u64>) -> OffloadHeader {
        let mut h = OffloadHeader::new("list", None, count, 1, Detail::Light);
        h.bytes = bytes;
        h
    }

    #[test]
    fn a_cut_a_growth_and_a_header_alone_are_each_damage() {
        let h = header(500, Some(5000));
        assert!(check(&h, Seen::whole(50, 5050, 500)).is_ok());
        for seen in [
            Seen::whole(50, 150, 10),
            Seen::whole(50, 5080, 503),
            Seen::whole(50, 50, 0),
            Seen::sized(50, 50),
            // Same count, other bytes: a line changed length.
            Seen::whole(50, 5051, 500),
        ] {
            let err = check(&h, seen).unwrap_err().to_string();
            assert!(err.contains("500 records in 5000 bytes"), "{err}");
            assert!(err.contains("call the original tool again"), "{err}");
        }
    }

    #[test]
    fn a_file_from_before_bytes_is_checked_by_its_count_when_read_whole() {
        let h = header(3, None);
        assert!(check(&h, Seen::whole(50, 80, 3)).is_ok());
        assert!(check(&h, Seen::whole(50, 70, 2)).is_err());
        assert!(check(&h, Seen::sized(50, 1)).is_ok());
    }
}
