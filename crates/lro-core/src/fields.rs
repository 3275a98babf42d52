//! Names of the fields the layer adds to records it reshapes, which the
//! recipes and the descriptor name too. A leaf: `records` writes them,
//! `recipes` and `descriptor` read them, and none of the three imports
//! another for them (`lro-tidy`'s module graph).

/// The field that names the array a record of several arrays came from
/// (`"entities"`); see `records/arrays.rs`.
pub const ARRAY_FIELD: &str = "array";
