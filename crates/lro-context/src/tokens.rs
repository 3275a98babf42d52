//! Counting tokens: characters / 4, rounded up, as ReMe's `base` counter
//! and the LRO spec do, unless a caller plugs in an exact tokenizer.

use std::borrow::Cow;

use crate::Message;

/// Counts the tokens of a text. Implemented for closures, by
/// [`CharsPerToken`], the default, and by `()`, which counts as it does.
pub trait TokenCounter: Send + Sync {
    /// The tokens of `text`.
    fn count(&self, text: &str) -> u64;

    /// The tokens of `parts` taken together as one text. The default joins
    /// them; [`CharsPerToken`] counts without joining.
    fn count_parts(&self, parts: &[&str]) -> u64 {
        self.count(&parts.concat())
    }
}

/// Characters / 4, rounded up.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharsPerToken;

impl TokenCounter for CharsPerToken {
    fn count(&self, text: &str) -> u64 {
        self.count_parts(&[text])
    }

    fn count_parts(&self, parts: &[&str]) -> u64 {
        let chars: usize = parts.iter().map(|p| chars(p)).sum();
        (chars as u64).div_ceil(4)
    }
}

/// The characters of `text`: its bytes that start one.
fn chars(text: &str) -> usize {
    bytecount::num_chars(text.as_bytes())
}

/// Characters / 4, rounded up, as [`CharsPerToken`].
impl TokenCounter for () {
    fn count(&self, text: &str) -> u64 {
        CharsPerToken.count(text)
    }

    fn count_parts(&self, parts: &[&str]) -> u64 {
        CharsPerToken.count_parts(parts)
    }
}

impl<F> TokenCounter for F
where
    F: Fn(&str) -> u64 + Send + Sync,
{
    fn count(&self, text: &str) -> u64 {
        self(text)
    }
}

/// The tokens of a message, counted as ReMe's `base` counter does: its
/// content and reasoning text (tool-call arguments are not counted).
pub(crate) fn of_message(counter: &dyn TokenCounter, m: &Message) -> u64 {
    of_messages(counter, [m])
}

/// The tokens of some messages, counted over their texts together: ReMe
/// rounds the total once, not each message.
pub(crate) fn of_messages<'a>(
    counter: &dyn TokenCounter,
    ms: impl IntoIterator<Item = &'a Message>,
) -> u64 {
    let parts: Vec<[Cow<'_, str>; 2]> = ms.into_iter().map(Message::counted_parts).collect();
    let parts: Vec<&str> = parts.iter().flatten().map(|p| &**p).collect();
    counter.count_parts(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_over_four_rounded_up() {
        assert_eq!(CharsPerToken.count(""), 0);
        assert_eq!(CharsPerToken.count("abcde"), 2);
        assert_eq!(CharsPerToken.count("日本語です"), 2);
        let words = |t: &str| t.split_whitespace().count() as u64;
        assert_eq!(words.count("a b c"), 3);
        assert_eq!(().count("日本語です"), CharsPerToken.count("日本語です"));
    }

    #[test]
    fn characters_are_counted_as_rust_counts_them() {
        let mixed = "aé日😀\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}\n";
        for text in ["", "a", "é", mixed, &mixed.repeat(100), &"x".repeat(1000)] {
            for start in 0..text.len().min(40) {
                if let Some(tail) = text.get(start..) {
                    assert_eq!(chars(tail), tail.chars().count(), "{tail:?}");
                }
            }
        }
    }

    #[test]
    fn parts_count_as_their_joined_text() {
        let parts = ["abc", "", "日本", "de", "\n"];
        for counter in [&CharsPerToken as &dyn TokenCounter, &()] {
            assert_eq!(counter.count_parts(&parts), counter.count(&parts.concat()));
        }
        // A counter that is not additive sees the joined text.
        let words = |t: &str| t.split_whitespace().count() as u64;
        assert_eq!(words.count_parts(&["a b", "c d"]), 3);
    }
}
