//! What an index needs that jaq's does not do as jq 1.6: `.[0]` fails on
//! an object (`_lro_keyed`), and `.[$k]` and a computed `.[f]` wherever jq
//! 1.6's fail (`_lro_keyed_by`: a number on an object, null on anything);
//! their `?` forms have nothing there; as a value, a path and an update;
//! and what an update or an assignment changes is made where it is missing
//! (`_lro_slot`): null becomes an object or an array, an array grows with
//! nulls to the index (`null | .[1] = 1` is `[null,1]`); and an object's
//! computed key must be a string (`_lro_key`).

use jaq_core::{Exn, Native, box_iter::box_once, native::v};
use jaq_json::Val;

use super::super::{
    message::{described, kind},
    stop::JqData,
};

/// `.[$k]` as a value and a path, jq 1.6's error where it has one; what
/// an update does is the caller's.
fn keyed_by_native() -> Native<JqData> {
    Native::<JqData>::new(|mut cv| {
        let k = cv.0.pop_var();
        box_once(keyed_by(cv.1, &k))
    })
    .with_paths(|mut cv| {
        let k = cv.0.pop_var();
        let (v, path) = cv.1;
        box_once(keyed_by(v, &k).map(|v| (v, path)))
    })
}

/// `.[$k]?` as a value and a path: nothing there where `.[$k]` fails.
fn keyed_by_opt_native() -> Native<JqData> {
    Native::<JqData>::new(|mut cv| {
        let k = cv.0.pop_var();
        match index_error(&cv.1, &k) {
            Some(_) => Box::new(std::iter::empty()),
            None => box_once(Ok(cv.1)),
        }
    })
    .with_paths(|mut cv| {
        let k = cv.0.pop_var();
        match index_error(&cv.1.0, &k) {
            Some(_) => Box::new(std::iter::empty()),
            None => box_once(Ok(cv.1)),
        }
    })
}

/// The index natives.
pub(super) fn natives() -> [jaq_core::native::Fun<JqData>; 8] {
    [
        (
            "_lro_keyed",
            v(0),
            Native::<JqData>::new(|cv| box_once(numbered(cv.1)))
                .with_paths(|cv| {
                    let (v, path) = cv.1;
                    box_once(numbered(v).map(|v| (v, path)))
                })
                .with_update(|cv, f| match numbered(cv.1) {
                    Ok(v) => f(v),
                    Err(e) => box_once(Err(e)),
                }),
        ),
        // `.[$k]` and `.[$k]?` (and a computed `.[f]`): jq 1.6's error
        // where it has one (`index_error`), nothing there with `?`.
        (
            "_lro_keyed_by",
            v(1),
            keyed_by_native().with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match keyed_by(cv.1, &k) {
                    Ok(v) => f(v),
                    Err(e) => box_once(Err(e)),
                }
            }),
        ),
        (
            "_lro_keyed_by_opt",
            v(1),
            keyed_by_opt_native().with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match index_error(&cv.1, &k) {
                    Some(_) => box_once(Ok(cv.1)),
                    None => f(cv.1),
                }
            }),
        ),
        // `.[0]?`: an object has nothing there, as a value, a path and an
        // update (which leaves it as it is).
        (
            "_lro_keyed_opt",
            v(0),
            Native::<JqData>::new(|cv| match cv.1 {
                Val::Obj(_) => Box::new(std::iter::empty()),
                v => box_once(Ok(v)),
            })
            .with_paths(|cv| match cv.1 {
                (Val::Obj(_), _) => Box::new(std::iter::empty()),
                vp => box_once(Ok(vp)),
            })
            .with_update(|cv, f| match cv.1 {
                o @ Val::Obj(_) => box_once(Ok(o)),
                v => f(v),
            }),
        ),
        // `_lro_slot($k) | .[$k]` in what an update changes: `.[$k]` made
        // where it is missing, as jq 1.6's `setpath` makes it; a value and a
        // path as `_lro_keyed_by`.
        (
            "_lro_slot",
            v(1),
            keyed_by_native().with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match slot(cv.1, &k) {
                    // A key deleted keeps the others in their order, as jq
                    // 1.6's (jaq's moves the last key into its place).
                    Ok(Slot::There(was @ Val::Obj(_))) => {
                        let keep = was.clone();
                        Box::new(f(was).map(move |y| y.map(|y| in_order(&keep, &k, y))))
                    }
                    Ok(Slot::There(v)) => f(v),
                    // An update that deleted the slot it made leaves the
                    // value as it was, as jq 1.6's `delpaths` does.
                    Ok(Slot::Made { made, was }) => {
                        Box::new(f(made.clone()).map(move |y| {
                            y.map(|y| if deleted(&made, &y) { was.clone() } else { y })
                        }))
                    }
                    Err(e) => box_once(Err(e)),
                }
            }),
        ),
        // `.[$k]?` in what an update changes: as `_lro_slot`, the value left
        // as it is where jq 1.6's would fail.
        (
            "_lro_slot_opt",
            v(1),
            keyed_by_opt_native().with_update(|mut cv, f| {
                let k = cv.0.pop_var();
                match slot(cv.1.clone(), &k) {
                    Ok(Slot::There(v)) => f(v),
                    Ok(Slot::Made { made, was }) => {
                        Box::new(f(made.clone()).map(move |y| {
                            y.map(|y| if deleted(&made, &y) { was.clone() } else { y })
                        }))
                    }
                    Err(_) => box_once(Ok(cv.1)),
                }
            }),
        ),
        // `delpaths($ps)` checks first what jq 1.6's would refuse to delete,
        // in its words; the input passes.
        (
            "_lro_deletable",
            v(1),
            Native::<JqData>::new(|mut cv| {
                let paths = cv.0.pop_var();
                let error = match &paths {
                    Val::Arr(ps) => ps.iter().find_map(|p| match p {
                        Val::Arr(p) => undeletable(&cv.1, p),
                        _ => None,
                    }),
                    _ => None,
                };
                match error {
                    Some(e) => box_once(Err(Exn::from(jaq_core::Error::str(e)))),
                    None => box_once(Ok(cv.1)),
                }
            }),
        ),
        // An object's computed key: a string, or jq 1.6's error.
        (
            "_lro_key",
            v(0),
            Native::<JqData>::new(|cv| match cv.1 {
                k @ (Val::TStr(_) | Val::BStr(_)) => box_once(Ok(k)),
                other => box_once(Err(Exn::from(jaq_core::Error::str(format_args!(
                    "Cannot use {} as object key",
                    described(&other)
                ))))),
            }),
        ),
    ]
}

