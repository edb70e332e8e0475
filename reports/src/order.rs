//! Stable orderings and fixed colours: every chart and table lists workloads, engines,
//! variants and data sets in the same order whatever the order of the records, and every
//! engine keeps one colour across all charts and both themes.

use std::cmp::Ordering;

use crate::results::{Dataset, Record, Results, Status};

/// Workloads in the order the report presents them: the trace replay first, since it is
/// the closest to real use.
const WORKLOADS: [&str; 18] = [
    "kvcache_trace",
    "manifest_scan",
    "manifest_get",
    "manifest_list",
    "manifest_range100",
    "manifest_count8000",
    "manifest_get_par8",
    "manifest_get_threads",
    "manifest_scan_threads",
    "manifest_cas",
    "manifest_ingest_get",
    "manifest_ingest_scan",
    "manifest_ingest_write",
    "sync_put",
    "kvchain_lpm",
    "kvchain_get",
    "chain_walk500",
    "bulk_load",
];

/// Engines in the order the report presents them, with their colours. The colours are
/// mid-tone (Tableau 10) so bars read on white and on a near-black background alike.
const ENGINES: [(&str, &str); 9] = [
    ("aimeta", "#f28e2b"),
    ("lmdb", "#b07aa1"),
    ("rocksdb", "#4e79a7"),
    ("sqlite", "#59a14f"),
    ("sqlite-tuned", "#8cd17d"),
    ("redb", "#e15759"),
    ("postgres", "#76b7b2"),
    ("etcd", "#9c755f"),
    ("etcd-1", "#d7b5a6"),
];

/// Colours for engines this build does not know, picked by a stable hash of the name.
const SPARE_COLOURS: [&str; 4] = ["#edc948", "#9c755f", "#ff9da7", "#bab0ac"];

/// Data set families in the order the report presents them.
const FAMILIES: [&str; 4] = ["kvcache_trace", "manifest", "kvchain", "chain_graph"];

/// Variants in the order the report presents them (no variant first).
const VARIANTS: [&str; 16] = [
    "paged",
    "full_frame",
    "offset_uniform",
    "offset_zipf",
    "native",
    "native_boundary",
    "native_full_frame",
    "predecessor_seek",
    "bisect",
    "bisect_full_frame",
    "path_native",
    "path_native_boundary",
    "path_predecessor_seek",
    "path_bisect",
    "chained_probe",
    "chained_bisect",
];

/// The fill colour of `engine`'s bars, the same in every chart and both themes.
pub fn engine_colour(engine: &str) -> &'static str {
    if let Some((_, c)) = ENGINES.iter().find(|(e, _)| *e == engine) {
        return c;
    }
    // FNV-1a: stable across builds and platforms, unlike the std hasher.
    let mut h: u32 = 0x811c_9dc5;
    for b in engine.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    SPARE_COLOURS[(h as usize) % SPARE_COLOURS.len()]
}

/// Rank of `name` in `known`, unknown names after all known ones (then by name).
fn rank(known: &[&str], name: &str) -> usize {
    known.iter().position(|k| *k == name).unwrap_or(known.len())
}

fn by_rank(known: &[&str], a: &str, b: &str) -> Ordering {
    rank(known, a).cmp(&rank(known, b)).then_with(|| a.cmp(b))
}

/// Orders workload names.
pub(crate) fn cmp_workload(a: &str, b: &str) -> Ordering {
    by_rank(&WORKLOADS, a, b)
}

/// Orders engine names.
pub(crate) fn cmp_engine(a: &str, b: &str) -> Ordering {
    let known: Vec<&str> = ENGINES.iter().map(|(e, _)| *e).collect();
    by_rank(&known, a, b)
}

/// Orders variants, `None` first.
pub(crate) fn cmp_variant(a: Option<&str>, b: Option<&str>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        // Unknown variants (thread counts t1 … t16, readers r1_alone_async …) with their
        // numbers compared as numbers.
        (Some(a), Some(b)) => rank(&VARIANTS, a)
            .cmp(&rank(&VARIANTS, b))
            .then_with(|| cmp_natural(a, b)),
    }
}

/// Whether the variant reproduces the seed report's bug (not a real mode of the engine).
pub(crate) fn is_bug_repro(variant: Option<&str>) -> bool {
    variant.is_some_and(|v| v.ends_with("full_frame"))
}

/// The shape a variant names, when it is one: a different operation mix that must be
/// compared like with like (a scan from a random offset, a thread count, the readers and
/// durability of an ingest phase), not a method to pick the fastest of (a longest-prefix
/// method, a trace design, this engine's paged mode). None for methods and plain forms.
pub(crate) fn shape_of(variant: Option<&str>) -> Option<&str> {
    let v = variant?;
    let threads = |s: &str| s.len() > 1 && s[1..].bytes().all(|b| b.is_ascii_digit());
    let shape = v.starts_with("offset_")
        || (v.starts_with('t') && threads(v))
        || (v.starts_with('r')
            && v[1..]
                .split('_')
                .next()
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())));
    shape.then_some(v)
}

