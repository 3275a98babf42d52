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
//!
//! An exact tokenizer costs far more than counting characters. [`Banded`]
//! runs it only when the fast estimate is close to the threshold it is
//! compared with ([`TokenEstimator::estimate_against`]); `Bpe` is the exact
//! o200k_base / cl100k_base count (feature `bpe`, on by default).
//!
//! ```
//! use lro_core::tokens::{Banded, ScriptAware, TokenEstimator};
//!
//! // A stand-in for a real tokenizer: one token per two characters.
//! let exact = |t: &str| t.len().div_ceil(2);
//! let banded = Banded::new(ScriptAware, exact).band(0.5);
//! let near = "x".repeat(400); // ~100 fast tokens: inside 100 ± 50%
//! assert_eq!(banded.estimate_against(&[&near], 100), 200);
//! let far = "x".repeat(4000); // ~1000 fast tokens: the fast estimate decides
//! assert_eq!(banded.estimate_against(&[&far], 100), 1000);
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

    /// Tokens for several texts taken together, for a comparison with
    /// `threshold`: an estimator may answer with a cheaper, rougher count
    /// where the text is clearly on one side of it (see [`Banded`]). The
    /// default is [`TokenEstimator::estimate_parts`].
    fn estimate_against(&self, parts: &[&str], threshold: usize) -> usize {
        let _ = threshold;
        self.estimate_parts(parts)
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

/// Default of [`Banded::band`]: ±50% around the threshold.
pub const DEFAULT_EXACT_BAND: f64 = 0.5;

/// A fast estimator, and an exact one that is run only where the fast
/// estimate is close enough to the threshold to be on the wrong side of it.
///
/// [`TokenEstimator::estimate_against`] takes the fast estimate and, when it
/// lies within `threshold × (1 ± band)`, returns the exact count instead.
/// Outside the band the exact estimator is never called, so results far from
/// the threshold cost what the fast estimate costs. [`TokenEstimator::estimate`]
/// and [`TokenEstimator::estimate_parts`] are exact: they measure small texts
/// (a descriptor, records up to a truncation budget) where exactness is cheap.
#[derive(Debug, Clone, Copy)]
pub struct Banded<F, E> {
    fast: F,
    exact: E,
    band: f64,
}

impl<F: TokenEstimator, E: TokenEstimator> Banded<F, E> {
    /// `exact` near the threshold, `fast` elsewhere.
    pub fn new(fast: F, exact: E) -> Self {
        Self {
            fast,
            exact,
            band: DEFAULT_EXACT_BAND,
        }
    }

    /// Sets the band as a fraction of the threshold: 0.5 runs the exact
    /// count for fast estimates from 50% to 150% of the threshold. Negative
    /// values and NaN are taken as 0. Defaults to 0.5.
    #[must_use]
    pub fn band(mut self, band: f64) -> Self {
        // `max` also turns NaN into 0.
        self.band = band.max(0.0);
        self
    }
}

impl<F: TokenEstimator, E: TokenEstimator> TokenEstimator for Banded<F, E> {
    fn estimate(&self, text: &str) -> usize {
        self.exact.estimate(text)
    }

    fn estimate_parts(&self, parts: &[&str]) -> usize {
        self.exact.estimate_parts(parts)
    }

    fn estimate_against(&self, parts: &[&str], threshold: usize) -> usize {
        let fast = self.fast.estimate_against(parts, threshold);
        let t = threshold as f64;
        if (fast as f64 - t).abs() <= self.band * t {
            self.exact.estimate_against(parts, threshold)
        } else {
            fast
        }
    }
}

/// Exact token counts with OpenAI's byte-pair encodings, from GitHub's
/// linear-time `bpe-openai` (feature `bpe`). The encodings are embedded in
/// the binary; each is deserialized once, on first use, and shared by every
/// caller.
///
/// ```
/// use lro_core::tokens::{Bpe, TokenEstimator};
///
/// assert_eq!(Bpe::O200k.estimate("Hello, world!"), 4);
/// // Common Chinese words are one token each, not one per character.
/// assert_eq!(Bpe::O200k.estimate("数据库连接超时错误，请检查网络配置。"), 10);
/// ```
#[cfg(feature = "bpe")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bpe {
    /// `o200k_base` (GPT-4o and later).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
}

