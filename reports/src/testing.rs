//! Helpers the unit tests of every module share.

/// What a test returns: `?` on any error fails it.
pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Asserts that `text` contains every one of `needles`, naming the first one missing.
pub(crate) fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
}

/// Asserts that `f` turns each input of `cases` into its text.
pub(crate) fn assert_formats<T: Copy + std::fmt::Debug>(
    f: impl Fn(T) -> String,
    cases: &[(T, &str)],
) {
    for &(input, want) in cases {
        assert_eq!(f(input), want, "of {input:?}");
    }
}
