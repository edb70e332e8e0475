//! The records of a KV-cache trace replay (`kvcache_trace`) as the trace charts and table
//! see them: each record's key design and lookup method (from its variant), and its
//! setting (tenants, capacity, threads, closed or open loop) from its `TraceStats`. A
//! record without stats (an engine that could not replay, say) takes the tenants and
//! capacity of its data set from the other records on it, and applies to every mode.

use std::cmp::Ordering;

use crate::format;
use crate::order;
use crate::results::{Record, Results};

/// The workload name of a trace replay.
pub(crate) const TRACE_WORKLOAD: &str = "kvcache_trace";

/// How the blocks of a request's chain become keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KeyDesign {
    /// `kv/<model>/<b0>/<b1>/...`: one segment per block, every prefix at a '/' a key.
    Path,
    /// A fixed 32-byte hash of the parent's key and the block id per block.
    Chained,
}

impl KeyDesign {
    /// The design's name, as the variants spell it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            KeyDesign::Path => "path",
            KeyDesign::Chained => "chained",
        }
    }
}

/// A variant split into its key design and lookup method: `path_predecessor_seek` is
/// the path design looked up by predecessor seeks. A variant of neither design gives
/// `None` and the whole variant as the method.
pub(crate) fn split_variant(variant: Option<&str>) -> (Option<KeyDesign>, &str) {
    let v = variant.unwrap_or("");
    for design in [KeyDesign::Path, KeyDesign::Chained] {
        if let Some(method) = v
            .strip_prefix(design.name())
            .and_then(|m| m.strip_prefix('_'))
        {
            return (Some(design), method);
        }
    }
    (None, v)
}

/// How requests were issued.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum LoopMode {
    /// Each request started when the previous one ended.
    Closed,
    /// Requests started at their (scaled) timestamps, at this many per second.
    Open(f64),
    /// Not recorded (a record without trace stats): applies to every mode.
    Unknown,
}

impl LoopMode {
    /// Closed loop first, beside the records whose mode is not known (mostly N/A
    /// records of closed-loop runs), then open loop by rate.
    fn rank(self) -> (u8, f64) {
        match self {
            LoopMode::Closed | LoopMode::Unknown => (0, 0.0),
            LoopMode::Open(rate) => (1, rate),
        }
    }

    /// "closed loop", "open loop at 2,000 requests/s", or "any" when not recorded.
    pub(crate) fn label(self) -> String {
        match self {
            LoopMode::Closed => "closed loop".to_string(),
            LoopMode::Open(rate) => format!(
                "open loop at {} requests/s",
                format::thousands(rate.max(0.0).round() as u64)
            ),
            LoopMode::Unknown => "any".to_string(),
        }
    }
}

/// What the hit rate depends on: the tenants replayed and the index capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Tenants replayed at once.
    pub tenants: u32,
    /// Capacity as a percentage of the distinct blocks; `None`: unlimited.
    pub capacity_percent: Option<u32>,
}

impl Shape {
    /// Fewer tenants first, then the smallest capacity, unlimited last.
    pub(crate) fn cmp(&self, other: &Shape) -> Ordering {
        let key = |s: &Shape| (s.tenants, s.capacity_percent.unwrap_or(u32::MAX));
        key(self).cmp(&key(other))
    }
}

/// "10 %" or "unlimited".
pub(crate) fn capacity_label(capacity_percent: Option<u32>) -> String {
    match capacity_percent {
        Some(p) => format!("{p} %"),
        None => "unlimited".to_string(),
    }
}

/// "1 tenant", "4 tenants".
pub(crate) fn tenants_label(tenants: u32) -> String {
    match tenants {
        1 => "1 tenant".to_string(),
        n => format!("{n} tenants"),
    }
}

/// "1 thread", "8 threads".
pub(crate) fn threads_label(threads: u32) -> String {
    match threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    }
}

/// One replay's setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Setting {
    /// Tenants and capacity.
    pub shape: Shape,
    /// Client threads.
    pub threads: u32,
    /// Closed or open loop.
    pub mode: LoopMode,
}

impl Setting {
    /// By shape, then threads, then mode (closed loop first).
    pub(crate) fn cmp(&self, other: &Setting) -> Ordering {
        self.shape
            .cmp(&other.shape)
            .then_with(|| self.threads.cmp(&other.threads))
            .then_with(|| {
                let (a, b) = (self.mode.rank(), other.mode.rank());
                a.0.cmp(&b.0).then_with(|| a.1.total_cmp(&b.1))
            })
    }