/// A short description of a workload, for chart titles and table headings.
pub(crate) fn workload_description(workload: &str) -> Option<&'static str> {
    Some(match workload {
        "kvcache_trace" => "replay of a KV-cache request trace (lookup, insert, evict per request)",
        "manifest_scan" => "100 entries of a shard, with values",
        "manifest_get" => "get one manifest entry",
        "manifest_list" => "list 20 shard prefixes at '/'",
        "manifest_range100" => "read a range of 100 entries",
        "manifest_count8000" => "count 8,000 entries",
        "manifest_get_par8" => "gets from 8 threads at once",
        "manifest_get_threads" => "gets from 1 to 16 threads at once (throughput over all)",
        "manifest_scan_threads" => "scans from 1 to 16 threads at once (throughput over all)",
        "manifest_ingest_get" => {
            "gets by reader threads, alone and beside a writer appending shards"
        }
        "manifest_ingest_scan" => {
            "scans by reader threads, alone and beside a writer appending shards"
        }
        "manifest_ingest_write" => {
            "a writer appending shards in batches of 10,000 samples beside readers"
        }
        "sync_put" => "single puts, each committed with an fsync, by 1 or 8 writers",
        "manifest_cas" => "compare-and-swap one entry",
        "kvchain_lpm" => "longest stored prefix of a KV-cache chain query",
        "kvchain_get" => "get the answer of a chain query (the lookup's yardstick)",
        "chain_walk500" => "500 dependent gets along a chain graph",
        "bulk_load" => "load a data set (time per key)",
        _ => return None,
    })
}

/// What one operation of a workload is, for axis titles.
pub(crate) fn per_what(workload: &str) -> &'static str {
    match workload {
        "bulk_load" => "mean time per key loaded",
        "kvcache_trace" => "mean time per request",
        "manifest_get_par8" | "manifest_get_threads" | "manifest_scan_threads" => {
            "mean time per operation per thread"
        }
        _ => "mean time per operation",
    }
}

/// Whether the data set fits the cache budget: from the data set list, else from its
/// name (`…_fits` / `…_beyond`), else unknown.
pub(crate) fn fits(results: &Results, dataset: &str) -> Option<bool> {
    if let Some(d) = results.dataset(dataset) {
        return Some(d.fits_budget);
    }
    if dataset.contains("fits") {
        Some(true)
    } else if dataset.contains("beyond") {
        Some(false)
    } else {
        None
    }
}

/// Orders data set names: by family, data that fits the budget first, then by name.
pub(crate) fn cmp_dataset(results: &Results, a: &str, b: &str) -> Ordering {
    let family = |n: &str| {
        let f = results
            .dataset(n)
            .map(|d| d.family.clone())
            .unwrap_or_else(|| n.split('_').next().unwrap_or(n).to_string());
        (rank(&FAMILIES, &f), f)
    };
    let kind = |n: &str| match fits(results, n) {
        Some(true) => 0,
        Some(false) => 1,
        None => 2,
    };
    family(a)
        .cmp(&family(b))
        .then_with(|| kind(a).cmp(&kind(b)))
        .then_with(|| cmp_natural(a, b))
}

