//! How long a name or a value the descriptor quotes may be.
//!
//! A recipe parameter or a worked example's value must stay exact (it is
//! run), so one longer than these limits is never chosen; a value that is
//! only read (a namespace in the summary, a result's heading) is cut, and
//! the cut marked with `…`. Either way no record's 7,000-character word or
//! 300-character key can blow up the descriptor.

/// Longest field name a recipe, the worked example or the line schema
/// spells out.
pub(crate) const MAX_KEY_CHARS: usize = 40;
/// Longest value a recipe parameter or the worked example quotes, and the
/// length a quoted text is cut to.
pub(crate) const MAX_VALUE_CHARS: usize = 40;

/// Whether a key is short enough to spell out.
pub(crate) fn short_key(key: &str) -> bool {
    key.chars().count() <= MAX_KEY_CHARS
}

/// Whether a value is short enough to quote whole.
pub(crate) fn short_value(value: &str) -> bool {
    value.chars().count() <= MAX_VALUE_CHARS
}

/// `text` cut to [`MAX_VALUE_CHARS`] characters, the cut marked with `…`.
pub(crate) fn cut(text: &str) -> String {
    if short_value(text) {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX_VALUE_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_and_marked() {
        assert_eq!(cut("short"), "short");
        let long = "é".repeat(100);
        let c = cut(&long);
        assert_eq!(c.chars().count(), MAX_VALUE_CHARS);
        assert!(c.ends_with('…'));
        assert!(short_key("id") && !short_key(&"k".repeat(MAX_KEY_CHARS + 1)));
    }
}
