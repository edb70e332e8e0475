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

/// The provenance of a test run on a small Linux machine, made with `rustc` by `command`.
pub(crate) fn provenance(rustc: &str, command: &str) -> crate::Provenance {
    crate::Provenance {
        machine: "test".into(),
        cores: 2,
        memory_bytes: 1 << 30,
        os: "linux".into(),
        commit: "abc".into(),
        date: "2026-11-30T00:00:00Z".into(),
        rustc: rustc.into(),
        command: command.into(),
        filesystem: "ext4".into(),
        engine_versions: Default::default(),
    }
}
