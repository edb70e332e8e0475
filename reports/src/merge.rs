//! Several results files drawn together into one report (`ai-meta report --results a.json
//! --results b.json`): a run of every workload at one scale beside a separate, longer
//! run of the trace replay, say. Every record keeps knowing which file, and so which
//! run's provenance and settings, it came from, so that each chart names the scale,
//! budget and commit of the runs it draws. Files are refused rather than silently
//! reconciled: their schema versions must match, a measurement may come from one file
//! only, and a data set named in two files must be the same data set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::order;
use crate::results::{Dataset, DeviceFloor, Provenance, Record, ReportError, Results, RunConfig};

/// Why results files cannot be drawn together.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No results file was given.
    #[error("no results file given: pass --results FILE (once per file)")]
    NoFiles,
    /// The same file was given twice (each of its measurements would be in two files).
    #[error("{path} is given twice with --results: pass each results file once")]
    Repeated {
        /// The file, as given the second time.
        path: PathBuf,
    },
    /// Two files were written with different schema versions.
    #[error("{path} has schema_version {found} but {first} has {expected}: regenerate both with the same build's `ai-meta run`")]
    Schema {
        /// The first file given.
        first: PathBuf,
        /// Its schema version.
        expected: u32,
        /// The file that differs.
        path: PathBuf,
        /// Its schema version.
        found: u32,
    },
    /// The same measurement is in two files: which one to show is not for the report
    /// to guess.
    #[error("{what} is measured in both {first} and {second}: pass only one of them, or rerun one without that workload (`ai-meta run --workloads ...`)")]
    Overlap {
        /// The measurement: workload, data set, engine, variant and threads.
        what: String,
        /// The file that has it first.
        first: PathBuf,
        /// The other file that has it.
        second: PathBuf,
    },
    /// A data set of the same name differs between two files (the runs used different
    /// scales, seeds or budgets), so their records would not be comparable under one name.
    #[error("data set {name} differs between {first} ({first_shape}) and {second} ({second_shape}): merge only runs whose shared data sets match (same scale, seed and budget), or rerun one")]
    Dataset {
        /// The data set's name.
        name: String,
        /// The file that lists it first.
        first: PathBuf,
        /// What that file says of it.
        first_shape: String,
        /// The other file that lists it.
        second: PathBuf,
        /// What that file says of it.
        second_shape: String,
    },
}

/// One results file among those drawn together: its run's provenance and settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The file, as given (empty for results that were not read from a file).
    pub path: PathBuf,
    /// Where and how its run was made.
    pub provenance: Provenance,
    /// Its run's settings.
    pub config: RunConfig,
    /// The device's floor its run measured, if it did.
    pub device: Option<DeviceFloor>,
}

/// The records and data sets of one or more results files, each record with the file
/// it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Every file's records (in the order the files were given) and data sets; its
    /// provenance and config are the first file's, so never shown: a record's own are
    /// its source's.
    union: Results,
    /// The files, in the order given.
    sources: Vec<Source>,
    /// For each record of `union`, the index of its source.
    record_sources: Vec<usize>,
}

/// What identifies a measurement across files: workload, data set, engine, variant,
/// threads, and for trace replays the open-loop rate (a closed-loop and an open-loop
/// replay of the same setting are two measurements, as they are within one file).
type Key<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, u32, Option<u64>);

fn key(r: &Record) -> Key<'_> {
    let rate = r
        .trace
        .as_ref()
        .and_then(|t| t.open_loop_rate)
        .map(f64::to_bits);
    (
        &r.workload,
        &r.dataset,
        &r.engine,
        r.variant.as_deref(),
        r.threads,
        rate,
    )
}

fn describe(r: &Record) -> String {
    let variant = r
        .variant
        .as_deref()
        .map_or(String::new(), |v| format!(" {v}"));
    let threads = if r.threads == 1 { "thread" } else { "threads" };
    let mut s = format!(
        "{} on {} by {}{variant} with {} {threads}",
        r.workload, r.dataset, r.engine, r.threads
    );
    if let Some(rate) = r.trace.as_ref().and_then(|t| t.open_loop_rate) {
        s.push_str(&format!(" in open loop at {rate} requests/s"));
    }
    s
}

