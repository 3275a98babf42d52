//! `group_by(.path) | map({name: .[0].path, count: length})` over raw
//! lines: one pass counts the records per key, keeping only the first
//! record's raw value of each group (the one `.[0]` reads after jq's
//! stable sort), never the records.

use std::{borrow::Cow, collections::HashMap, io::Read};

use super::key::{Key, key_of, raw_at};
use crate::{ExtractError, jq::Guard, jq::Lines, render};

/// One group: its key, the raw value of its first record (`None` for a
/// missing one, printed as null) and its size.
pub(super) struct Group {
    key: Key<'static>,
    pub(super) first: Option<Vec<u8>>,
    pub(super) count: usize,
}

/// Where each key's group is: jq's equality (numbers by value, strings by
/// text) as hash keys.
#[derive(Default)]
struct Index {
    scalars: [Option<usize>; 3],
    numbers: HashMap<u64, usize>,
    strings: HashMap<Vec<u8>, usize>,
}

impl Index {
    fn slot(&mut self, key: &Key<'_>) -> Option<&mut usize> {
        match key {
            Key::Null => self.scalars[0].as_mut(),
            Key::False => self.scalars[1].as_mut(),
            Key::True => self.scalars[2].as_mut(),
            Key::Num(x) => self.numbers.get_mut(&number_bits(*x)),
            Key::Str(_, s) => self.strings.get_mut(&**s),
        }
    }

    fn insert(&mut self, key: &Key<'_>, group: usize) {
        match key {
            Key::Null => self.scalars[0] = Some(group),
            Key::False => self.scalars[1] = Some(group),
            Key::True => self.scalars[2] = Some(group),
            Key::Num(x) => {
                self.numbers.insert(number_bits(*x), group);
            }
            Key::Str(_, s) => {
                self.strings.insert(s.to_vec(), group);
            }
        }
    }
}

/// The bits of `x`, with 0 and -0 (equal numbers) the same.
fn number_bits(x: f64) -> u64 {
    if x == 0.0 { 0 } else { x.to_bits() }
}

/// The groups of the records of `reader` by the key at `path`, in jq's
/// order; `Ok(None)` when jaq must decide.
pub(super) fn groups(
    reader: impl Read,
    path: &[String],
    guard: &Guard,
) -> Result<Option<Vec<Group>>, ExtractError> {
    let mut lines = Lines::new(reader, 2);
    let mut index = Index::default();
    let mut groups: Vec<Group> = Vec::new();
    while let Some((_, line)) = lines.next_line()? {
        if guard.cancelled() {
            return Err(super::cancelled());
        }
        // jaq leaves out and names a record jq cannot read, or may not.
        if crate::jq::too_deep(line) || crate::jq::high_surrogate(line) {
            return Ok(None);
        }
        let Some(raw) = raw_at(line, path) else {
            return Ok(None);
        };
        let Some(key) = key_of(raw) else {
            return Ok(None);
        };
        if let Some(&mut group) = index.slot(&key) {
            groups[group].count += 1;
            continue;
        }
        index.insert(&key, groups.len());
        groups.push(Group {
            key: owned(key),
            first: raw.map(<[u8]>::to_vec),
            count: 1,
        });
    }
    groups.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(Some(groups))
}

fn owned(key: Key<'_>) -> Key<'static> {
    match key {
        Key::Null => Key::Null,
        Key::False => Key::False,
        Key::True => Key::True,
        Key::Num(x) => Key::Num(x),
        Key::Str(head, s) => Key::Str(head, Cow::Owned(s.into_owned())),
    }
}

/// One output object: `{name: first value, count: n}` with the entries in
/// the filter's order, printed as jq prints it.
pub(super) fn render_group(group: &Group, entries: &[super::Entry]) -> Vec<u8> {
    let mut out = vec![b'{'];
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (name, value): (&str, Cow<'_, [u8]>) = match entry {
            super::Entry::First(name) => (
                name,
                match &group.first {
                    Some(raw) => crate::jq::canonical(raw),
                    None => Cow::Borrowed(b"null"),
                },
            ),
            super::Entry::Count(name) => (name, Cow::Owned(group.count.to_string().into_bytes())),
        };
        render::write_str(&mut out, name.as_bytes());
        out.push(b':');
        out.extend_from_slice(&value);
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurp::Entry;

    fn count(text: &str, path: &[&str]) -> Option<Vec<String>> {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        let entries = [Entry::First("k".into()), Entry::Count("count".into())];
        groups(text.as_bytes(), &path, &Guard::unbounded())
            .unwrap()
            .map(|gs| {
                gs.iter()
                    .map(|g| String::from_utf8(render_group(g, &entries)).unwrap())
                    .collect()
            })
    }

    #[test]
    fn groups_in_jq_order_with_the_first_value() {
        let text = "{\"k\":\"b\"}\n{\"k\":1.0}\n{}\n{\"k\":1}\n{\"k\":\"\\u0062\"}\n{\"k\":null}\n{\"k\":-0}\n{\"k\":0}\n{\"k\":false}";
        assert_eq!(
            count(text, &["k"]).unwrap(),
            [
                r#"{"k":null,"count":2}"#,
                r#"{"k":false,"count":1}"#,
                r#"{"k":-0,"count":2}"#,
                r#"{"k":1,"count":2}"#,
                r#"{"k":"b","count":2}"#,
            ]
        );
        assert_eq!(count("", &["k"]).unwrap(), Vec::<String>::new());
        assert!(count("{\"k\":{}}", &["k"]).is_none());
        assert!(count("{\"k\":1}\n2", &["k"]).is_none());
    }
}