/// What a number indexes, as jq 1.6 has it: an object fails (jaq's answers
/// null). An identity otherwise, as a value, a path and an update.
fn numbered<'a>(v: Val) -> Result<Val, Exn<'a, Val>> {
    match v {
        Val::Obj(_) => Err(Exn::from(jaq_core::Error::str(
            "Cannot index object with number",
        ))),
        v => Ok(v),
    }
}

/// The input of `.[$k]` (or of a computed `.[f]`): it passes where jq 1.6
/// indexes `v` by `k`, else jq 1.6's error.
fn keyed_by<'a>(v: Val, k: &Val) -> Result<Val, Exn<'a, Val>> {
    match index_error(&v, k) {
        Some(e) => Err(Exn::from(jaq_core::Error::str(e))),
        None => Ok(v),
    }
}

/// jq 1.6's error for `v | .[k]`, where its `jv_get` has none: an object
/// takes a string, an array a number, a slice object or an array, null
/// any of those; `.[null]` is an error where jaq answers null.
fn index_error(v: &Val, k: &Val) -> Option<String> {
    let string = matches!(k, Val::TStr(_) | Val::BStr(_));
    let fine = match v {
        Val::Obj(_) => string,
        Val::Arr(_) => matches!(k, Val::Num(_) | Val::Obj(_) | Val::Arr(_)),
        Val::Null => string || matches!(k, Val::Num(_) | Val::Obj(_)),
        _ => false,
    };
    (!fine).then(|| {
        let with = match k {
            Val::TStr(s) | Val::BStr(s) => format!("string \"{}\"", String::from_utf8_lossy(s)),
            k => kind(k).to_owned(),
        };
        format!("Cannot index {} with {with}", kind(v))
    })
}

/// Indices past this many elements are refused rather than made: jq 1.6
/// refuses past 536,870,911, whose nulls would take gigabytes here.
const MAX_MADE: f64 = 16_777_216.0;