fn shape(d: &Dataset) -> String {
    format!(
        "family {}, {} keys, {} bytes, {} the budget, {}× the budget",
        d.family,
        d.keys,
        d.data_bytes,
        if d.fits_budget {
            "data fits"
        } else {
            "data beyond"
        },
        d.ratio_to_budget
    )
}

impl Merged {
    /// One results file on its own: renders exactly as the file always did.
    pub fn single(results: Results) -> Merged {
        let source = Source {
            path: PathBuf::new(),
            provenance: results.provenance.clone(),
            config: results.config.clone(),
            device: results.device.clone(),
        };
        Merged {
            record_sources: vec![0; results.records.len()],
            union: results,
            sources: vec![source],
        }
    }

    /// Draws `files` (each with the path it was read from) together, in the order
    /// given. Refuses different schema versions, a measurement in two files, and a data
    /// set name whose contents differ between files.
    pub fn merge(files: Vec<(PathBuf, Results)>) -> Result<Merged, MergeError> {
        let mut files = files.into_iter();
        let Some((first_path, first)) = files.next() else {
            return Err(MergeError::NoFiles);
        };
        let mut merged = Merged::single(first);
        merged.sources[0].path = first_path;
        for (path, results) in files {
            merged.add(path, results)?;
        }
        Ok(merged)
    }

    /// Reads every file (see [`Results::load`]) and draws them together (see
    /// [`Merged::merge`]). Refuses a file given twice, under any name, before reading.
    pub fn load(paths: &[PathBuf]) -> Result<Merged, ReportError> {
        let same_file = |p: &PathBuf| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        let resolved: Vec<PathBuf> = paths.iter().map(same_file).collect();
        if let Some(i) = (1..paths.len()).find(|&i| resolved[..i].contains(&resolved[i])) {
            return Err(MergeError::Repeated {
                path: paths[i].clone(),
            }
            .into());
        }
        let files = paths
            .iter()
            .map(|p| Ok((p.clone(), Results::load(p)?)))
            .collect::<Result<Vec<_>, ReportError>>()?;
        Ok(Merged::merge(files)?)
    }

    fn add(&mut self, path: PathBuf, results: Results) -> Result<(), MergeError> {
        let first = &self.sources[0].path;
        if results.schema_version != self.union.schema_version {
            return Err(MergeError::Schema {
                first: first.clone(),
                expected: self.union.schema_version,
                path,
                found: results.schema_version,
            });
        }
        let measured: BTreeMap<Key<'_>, usize> = self
            .union
            .records
            .iter()
            .zip(&self.record_sources)
            .map(|(r, s)| (key(r), *s))
            .collect();
        if let Some((r, s)) = results
            .records
            .iter()
            .find_map(|r| measured.get(&key(r)).map(|s| (r, *s)))
        {
            return Err(MergeError::Overlap {
                what: describe(r),
                first: self.sources[s].path.clone(),
                second: path,
            });
        }
        let mut new_datasets = Vec::new();
        for d in &results.datasets {
            match self.union.dataset(&d.name) {
                Some(old) if old == d => {}
                Some(old) => {
                    let owner = self.dataset_source(&d.name);
                    return Err(MergeError::Dataset {
                        name: d.name.clone(),
                        first: self.sources[owner].path.clone(),
                        first_shape: shape(old),
                        second: path,
                        second_shape: shape(d),
                    });
                }
                None if new_datasets.iter().any(|n: &Dataset| n.name == d.name) => {}
                None => new_datasets.push(d.clone()),
            }
        }
        let index = self.sources.len();
        self.sources.push(Source {
            path,
            provenance: results.provenance,
            config: results.config,
            device: results.device,
        });
        self.union.datasets.extend(new_datasets);
        self.record_sources
            .extend(std::iter::repeat_n(index, results.records.len()));
        self.union.records.extend(results.records);
        Ok(())
    }

    /// The first source listing data set `name` (or whose records use it).
    fn dataset_source(&self, name: &str) -> usize {
        self.union
            .records
            .iter()
            .zip(&self.record_sources)
            .find(|(r, _)| r.dataset == name)
            .map_or(0, |(_, s)| *s)
    }

    /// Every record and data set. Its provenance and config are the first file's:
    /// show a record's own through [`Merged::source_of`].
    pub fn results(&self) -> &Results {
        &self.union
    }

