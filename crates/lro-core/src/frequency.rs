//! The most frequent of a run of strings, with one tie rule for every
//! example value chosen from records (recipes and the worked example).

use std::collections::BTreeMap;

/// The most common item and how often it occurs; ties go to the
/// alphabetically first, so the choice is stable.
pub(crate) fn most_frequent<'a>(items: impl Iterator<Item = &'a str>) -> Option<(&'a str, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_the_alphabetically_first() {
        assert_eq!(
            most_frequent(["b", "a", "b", "a", "c"].into_iter()),
            Some(("a", 2))
        );
        assert_eq!(most_frequent(std::iter::empty()), None);
    }
}
