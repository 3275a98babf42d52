//! Where records that pass through a filter unchanged came from, so their
//! original line is printed instead of a re-rendered value.

use std::rc::Rc;

use jaq_json::Val;

/// Where records that pass through a filter unchanged came from: their
/// original line is printed instead of re-rendering the value (which, for a
/// projected record, holds only some fields).
pub(crate) trait Originals {
    /// The original JSON text of `v`, when `v` is a record from the file.
    fn original(&self, v: &Val) -> Option<&[u8]>;
}

/// No record has an original line.
pub(crate) struct NoOriginals;

impl Originals for NoOriginals {
    fn original(&self, _: &Val) -> Option<&[u8]> {
        None
    }
}

/// The record being processed (non-slurp) and its line.
pub(super) struct OneOriginal<'a> {
    pub(super) record: &'a Val,
    pub(super) line: &'a [u8],
}

impl Originals for OneOriginal<'_> {
    fn original(&self, v: &Val) -> Option<&[u8]> {
        same_value(v, self.record).then_some(self.line)
    }
}

/// Every record of a slurped file, by the address of its object. The
/// records are kept alive for the whole evaluation, so an address can never
/// be reused by a new object.
#[derive(Default)]
pub(super) struct ManyOriginals {
    text: Vec<u8>,
    spans: std::collections::HashMap<usize, (usize, usize)>,
}

impl ManyOriginals {
    pub(super) fn add(&mut self, v: &Val, line: &[u8]) {
        if let Val::Obj(rc) = v {
            let start = self.text.len();
            self.text.extend_from_slice(line);
            self.spans.insert(obj_addr(rc), (start, line.len()));
        }
    }
}

impl Originals for ManyOriginals {
    fn original(&self, v: &Val) -> Option<&[u8]> {
        let Val::Obj(rc) = v else { return None };
        let (start, len) = *self.spans.get(&obj_addr(rc))?;
        Some(&self.text[start..start + len])
    }
}

fn obj_addr(rc: &Rc<jaq_json::Map>) -> usize {
    Rc::as_ptr(rc) as *const () as usize
}

fn same_value(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Obj(x), Val::Obj(y)) => Rc::ptr_eq(x, y),
        (Val::Arr(x), Val::Arr(y)) => Rc::ptr_eq(x, y),
        _ => false,
    }
}