#[cfg(feature = "bpe")]
impl Bpe {
    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Bpe::O200k => bpe_openai::o200k_base(),
            Bpe::Cl100k => bpe_openai::cl100k_base(),
        }
    }
}

#[cfg(feature = "bpe")]
impl TokenEstimator for Bpe {
    fn estimate(&self, text: &str) -> usize {
        self.tokenizer().count(text)
    }

    /// Parts are counted one by one (no joined copy): they are separate
    /// blocks to the model too.
    fn estimate_parts(&self, parts: &[&str]) -> usize {
        let tokenizer = self.tokenizer();
        parts.iter().map(|p| tokenizer.count(*p)).sum()
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
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

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

    /// An exact estimator that counts its calls: two tokens per character.
    fn counting() -> (
        Arc<AtomicUsize>,
        impl Fn(&str) -> usize + Clone + Send + Sync + 'static,
    ) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        (calls, move |t: &str| {
            seen.fetch_add(1, Ordering::Relaxed);
            2 * t.chars().count()
        })
    }

    #[test]
    fn outside_the_band_the_exact_estimator_is_never_called() {
        let (calls, exact) = counting();
        let banded = Banded::new(ScriptAware, exact);
        // Threshold 100, band ±50%: fast estimates 50..=150 go to the exact count.
        for fast in [0, 1, 49, 151, 1000] {
            let text = "abcd".repeat(fast);
            assert_eq!(banded.estimate_against(&[&text], 100), fast, "{fast}");
        }
        assert_eq!(calls.load(Ordering::Relaxed), 0);
        for fast in [50, 100, 150] {
            let text = "abcd".repeat(fast);
            assert_eq!(banded.estimate_against(&[&text], 100), 8 * fast, "{fast}");
        }
        assert_eq!(calls.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_band_is_configurable_and_plain_estimates_are_exact() {
        let (calls, exact) = counting();
        let text = "abcd".repeat(60);
        let with = |band| Banded::new(ScriptAware, exact.clone()).band(band);
        assert_eq!(with(0.0).estimate_against(&[&text], 100), 60);
        assert_eq!(with(0.4).estimate_against(&[&text], 100), 480);
        assert_eq!(with(-1.0).estimate_against(&[&text], 100), 60);
        assert_eq!(with(f64::NAN).estimate_against(&[&text], 100), 60);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        let off = with(0.0);
        // Small measurements (descriptor, truncation budget) are exact.
        assert_eq!(off.estimate("ab"), 4);
        assert_eq!(off.estimate_parts(&["ab", "c"]), 6);
    }

    #[test]
    fn built_in_estimators_ignore_the_threshold() {
        let text = "日本語 and English";
        for threshold in [0, 10, 10_000] {
            assert_eq!(
                ScriptAware.estimate_against(&[text], threshold),
                ScriptAware.estimate(text)
            );
            assert_eq!(().estimate_against(&[text], threshold), ().estimate(text));
        }
    }

    #[cfg(feature = "bpe")]
    #[test]
    fn bpe_counts_differ_from_the_heuristic_both_ways() {
        // Chinese: o200k merges common words, the heuristic counts each character.
        let zh = "数据库连接超时错误，请检查网络配置。";
        assert_eq!(
            (ScriptAware.estimate(zh), Bpe::O200k.estimate(zh)),
            (18, 10)
        );
        // Code: punctuation and digits cost far more than characters / 4.
        let code = "if (x[i] != y[j]) { z += (a[i] - b[j]) * 0.5; } // ok";
        assert_eq!(
            (ScriptAware.estimate(code), Bpe::O200k.estimate(code)),
            (14, 29)
        );
        // Japanese: cl100k has fewer CJK merges than o200k.
        let ja = "東京の天気は晴れです。明日は雨が降るでしょう。";
        assert_eq!(
            (Bpe::O200k.estimate(ja), Bpe::Cl100k.estimate(ja)),
            (17, 27)
        );
        assert_eq!(Bpe::O200k.estimate_parts(&[zh, code]), 10 + 29);
    }
}