    /// The files, in the order given.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The source of the record at `index` in `results().records`.
    pub fn source_of(&self, index: usize) -> Option<&Source> {
        self.record_sources.get(index).map(|s| &self.sources[*s])
    }

    /// The index (in `sources()`) of the source of the record at `index`.
    pub(crate) fn source_index(&self, index: usize) -> Option<usize> {
        self.record_sources.get(index).copied()
    }

    /// The same files without the records of the sources `drop` accepts (every source
    /// stays listed, so indices keep their meaning), unless that would leave no record:
    /// then all of them.
    pub(crate) fn without(&self, drop: impl Fn(&Source) -> bool) -> Merged {
        let keep: Vec<bool> = self
            .record_sources
            .iter()
            .map(|s| !drop(&self.sources[*s]))
            .collect();
        if !keep.contains(&true) {
            return self.clone();
        }
        let mut out = self.clone();
        let mut kept = keep.iter();
        out.union.records.retain(|_| *kept.next().unwrap_or(&false));
        let mut kept = keep.iter();
        out.record_sources
            .retain(|_| *kept.next().unwrap_or(&false));
        out
    }

    /// The indices of the sources that hold a record `pick` accepts, in the order given.
    pub(crate) fn sources_of(&self, pick: impl Fn(&Record) -> bool) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .union
            .records
            .iter()
            .zip(&self.record_sources)
            .filter(|(r, _)| pick(r))
            .map(|(_, s)| *s)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The workloads of source `source` that `pick` accepts, in presentation order.
    pub(crate) fn workloads_of(&self, source: usize, pick: impl Fn(&Record) -> bool) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .union
            .records
            .iter()
            .zip(&self.record_sources)
            .filter(|(r, s)| **s == source && pick(r))
            .map(|(r, _)| r.workload.as_str())
            .collect();
        out.sort_by(|a, b| order::cmp_workload(a, b));
        out.dedup();
        out
    }
}

