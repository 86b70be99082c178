//! "Did you mean": the known word closest to a mistyped one (`conections` → `connections`),
//! by edit distance, for unknown keys in scenario files and unknown scenario, preset and
//! protocol names.

/// The candidate closest to `word`, when it is close enough to be a typo of it.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// ` (did you mean `WORD`?)` when a candidate is close to `word`, else nothing: said after
/// the mistyped word, in an error that then lists every candidate.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates).map(|meant| format!(" (did you mean `{meant}`?)")).unwrap_or_default()
}

/// Insertions, deletions and substitutions that turn `a` into `b` (Levenshtein).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word_and_strangers_find_none() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let keys = ["connections", "duration", "warmup", "in-flight"];
        assert_eq!(closest("conections", keys), Some("connections"));
        assert_eq!(closest("duraton", keys), Some("duration"));
        assert_eq!(closest("inflight", keys), Some("in-flight"));
        assert_eq!(closest("colour", keys), None);
        assert_eq!(did_you_mean("ehco", ["echo", "churn"]), " (did you mean `echo`?)");
        assert_eq!(did_you_mean("zzzz", ["echo", "churn"]), "");
    }
}