    /// Whether a record of setting `self` holds for `other`: the same shape and threads,
    /// and the same mode unless `self`'s was not recorded.
    pub(crate) fn covers(&self, other: &Setting) -> bool {
        self.shape == other.shape
            && self.threads == other.threads
            && (self.mode == LoopMode::Unknown || self.mode == other.mode)
    }

    /// "4 tenants · capacity 10 % · 1 thread · closed loop".
    pub(crate) fn label(&self) -> String {
        let mut s = format!(
            "{} · capacity {} · {}",
            tenants_label(self.shape.tenants),
            capacity_label(self.shape.capacity_percent),
            threads_label(self.threads)
        );
        if self.mode != LoopMode::Unknown {
            s.push_str(" · ");
            s.push_str(&self.mode.label());
        }
        s
    }
}

/// A trace record with its setting (`None`: no record on its data set says its tenants
/// and capacity).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TraceRecord<'a> {
    /// The record.
    pub record: &'a Record,
    /// Its setting.
    pub setting: Option<Setting>,
}

impl TraceRecord<'_> {
    /// Whether the record is a replay at `setting`.
    pub(crate) fn is_at(&self, setting: &Setting) -> bool {
        self.setting.is_some_and(|s| s.covers(setting))
    }
}

/// The setting a record's own stats give.
fn own_setting(r: &Record) -> Option<Setting> {
    let t = r.trace.as_ref()?;
    Some(Setting {
        shape: Shape {
            tenants: t.tenants,
            capacity_percent: t.capacity_percent,
        },
        threads: r.threads,
        mode: t.open_loop_rate.map_or(LoopMode::Closed, LoopMode::Open),
    })
}

/// Every trace record with its setting, ordered by setting, engine and variant.
pub(crate) fn trace_records(results: &Results) -> Vec<TraceRecord<'_>> {
    let recs: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.workload == TRACE_WORKLOAD)
        .collect();
    let shape_of = |dataset: &str| {
        recs.iter()
            .filter(|r| r.dataset == dataset)
            .find_map(|r| own_setting(r).map(|s| s.shape))
    };
    let mut out: Vec<TraceRecord<'_>> = recs
        .iter()
        .map(|r| TraceRecord {
            record: r,
            setting: own_setting(r).or_else(|| {
                shape_of(&r.dataset).map(|shape| Setting {
                    shape,
                    threads: r.threads,
                    mode: LoopMode::Unknown,
                })
            }),
        })
        .collect();
    out.sort_by(|a, b| {
        let setting = match (a.setting, b.setting) {
            (Some(x), Some(y)) => x.cmp(&y),
            (x, y) => x.is_none().cmp(&y.is_none()),
        };
        setting
            .then_with(|| order::cmp_record(results, a.record, b.record))
            .then_with(|| a.record.threads.cmp(&b.record.threads))
    });
    out
}

/// The records at `setting`, one per engine, variant and thread count: a record without
/// stats covers every mode, so the N/A records of a closed-loop and an open-loop run
/// would otherwise both show; a record with its own stats is kept before one without.
pub(crate) fn at_setting<'a>(
    records: &[TraceRecord<'a>],
    setting: &Setting,
) -> Vec<TraceRecord<'a>> {
    let mut at: Vec<TraceRecord<'a>> = records
        .iter()
        .copied()
        .filter(|t| t.is_at(setting))
        .collect();
    at.sort_by_key(|t| t.record.trace.is_none());
    let mut out: Vec<TraceRecord<'a>> = Vec::new();
    for t in at {
        let same = |o: &TraceRecord<'a>| {
            o.record.engine == t.record.engine
                && o.record.variant == t.record.variant
                && o.record.threads == t.record.threads
        };
        if !out.iter().any(same) {
            out.push(t);
        }
    }
    out
}