/// The path a message names for a source.
pub(crate) fn display_path(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        "results".to_string()
    } else {
        path.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{trace_record, trace_results, TestResult};
    use crate::SCHEMA_VERSION;

    fn manifest(engine: &str, dataset: &str) -> Record {
        let mut r = trace_record(engine, "paged", Some(10), 1);
        r.workload = "manifest_scan".into();
        r.dataset = dataset.into();
        r.trace = None;
        r
    }

    /// An all-workloads run at seed scale, and a trace-only run at quick scale.
    fn two_runs() -> (Results, Results) {
        let mut seed = trace_results(vec![
            manifest("aimeta", "manifest_fits"),
            manifest("lmdb", "manifest_fits"),
        ]);
        seed.datasets[0].family = "manifest".into();
        seed.config.scale = "seed".into();
        seed.provenance.commit = "aaaa111".into();
        let mut trace = trace_results(vec![
            trace_record("aimeta", "path_native", Some(10), 1),
            trace_record("lmdb", "chained_probe", Some(10), 1),
        ]);
        trace.config.scale = "quick".into();
        trace.config.budget_bytes = 256 << 20;
        trace.provenance.commit = "bbbb222".into();
        (seed, trace)
    }

    #[test]
    fn a_disjoint_merge_keeps_every_record_with_its_own_run() -> TestResult {
        let (seed, trace) = two_runs();
        let merged = Merged::merge(vec![
            ("seed.json".into(), seed.clone()),
            ("trace.json".into(), trace.clone()),
        ])
        .map_err(|e| e.to_string())?;
        let all = merged.results();
        assert_eq!(all.records.len(), 4);
        assert_eq!(all.datasets.len(), 2);
        for (i, r) in all.records.iter().enumerate() {
            let source = merged.source_of(i).ok_or("a record without a source")?;
            let (path, scale, commit) = if r.workload == "manifest_scan" {
                ("seed.json", "seed", "aaaa111")
            } else {
                ("trace.json", "quick", "bbbb222")
            };
            assert_eq!(source.path, Path::new(path));
            assert_eq!(source.config.scale, scale);
            assert_eq!(source.provenance.commit, commit);
        }
        assert_eq!(merged.source_of(4), None);
        assert_eq!(merged.sources_of(|r| r.workload == "kvcache_trace"), [1]);
        assert_eq!(merged.sources_of(|_| true), [0, 1]);
        assert_eq!(merged.workloads_of(0, |_| true), ["manifest_scan"]);
        assert_eq!(merged.workloads_of(1, |_| true), ["kvcache_trace"]);
        // The same data set in both files, identical, is listed once.
        let mut shared = trace.clone();
        shared.datasets.extend(seed.datasets.clone());
        let merged = Merged::merge(vec![("s".into(), seed), ("t".into(), shared)])
            .map_err(|e| e.to_string())?;
        assert_eq!(merged.results().datasets.len(), 2);
        Ok(())
    }

    #[test]
    fn a_measurement_in_two_files_is_refused_naming_both() -> TestResult {
        let (seed, mut trace) = two_runs();
        trace.records.push(manifest("lmdb", "manifest_fits"));
        let e = Merged::merge(vec![
            ("seed.json".into(), seed),
            ("trace.json".into(), trace),
        ]);
        let Err(e @ MergeError::Overlap { .. }) = e else {
            return Err(format!("not refused as an overlap: {e:?}").into());
        };
        let text = e.to_string();
        for needle in [
            "manifest_scan on manifest_fits by lmdb paged with 1 thread",
            "seed.json",
            "trace.json",
        ] {
            assert!(text.contains(needle), "{text}");
        }
        Ok(())
    }

    #[test]
    fn other_threads_or_an_open_loop_are_other_measurements() -> TestResult {
        let (_, trace) = two_runs();
        let mut more = trace_results(vec![trace_record("aimeta", "path_native", Some(10), 8)]);
        let mut open = trace_record("aimeta", "path_native", Some(10), 1);
        if let Some(t) = open.trace.as_mut() {
            t.open_loop_rate = Some(2_000.0);
        }
        more.records.push(open);
        let merged = Merged::merge(vec![("a".into(), trace), ("b".into(), more)])
            .map_err(|e| e.to_string())?;
        assert_eq!(merged.results().records.len(), 4);
        Ok(())
    }

    #[test]
    fn a_data_set_that_differs_is_refused() -> TestResult {
        let (seed, mut trace) = two_runs();
        let mut other = seed.datasets[0].clone();
        other.keys *= 10;
        trace.datasets.push(other);
        let e = Merged::merge(vec![
            ("seed.json".into(), seed),
            ("trace.json".into(), trace),
        ]);
        let Err(e @ MergeError::Dataset { .. }) = e else {
            return Err(format!("not refused as a data set conflict: {e:?}").into());
        };
        let text = e.to_string();
        assert!(
            text.starts_with(
                "data set manifest_fits differs between seed.json (family manifest, 182790 keys"
            ),
            "{text}"
        );
        assert!(
            text.contains("and trace.json (family manifest, 1827900 keys"),
            "{text}"
        );
        Ok(())
    }

    #[test]
    fn schema_versions_must_match_and_some_file_must_be_given() -> TestResult {
        let (seed, mut trace) = two_runs();
        trace.schema_version += 1;
        let e = Merged::merge(vec![
            ("seed.json".into(), seed),
            ("trace.json".into(), trace),
        ]);
        let Err(e @ MergeError::Schema { .. }) = e else {
            return Err(format!("not refused for its schema: {e:?}").into());
        };
        let want = format!(
            "trace.json has schema_version {} but seed.json has {SCHEMA_VERSION}",
            SCHEMA_VERSION + 1
        );
        assert!(e.to_string().starts_with(&want), "{e}");
        assert!(matches!(Merged::merge(vec![]), Err(MergeError::NoFiles)));
        let e = Merged::load(&[]).err().ok_or("no files accepted")?;
        assert_eq!(e.exit_code(), 2);
        Ok(())
    }

    #[test]
    fn a_file_given_twice_is_refused_under_any_name() -> TestResult {
        let dir = tempfile::tempdir()?;
        let (seed, trace) = two_runs();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        seed.save(&a)?;
        trace.save(&b)?;
        let again = dir.path().join(".").join("a.json");
        let e = Merged::load(&[a.clone(), b.clone(), again.clone()]);
        let Err(ReportError::Merge(MergeError::Repeated { path })) = e else {
            return Err(format!("not refused as repeated: {e:?}").into());
        };
        assert_eq!(path, again);
        let merged = Merged::load(&[a.clone(), b])?;
        assert_eq!(merged.sources()[0].path, a);
        assert_eq!(merged.results().records.len(), 4);
        Ok(())
    }
}
