//! A number as jq 1.6 holds it, a leaf: both readers of JSON text build
//! their numbers with it (`read.rs` the records, `fromjson.rs` the text a
//! filter reads), and the natives their results.

use jaq_json::{Num, Val};

/// The largest integer a double holds exactly, with all below it.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// A number as jq 1.6 holds it: the double, as an integer where that is
/// exact and prints alike.
pub(crate) fn number(f: f64) -> Val {
    let negative_zero = f == 0.0 && f.is_sign_negative();
    if f.fract() == 0.0 && f.abs() <= EXACT && !negative_zero {
        Val::Num(Num::Int(f as isize))
    } else {
        Val::Num(Num::Float(f))
    }
}
