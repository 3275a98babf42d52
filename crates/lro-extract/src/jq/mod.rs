//! jq filters over offload files, run by jaq, stoppable at any step.
//!
//! # How a runaway query is stopped
//!
//! jaq evaluates a filter as a tree of iterators on the calling thread; it
//! has no cancellation hook. Two facts make one:
//!
//! * jaq looks up every term it evaluates through the context's data
//!   ([`jaq_core::data::HasLut::lut`]), which is ours ([`stop::GuardedData`]). That
//!   lookup checks a cancel flag (one relaxed atomic load) and the stack
//!   depth (one address comparison). When the flag is set, it unwinds the
//!   evaluation with [`std::panic::resume_unwind`] (which skips the panic
//!   hook, so nothing is printed); the worker catches the unwind, every
//!   value is dropped, and the thread ends. `repeat(.)`,
//!   `last(range(infinite))` via `reduce`-like natives calling back into
//!   terms, `def f: f; f`, `[limit(1e8; repeat(1))]`: all evaluate terms at
//!   every step, so all stop within microseconds of the flag.
//! * The one native generator that yields without evaluating terms is
//!   `range/3` (a Rust loop in jaq-core): it is replaced by our own `range`
//!   that checks the flag before every number, so `[range(1e9)]` and
//!   `last(range(infinite))` stop too.
//!
//! The limits: a single native operation on a huge value (sorting a
//! 10-million-element array, `"x" * 1e9`) runs to its end before the next
//! check, and dropping a value nested millions of levels deep recurses on
//! the worker's stack, which is sized from the timeout ([`worker_stack`]) so
//! that whatever a query can build in its time can also be dropped. Both
//! are bounded by what a query can build before its timeout; memory is
//! not capped separately (`[range(1e9)]` reaches ~2 GB in 5 s here). Unwinding needs `panic = "unwind"` (the
//! default); under `panic = "abort"` a timed-out worker is abandoned instead
//! and finishes on its own.
//!
//! Deep recursion (`def f: [f]; f`) is caught by the stack check and
//! reported as a runtime error instead of overflowing the stack.
//!
//! Not available to queries: `env`/`$ENV` (would leak the server's
//! environment), `input`/`inputs`, `halt`, module imports.
//!
//! # Where things are
//!
//! * `stop`: the cancel flag and stack budget checked at every term, the
//!   worker stack size.
//! * `compile`: compiling a filter, readable compile errors.
//! * `natives`: our custom jq functions.
//! * `job` and `lines`: running a filter over the records of a file.
//! * `originals`: the original lines of records that pass through unchanged.
//! * `message`: jaq's runtime errors in jq 1.6's words.
//! * `print`: how results are printed (`Render`), a leaf.
//! * `fromjson`: JSON text as jq 1.6's `fromjson` and `tonumber` read it
//!   (and `read`, records serde refuses); `double`: a number as jq holds it.
//! * `rewrite`: a filter rewritten so that jaq computes what jq 1.6 does.
//! * `emit` and `convert`: handing results to the collector, cut to fit;
//!   jaq values to JSON text and to `serde_json` values.

mod compile;
mod convert;
mod double;
mod emit;
mod fromjson;
mod job;
mod lines;
mod message;
mod natives;
mod originals;
mod print;
pub(crate) mod project;
mod read;
mod rewrite;
mod stop;

pub(crate) use compile::compile_with_vars;
pub(crate) use convert::{canonical, record_value};
pub(crate) use emit::{Elements, emit_parts, emit_whole};
pub(crate) use job::Job;
pub(crate) use lines::Lines;
pub(crate) use print::Render;
pub(crate) use read::{high_surrogate, parse as read_record, too_deep};
pub(crate) use stop::{Guard, Stop, WORKER_STACK, worker_stack};

#[cfg(test)]
pub(crate) use job::eval_values;

#[cfg(test)]
mod tests {
    use super::compile::compile;
    use super::*;

    #[test]
    fn module_example() {
        use serde_json::json;

        let out = eval_values("map(.a) | add", &[json!([{"a": 1}, {"a": 2}])]).unwrap();
        assert_eq!(out, [json!(3)]);
        assert!(compile("map(").is_err());
    }
}