/// The setting the charts feature: closed loop, 1 thread and a capacity limit where
/// such replays exist, then the most tenants and the smallest capacity (10 % before
/// 50 %). `None` when no record carries trace stats.
pub(crate) fn featured(records: &[TraceRecord<'_>]) -> Option<Setting> {
    records
        .iter()
        .filter(|t| t.record.trace.is_some())
        .filter_map(|t| t.setting)
        .min_by(|a, b| {
            let key = |s: &Setting| {
                (
                    s.mode != LoopMode::Closed,
                    s.threads != 1,
                    s.shape.capacity_percent.is_none(),
                    std::cmp::Reverse(s.shape.tenants),
                    s.shape.capacity_percent,
                    s.threads,
                )
            };
            key(a).cmp(&key(b)).then_with(|| a.cmp(b))
        })
}

/// Whether a record is one the cross-workload comparisons (aimeta ÷ LMDB, the ratios)
/// use: every record of the other workloads; of the trace, the 1-thread closed-loop
/// replays, so that an engine's "fastest" is never another setting's number.
pub(crate) fn is_headline_setting(r: &Record) -> bool {
    r.workload != TRACE_WORKLOAD
        || (r.threads == 1 && r.trace.as_ref().is_none_or(|t| t.open_loop_rate.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace_record as rec;
    use crate::testing::{trace_results, TestResult};

    #[test]
    fn variants_split_into_design_and_method() -> TestResult {
        let cases = [
            (
                Some("path_native_boundary"),
                Some(KeyDesign::Path),
                "native_boundary",
            ),
            (Some("chained_probe"), Some(KeyDesign::Chained), "probe"),
            (Some("pathological"), None, "pathological"),
            (None, None, ""),
        ];
        for (v, design, method) in cases {
            assert_eq!(split_variant(v), (design, method), "{v:?}");
        }
        Ok(())
    }

    #[test]
    fn records_without_stats_take_their_data_sets_shape() -> TestResult {
        let mut na = rec("lmdb", "path_bisect", Some(10), 1);
        na.trace = None;
        let results = trace_results(vec![
            rec("aimeta", "path_native", Some(10), 1),
            rec("aimeta", "path_native", None, 1),
            na,
        ]);
        let all = trace_records(&results);
        let shapes: Vec<Option<Option<u32>>> = all
            .iter()
            .map(|t| t.setting.map(|s| s.shape.capacity_percent))
            .collect();
        // Sorted by capacity, unlimited last; the N/A record sits with its data set.
        assert_eq!(shapes, vec![Some(Some(10)), Some(Some(10)), Some(None)]);
        let (ok, na) = (&all[0], &all[1]);
        assert_eq!(
            (ok.record.engine.as_str(), na.record.engine.as_str()),
            ("aimeta", "lmdb")
        );
        assert_eq!(na.setting.map(|s| s.mode), Some(LoopMode::Unknown));
        let cap10 = ok.setting.ok_or("setting")?;
        assert!(na.is_at(&cap10));
        let open = Setting {
            mode: LoopMode::Open(100.0),
            ..cap10
        };
        assert!(na.is_at(&open) && !ok.is_at(&open));
        // The N/A record of an open-loop run shows once beside the closed-loop one.
        let mut results = results.clone();
        let again = results.records[2].clone();
        results.records.push(again);
        let all = trace_records(&results);
        let engines: Vec<&str> = at_setting(&all, &cap10)
            .iter()
            .map(|t| t.record.engine.as_str())
            .collect();
        assert_eq!(engines, ["aimeta", "lmdb"]);
        Ok(())
    }

    #[test]
    fn the_featured_setting_is_closed_loop_one_thread_and_the_tightest_capacity() -> TestResult {
        let mut open = rec("aimeta", "path_native", Some(10), 1);
        if let Some(t) = open.trace.as_mut() {
            t.open_loop_rate = Some(500.0);
        }
        let mut more_tenants = rec("aimeta", "path_native", Some(50), 1);
        more_tenants.dataset = "mooncake_x4_cap50".into();
        if let Some(t) = more_tenants.trace.as_mut() {
            t.tenants = 4;
        }
        let results = trace_results(vec![
            open,
            rec("aimeta", "path_native", Some(10), 8),
            rec("aimeta", "path_native", None, 1),
            rec("aimeta", "path_native", Some(50), 1),
            rec("aimeta", "path_native", Some(10), 1),
            more_tenants,
        ]);
        let f = featured(&trace_records(&results)).ok_or("no featured setting")?;
        assert_eq!(
            f.label(),
            "4 tenants · capacity 50 % · 1 thread · closed loop"
        );
        let single = trace_results(vec![rec("aimeta", "chained_probe", None, 8)]);
        let f = featured(&trace_records(&single)).ok_or("no featured setting")?;
        assert_eq!(
            f.label(),
            "1 tenant · capacity unlimited · 8 threads · closed loop"
        );
        Ok(())
    }

    #[test]
    fn only_one_thread_closed_loop_replays_enter_the_headline() -> TestResult {
        let mut open = rec("aimeta", "path_native", Some(10), 1);
        if let Some(t) = open.trace.as_mut() {
            t.open_loop_rate = Some(500.0);
        }
        assert!(is_headline_setting(&rec(
            "aimeta",
            "path_native",
            Some(10),
            1
        )));
        assert!(!is_headline_setting(&rec(
            "aimeta",
            "path_native",
            Some(10),
            8
        )));
        assert!(!is_headline_setting(&open));
        let mut par = rec("aimeta", "path_native", Some(10), 8);
        par.workload = "manifest_get_par8".into();
        assert!(is_headline_setting(&par));
        Ok(())
    }
}
