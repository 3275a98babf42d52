//! Token estimation.
//!
//! The spec's heuristic is characters / 4 for Latin-script text, applied to the
//! whole result set at once (never rounded per record). [`ScriptAware`], the
//! default, keeps that for Latin text and counts CJK characters as one token
//! each, which is much closer to what real tokenizers produce for them.
//!
//! ```
//! use lro_core::tokens::{ScriptAware, TokenEstimator};
//!
//! assert_eq!(().estimate("abcdefgh"), 2);
//! assert_eq!(ScriptAware.estimate("abcdefgh"), 2);
//! // Ten kanji are about ten tokens, not 2.5.
//! assert_eq!(ScriptAware.estimate("日本語のテキストです"), 10);
//! // Many parts are estimated as one text: 3 + 3 + 2 chars = 8 chars = 2 tokens.
//! assert_eq!(().estimate_parts(&["abc", "def", "gh"]), 2);
//! // A custom estimator is any closure.
//! let words = |t: &str| t.split_whitespace().count();
//! assert_eq!(words.estimate("one two three"), 3);
//! ```

/// Estimates how many tokens a text costs in the model's context.
pub trait TokenEstimator: Send + Sync + 'static {
    /// Tokens for one text.
    fn estimate(&self, text: &str) -> usize;

    /// Tokens for several texts taken together as one result set. The default
    /// joins them; the built-in estimators count without allocating.
    fn estimate_parts(&self, parts: &[&str]) -> usize {
        self.estimate(&parts.concat())
    }
}

/// The spec's heuristic: Unicode characters / 4, rounded up.
impl TokenEstimator for () {
    fn estimate(&self, text: &str) -> usize {
        char_count(text).div_ceil(4)
    }

    fn estimate_parts(&self, parts: &[&str]) -> usize {
        parts
            .iter()
            .map(|p| char_count(p))
            .sum::<usize>()
            .div_ceil(4)
    }
}

impl<F> TokenEstimator for F
where
    F: Fn(&str) -> usize + Send + Sync + 'static,
{
    fn estimate(&self, text: &str) -> usize {
        self(text)
    }
}

/// Characters / 4 for Latin and other alphabetic scripts, one token per CJK
/// character (Han, kana, Hangul, full-width forms). Identical to the spec's
/// heuristic on Latin text.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptAware;

impl ScriptAware {
    fn units(text: &str) -> (usize, usize) {
        if text.is_ascii() {
            return (text.len(), 0);
        }
        let mut other = 0;
        let mut cjk = 0;
        for c in text.chars() {
            if is_cjk(c) {
                cjk += 1;
            } else {
                other += 1;
            }
        }
        (other, cjk)
    }
}

impl TokenEstimator for ScriptAware {
    fn estimate(&self, text: &str) -> usize {
        let (other, cjk) = Self::units(text);
        other.div_ceil(4) + cjk
    }

    fn estimate_parts(&self, parts: &[&str]) -> usize {
        let (other, cjk) = parts.iter().fold((0, 0), |(o, c), p| {
            let (po, pc) = Self::units(p);
            (o + po, c + pc)
        });
        other.div_ceil(4) + cjk
    }
}

fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF      // Hangul Jamo
        | 0x2E80..=0x2FDF    // CJK radicals
        | 0x3000..=0x30FF    // CJK punctuation, Hiragana, Katakana
        | 0x3100..=0x31FF    // Bopomofo, Hangul compatibility, Katakana ext.
        | 0x3400..=0x4DBF    // CJK ext. A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF00..=0xFFEF    // Half- and full-width forms
        | 0x20000..=0x2FA1F  // CJK ext. B and beyond
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_is_not_rounded_per_part() {
        // Per-part rounding would give 1 + 1 + 1 = 3.
        assert_eq!(().estimate_parts(&["a", "b", "c"]), 1);
        assert_eq!(ScriptAware.estimate_parts(&["a", "b", "c"]), 1);
    }

    #[test]
    fn latin_is_chars_over_four() {
        let text = "é".repeat(40);
        assert_eq!(().estimate(&text), 10);
        assert_eq!(ScriptAware.estimate(&text), 10);
    }

    #[test]
    fn mixed_script_counts_cjk_per_char() {
        assert_eq!(ScriptAware.estimate("abcd漢字"), 1 + 2);
        assert_eq!(ScriptAware.estimate("한국어"), 3);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(().estimate(""), 0);
        assert_eq!(ScriptAware.estimate_parts(&[]), 0);
    }
}
