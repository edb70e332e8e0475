//! Reading a request trace: one JSON object a line (`timestamp`, `input_length`,
//! `output_length`, `hash_ids`), refused whole with the file, line and reason when any
//! line is not of that format, or when a block id follows a different parent than where
//! it first appeared (the trace must be a forest of block chains).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Arrival time, milliseconds from the start of the trace.
    pub timestamp_ms: u64,
    /// Prompt tokens.
    pub input_length: u64,
    /// Generated tokens.
    pub output_length: u64,
    /// The prompt as a chain of block ids, root first.
    pub blocks: Vec<u64>,
}

/// A whole trace, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// Requests in file order.
    pub requests: Vec<Request>,
}

impl Trace {
    /// Blocks requested over the whole trace (with repeats).
    pub fn blocks_requested(&self) -> u64 {
        self.requests.iter().map(|r| r.blocks.len() as u64).sum()
    }

    /// Distinct block ids.
    pub fn distinct_blocks(&self) -> usize {
        let mut ids: Vec<u64> = self
            .requests
            .iter()
            .flat_map(|r| r.blocks.iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }

    /// The longest chain, in blocks.
    pub fn longest_chain(&self) -> usize {
        self.requests
            .iter()
            .map(|r| r.blocks.len())
            .max()
            .unwrap_or(0)
    }
}

/// What is wrong with a trace line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// The line is not a JSON object.
    NotJson(String),
    /// A required field is absent.
    MissingField(&'static str),
    /// A field is not a non-negative integer (or, for `hash_ids`, not an array of them).
    NotAnInteger(&'static str),
    /// A request with no blocks.
    EmptyChain,
    /// A block id appears twice in one request's chain.
    RepeatedBlock {
        /// The block id.
        block: u64,
    },
    /// A block id follows another parent than where it first appeared.
    ParentChanged {
        /// The block id.
        block: u64,
        /// Its parent at its first appearance (None: it was a root).
        first: Option<u64>,
        /// Its parent on this line.
        now: Option<u64>,
    },
    /// The file holds no request.
    Empty,
}

impl std::fmt::Display for TraceErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parent = |p: &Option<u64>| p.map_or("none (a root)".to_string(), |p| p.to_string());
        match self {
            TraceErrorKind::NotJson(why) => write!(f, "not a JSON object: {why}"),
            TraceErrorKind::MissingField(name) => write!(f, "missing field `{name}`"),
            TraceErrorKind::NotAnInteger(name) => {
                write!(f, "field `{name}` must hold non-negative integers")
            }
            TraceErrorKind::EmptyChain => write!(f, "`hash_ids` is empty"),
            TraceErrorKind::RepeatedBlock { block } => {
                write!(f, "block {block} appears twice in one chain")
            }
            TraceErrorKind::ParentChanged { block, first, now } => write!(
                f,
                "block {block} follows parent {} here but {} where it first appeared",
                parent(now),
                parent(first)
            ),
            TraceErrorKind::Empty => write!(f, "no requests"),
        }
    }
}

/// A trace file that cannot be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("trace {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not of the trace format (see `workloads/traces/README.md`).
    #[error("trace {path}, line {line}: {kind}; expected one JSON object a line with integer timestamp, input_length, output_length and a hash_ids array (workloads/traces/README.md)")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0 for the whole file).
        line: usize,
        /// What is wrong.
        kind: TraceErrorKind,
    },
}

/// The trace committed with the repository (workloads/traces/), replayed by default.
pub fn committed_trace_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/mooncake_conversation_trace.jsonl")
}

/// Reads and checks the trace at `path`.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_trace(path, &text)
}

/// Parses and checks trace text; `path` names it in errors.
pub fn parse_trace(path: &Path, text: &str) -> Result<Trace, TraceError> {
    let fail = |line: usize, kind: TraceErrorKind| TraceError::Format {
        path: path.to_path_buf(),
        line,
        kind,
    };
    let mut parents: HashMap<u64, Option<u64>> = HashMap::new();
    let mut requests = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let request = parse_line(line).map_err(|kind| fail(number, kind))?;
        let mut seen = std::collections::HashSet::with_capacity(request.blocks.len());
        let mut parent = None;
        for &block in &request.blocks {
            if !seen.insert(block) {
                return Err(fail(number, TraceErrorKind::RepeatedBlock { block }));
            }
            let first = *parents.entry(block).or_insert(parent);
            if first != parent {
                return Err(fail(
                    number,
                    TraceErrorKind::ParentChanged {
                        block,
                        first,
                        now: parent,
                    },
                ));
            }
            parent = Some(block);
        }
        requests.push(request);
    }
    if requests.is_empty() {
        return Err(fail(0, TraceErrorKind::Empty));
    }
    Ok(Trace { requests })
}

