//! Natives that print values: `tojson`, `tostring`, `@tsv` and `@csv`,
//! numbers spelled as jq 1.6 spells them.

use jaq_core::{DataT, Exn, box_iter::box_once};
use jaq_json::Val;

use super::super::{convert::write_num, message::described, originals::NoOriginals, stop::JqData};

/// `tojson`: jq 1.6's text, where jaq's spells numbers its own way (`1e-5`
/// for `1e-05`). A string interpolation still takes jaq's.
pub(super) fn tojson_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(to_json(&cv.1))
}

/// `tostring`: a string as it is, anything else as `tojson` prints it.
pub(super) fn tostring_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    match cv.1 {
        s @ (Val::TStr(_) | Val::BStr(_)) => box_once(Ok(s)),
        other => box_once(to_json(&other)),
    }
}

pub(super) fn to_json<'a>(v: &Val) -> jaq_core::ValX<'a, Val> {
    let mut text = Vec::new();
    super::super::convert::write_json(&mut text, v, 0, usize::MAX, &NoOriginals)
        .map(|_| Val::utf8_str(text))
        .map_err(|e| Exn::from(jaq_core::Error::str(e)))
}

pub(super) fn tsv_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "tsv").map_err(Exn::from))
}

pub(super) fn csv_native<'a>(
    cv: jaq_core::Cv<'a, JqData>,
) -> jaq_core::ValXs<'a, <JqData as DataT>::V<'a>> {
    box_once(format_row(&cv.1, "csv").map_err(Exn::from))
}

/// jq's `@tsv` / `@csv` (not provided by jaq's libraries): an array of
/// scalars to one row. `@tsv` escapes `\\`, tab, newline, CR and NUL; `@csv`
/// quotes strings, doubling quotes (both write NUL as `\0`, as jq 1.6
/// does); null is empty.
pub(super) fn format_row(v: &Val, kind: &str) -> Result<Val, jaq_core::Error<Val>> {
    let Val::Arr(items) = v else {
        return Err(jaq_core::Error::str(format_args!(
            "{} cannot be {kind}-formatted, only array",
            described(v)
        )));
    };
    let mut row = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            row.push(if kind == "tsv" { b'\t' } else { b',' });
        }
        match item {
            Val::Null => {}
            Val::Bool(b) => row.extend_from_slice(if *b { b"true" } else { b"false" }),
            Val::Num(n) => write_num(&mut row, n),
            Val::TStr(s) | Val::BStr(s) if kind == "tsv" => {
                for &b in s.iter() {
                    match b {
                        b'\\' => row.extend_from_slice(b"\\\\"),
                        b'\t' => row.extend_from_slice(b"\\t"),
                        b'\n' => row.extend_from_slice(b"\\n"),
                        b'\r' => row.extend_from_slice(b"\\r"),
                        0 => row.extend_from_slice(b"\\0"),
                        b => row.push(b),
                    }
                }
            }
            Val::TStr(s) | Val::BStr(s) => {
                row.push(b'"');
                for &b in s.iter() {
                    match b {
                        b'"' => row.extend_from_slice(b"\"\""),
                        0 => row.extend_from_slice(b"\\0"),
                        b => row.push(b),
                    }
                }
                row.push(b'"');
            }
            other => {
                // jq 1.6 says csv for `@tsv` too.
                return Err(jaq_core::Error::str(format_args!(
                    "{} is not valid in a csv row",
                    described(other)
                )));
            }
        }
    }
    Ok(Val::utf8_str(row))
}

#[cfg(test)]
mod tests {
    use crate::jq::eval_values;
    use serde_json::json;

    #[test]
    fn numbers_in_text_are_jq_1_6_s() {
        // Each line as `jq -c` (jq 1.6) prints it; the formats as
        // `jq -c '@text, @sh, @html, (.[0] | @text, @sh)'` does.
        let input: serde_json::Value =
            serde_json::from_str("[0.00001, 1e20, 0.1, 3, -0.0, 12345678901234567890]").unwrap();
        let out = eval_values("tostring, (.[] | tostring), tojson, join(\",\")", &[input]).unwrap();
        let all = "1e-05,1e+20,0.1,3,-0,12345678901234567000";
        let mut want = vec![json!(format!("[{all}]"))];
        want.extend(all.split(',').map(|n| json!(n)));
        want.extend([json!(format!("[{all}]")), json!(all)]);
        assert_eq!(out, want);
        let out = eval_values(
            "@text, @sh, @html, (.[0] | @text, @sh)",
            &[json!([1e-5, "a'"])],
        );
        let text = r#"[1e-05,"a'"]"#;
        let sh = r#"1e-05 'a'\'''"#;
        let html = "[1e-05,&quot;a&apos;&quot;]";
        assert_eq!(
            out.unwrap(),
            [text, sh, html, "1e-05", "1e-05"].map(|s| json!(s))
        );
        let out = eval_values(r#"@text "a\(.)", @uri, @base64, @json"#, &[json!(1e-5)]);
        let want = ["a1e-05", "1e-05", "MWUtMDU=", "1e-05"];
        assert_eq!(out.unwrap(), want.map(|s| json!(s)));
        // `sort_by` runs its key on an array of one too, and fails as jq.
        assert!(eval_values("sort_by(-.n)", &[json!([{"n": "s"}])]).is_err());
    }
}