/// Orders names with their runs of digits compared as numbers, and a run of digits before
/// any other text: `x4` before `x16`, `cap10` before `cap50` before `capall`.
pub(crate) fn cmp_natural(a: &str, b: &str) -> Ordering {
    let chunks = |s: &str| -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, chunk)) if *d == digit => chunk.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    };
    let key = |(digit, chunk): &(bool, String)| {
        // Digits first (false < true), as numbers: by length once leading zeros are gone.
        let trimmed = chunk.trim_start_matches('0');
        (
            !digit,
            if *digit { trimmed.len() } else { 0 },
            trimmed.to_string(),
        )
    };
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let o = key(x).cmp(&key(y)).then_with(|| x.1.cmp(&y.1));
        if o != Ordering::Equal {
            return o;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// Orders records for presentation: workload, data set, engine, variant.
pub(crate) fn cmp_record(results: &Results, a: &Record, b: &Record) -> Ordering {
    cmp_workload(&a.workload, &b.workload)
        .then_with(|| cmp_dataset(results, &a.dataset, &b.dataset))
        .then_with(|| cmp_engine(&a.engine, &b.engine))
        .then_with(|| cmp_variant(a.variant.as_deref(), b.variant.as_deref()))
}

fn sorted_unique(mut v: Vec<&str>, cmp: impl Fn(&str, &str) -> Ordering) -> Vec<&str> {
    v.sort_by(|a, b| cmp(a, b));
    v.dedup();
    v
}

impl Record {
    /// The mean ns per operation, when the record holds a usable measurement.
    pub fn mean_ns(&self) -> Option<f64> {
        let m = self.ns_per_op.mean;
        (self.status == Status::Ok && m.is_finite() && m >= 0.0).then_some(m)
    }
}

impl Results {
    /// The data set called `name`, if listed.
    pub fn dataset(&self, name: &str) -> Option<&Dataset> {
        self.datasets.iter().find(|d| d.name == name)
    }

    /// The workloads that have records, in presentation order.
    pub fn workloads(&self) -> Vec<&str> {
        let v = self.records.iter().map(|r| r.workload.as_str()).collect();
        sorted_unique(v, cmp_workload)
    }

    /// The engines that have records, in presentation order.
    pub fn engines(&self) -> Vec<&str> {
        let v = self.records.iter().map(|r| r.engine.as_str()).collect();
        sorted_unique(v, cmp_engine)
    }

    /// The data sets `workload` ran on, in presentation order.
    pub fn datasets_of(&self, workload: &str) -> Vec<&str> {
        let v = self
            .records
            .iter()
            .filter(|r| r.workload == workload)
            .map(|r| r.dataset.as_str())
            .collect();
        sorted_unique(v, |a, b| cmp_dataset(self, a, b))
    }

    /// The records of `workload` on `dataset`, by engine then variant.
    pub fn records_of(&self, workload: &str, dataset: &str) -> Vec<&Record> {
        let mut v: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.workload == workload && r.dataset == dataset)
            .collect();
        v.sort_by(|a, b| cmp_record(self, a, b));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_told_from_methods() {
        for shape in [
            "offset_uniform",
            "offset_zipf",
            "t1",
            "t16",
            "r4_writer_sync",
            "r8_async",
        ] {
            assert_eq!(shape_of(Some(shape)), Some(shape), "{shape}");
        }
        for method in [
            "native",
            "bisect",
            "predecessor_seek",
            "paged",
            "path_native",
            "chained_bisect",
            "trace",
        ] {
            assert_eq!(shape_of(Some(method)), None, "{method}");
        }
        assert_eq!(shape_of(None), None);
    }
    use crate::testing::TestResult;

    #[test]
    fn colours_are_fixed_and_distinct() -> TestResult {
        assert_eq!(engine_colour("aimeta"), "#f28e2b");
        let mut known: Vec<&str> = ENGINES.iter().map(|(e, _)| engine_colour(e)).collect();
        known.sort_unstable();
        known.dedup();
        assert_eq!(known.len(), ENGINES.len());
        assert_eq!(engine_colour("newdb"), engine_colour("newdb"));
        assert!(SPARE_COLOURS.contains(&engine_colour("newdb")));
        Ok(())
    }

    #[test]
    fn orders_put_known_names_first() -> TestResult {
        assert_eq!(cmp_workload("manifest_scan", "bulk_load"), Ordering::Less);
        assert_eq!(cmp_workload("zzz", "bulk_load"), Ordering::Greater);
        assert_eq!(cmp_engine("aimeta", "lmdb"), Ordering::Less);
        assert_eq!(cmp_engine("postgres", "aaa"), Ordering::Less);
        assert_eq!(cmp_variant(None, Some("paged")), Ordering::Less);
        assert_eq!(cmp_variant(Some("native"), Some("bisect")), Ordering::Less);
        assert_eq!(
            cmp_variant(Some("path_bisect"), Some("chained_probe")),
            Ordering::Less
        );
        assert_eq!(cmp_variant(Some("t2"), Some("t16")), Ordering::Less);
        assert_eq!(cmp_variant(Some("offset_zipf"), Some("t1")), Ordering::Less);
        assert_eq!(
            cmp_workload("kvcache_trace", "manifest_scan"),
            Ordering::Less
        );
        Ok(())
    }

    #[test]
    fn data_set_names_order_their_numbers_as_numbers() -> TestResult {
        let mut names = [
            "mooncake_x16_cap10",
            "mooncake_x4_capall",
            "mooncake_x4_cap50",
            "mooncake_x4_cap10",
            "mooncake_x4_cap100",
        ];
        names.sort_by(|a, b| cmp_natural(a, b));
        let want = [
            "mooncake_x4_cap10",
            "mooncake_x4_cap50",
            "mooncake_x4_cap100",
            "mooncake_x4_capall",
            "mooncake_x16_cap10",
        ];
        assert_eq!(names, want);
        assert_eq!(
            cmp_natural("manifest_beyond", "manifest_fits"),
            Ordering::Less
        );
        assert_eq!(cmp_natural("x2_cap10", "x2_cap10"), Ordering::Equal);
        Ok(())
    }
}