/// One line's request, before the chain checks that need the lines before it.
fn parse_line(line: &str) -> Result<Request, TraceErrorKind> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| TraceErrorKind::NotJson(e.to_string()))?;
    let object = value
        .as_object()
        .ok_or_else(|| TraceErrorKind::NotJson("not an object".into()))?;
    let integer = |name: &'static str| -> Result<u64, TraceErrorKind> {
        object
            .get(name)
            .ok_or(TraceErrorKind::MissingField(name))?
            .as_u64()
            .ok_or(TraceErrorKind::NotAnInteger(name))
    };
    let ids = object
        .get("hash_ids")
        .ok_or(TraceErrorKind::MissingField("hash_ids"))?
        .as_array()
        .ok_or(TraceErrorKind::NotAnInteger("hash_ids"))?;
    let blocks = ids
        .iter()
        .map(|id| id.as_u64().ok_or(TraceErrorKind::NotAnInteger("hash_ids")))
        .collect::<Result<Vec<u64>, _>>()?;
    if blocks.is_empty() {
        return Err(TraceErrorKind::EmptyChain);
    }
    Ok(Request {
        timestamp_ms: integer("timestamp")?,
        input_length: integer("input_length")?,
        output_length: integer("output_length")?,
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(text: &str) -> (usize, TraceErrorKind) {
        match parse_trace(Path::new("t.jsonl"), text) {
            Err(TraceError::Format { line, kind, .. }) => (line, kind),
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    const GOOD: &str =
        r#"{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [0, 1]}"#;

    #[test]
    fn a_good_line_parses() -> Result<(), TraceError> {
        let t = parse_trace(Path::new("t.jsonl"), &format!("{GOOD}\n\n{GOOD}\n"))?;
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[0].blocks, vec![0, 1]);
        assert_eq!(
            (t.blocks_requested(), t.distinct_blocks(), t.longest_chain()),
            (4, 2, 2)
        );
        Ok(())
    }

    #[test]
    fn bad_lines_are_refused_with_line_and_reason() {
        let cases: [(&str, usize, &str); 7] = [
            ("{not json", 1, "not a JSON object"),
            (
                r#"{"timestamp": 0, "input_length": 1, "output_length": 1}"#,
                1,
                "missing field `hash_ids`",
            ),
            (
                r#"{"input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
                1,
                "missing field `timestamp`",
            ),
            (
                r#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1, "x"]}"#,
                1,
                "`hash_ids` must hold",
            ),
            (
                r#"{"timestamp": -3, "input_length": 1, "output_length": 1, "hash_ids": [1]}"#,
                1,
                "`timestamp` must hold",
            ),
            (
                r#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1.5]}"#,
                1,
                "`hash_ids` must hold",
            ),
            (
                r#"{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": []}"#,
                1,
                "is empty",
            ),
        ];
        for (text, line, needle) in cases {
            let (at, kind) = kind_of(text);
            assert_eq!(at, line, "{text}");
            assert!(kind.to_string().contains(needle), "{text}: {kind}");
        }
    }

    #[test]
    fn a_block_that_changes_parent_is_refused_on_its_line() {
        let text = format!(
            "{GOOD}\n{}\n",
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [7, 1]}"#
        );
        let (line, kind) = kind_of(&text);
        assert_eq!(line, 2);
        assert_eq!(
            kind,
            TraceErrorKind::ParentChanged {
                block: 1,
                first: Some(0),
                now: Some(7)
            }
        );
        // A root that later appears below another block changes parent too.
        let (_, kind) = kind_of(&format!(
            "{GOOD}\n{}",
            r#"{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1, 0]}"#
        ));
        assert!(matches!(
            kind,
            TraceErrorKind::ParentChanged { block: 1, .. }
        ));
    }

    #[test]
    fn an_empty_file_and_a_missing_file_are_errors() {
        assert_eq!(kind_of("\n\n"), (0, TraceErrorKind::Empty));
        let e = read_trace(Path::new("/nonexistent/trace.jsonl")).expect_err("missing file");
        assert!(e.to_string().contains("/nonexistent/trace.jsonl"), "{e}");
    }
}