/// Where `.[k]` of an update is.
enum Slot {
    /// In the value as it is.
    There(Val),
    /// In `made`, `was` with the slot made: an object for null, an array
    /// of nulls to the index for null or a shorter array.
    Made { made: Val, was: Val },
}

/// Where `.[k]` is for an update of `v`, or jq 1.6's error.
fn slot<'a>(v: Val, k: &Val) -> Result<Slot, Exn<'a, Val>> {
    let fail = |text: &str| Err(Exn::from(jaq_core::Error::str(text)));
    let string = matches!(k, Val::TStr(_) | Val::BStr(_));
    let len = match (&v, k) {
        (Val::Null, _) if string => {
            let made = Val::obj(Default::default());
            return Ok(Slot::Made { made, was: v });
        }
        (Val::Obj(_), _) if string => return Ok(Slot::There(v)),
        // A slice, `.[{"start": …}]`, is jaq's.
        (Val::Arr(_), Val::Obj(_)) => return Ok(Slot::There(v)),
        (Val::Null, Val::Num(_)) => 0,
        (Val::Arr(a), Val::Num(_)) => a.len(),
        (v, k) => {
            return match index_error(v, k) {
                Some(e) => fail(&e),
                None => Ok(Slot::There(v.clone())),
            };
        }
    };
    let Val::Num(n) = k else {
        unreachable!("the index of an array or null here is a number")
    };
    let i = super::f64_of(n).trunc();
    if i < -(len as f64) {
        return fail("Out of bounds negative array index");
    }
    if i < len as f64 {
        return Ok(Slot::There(v));
    }
    if i >= MAX_MADE {
        return fail("Array index too large");
    }
    let mut items: Vec<Val> = match &v {
        Val::Arr(a) => a.iter().cloned().collect(),
        _ => Vec::new(),
    };
    items.resize(i as usize + 1, Val::Null);
    Ok(Slot::Made {
        made: Val::Arr(items.into()),
        was: v,
    })
}

/// Whether the update of a made slot deleted it: the array one shorter,
/// the object still empty.
fn deleted(made: &Val, y: &Val) -> bool {
    match (made, y) {
        (Val::Arr(m), Val::Arr(y)) => y.len() + 1 == m.len(),
        (Val::Obj(m), Val::Obj(y)) => m.is_empty() && y.is_empty(),
        _ => false,
    }
}

/// `y`, an update of `was`'s key `k`; when it deleted `k`, `was` without
/// it, the other keys in their order.
fn in_order(was: &Val, k: &Val, y: Val) -> Val {
    match (was, &y) {
        (Val::Obj(o), Val::Obj(n)) if n.len() + 1 == o.len() && !n.contains_key(k) => {
            let mut o = (**o).clone();
            o.shift_remove(k);
            Val::obj(o)
        }
        _ => y,
    }
}

/// jq 1.6's error for deleting `path` from `t` (its `jv_dels`): a key of
/// the wrong kind for an array or object, anything from a scalar; on the
/// way there, what indexing would fail with; nothing below a null.
fn undeletable(t: &Val, path: &[Val]) -> Option<String> {
    let (k, rest) = path.split_first()?;
    if rest.is_empty() {
        return match (t, k) {
            (Val::Null, _)
            | (Val::Arr(_), Val::Num(_) | Val::Obj(_))
            | (Val::Obj(_), Val::TStr(_) | Val::BStr(_)) => None,
            (Val::Arr(_), k) => Some(format!("Cannot delete {} element of array", kind(k))),
            (Val::Obj(_), k) => Some(format!("Cannot delete {} field of object", kind(k))),
            (t, _) => Some(format!("Cannot delete fields from {}", kind(t))),
        };
    }
    if let Some(e) = index_error(t, k) {
        return Some(e);
    }
    let sub = match (t, k) {
        (Val::Obj(o), k) => o.get(k).cloned(),
        (Val::Arr(a), Val::Num(n)) => {
            let i = super::f64_of(n).trunc();
            let i = if i < 0.0 { i + a.len() as f64 } else { i };
            (i >= 0.0).then(|| a.get(i as usize).cloned()).flatten()
        }
        _ => None,
    };
    match sub {
        Some(sub) if !matches!(sub, Val::Null) => undeletable(&sub, rest),
        _ => None,
    }
}
