//! sync_put: small sync commits. 1 and 8 writer threads each commit single puts of new
//! keys with `Durability::Sync` (an fsync, or the engine's equivalent, per commit), so an
//! engine that groups concurrent commits into one sync shows it as commits per second
//! above one over the latency.

use std::time::Instant;

use aimeta_adapters::KvEngine;
use aimeta_reports::Record;
use hdrhistogram::Histogram;

use super::ingest_phase::{engine_err, join_all, record, wrong};
use super::measure::{histogram, latency};
use super::{base_record, Progress, RunError, RunOptions, Session, ThreadCount, Variant, Workload};

/// The writer counts measured, in order.
pub(crate) const THREADS: [ThreadCount; 2] = [ThreadCount::T1, ThreadCount::T8];

/// Where sync_put's keys live: after every manifest key (`ds/...`) and apart from them.
const PREFIX: &str = "sync_put/";

/// The puts of one measurement, to be read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Written {
    /// Writer threads.
    pub threads: ThreadCount,
    /// Puts each writer committed.
    pub per_writer: u64,
}

/// The key of put `i` of writer `writer` in the measurement at `threads`.
fn key(threads: ThreadCount, writer: u32, i: u64) -> Vec<u8> {
    format!("{PREFIX}{}/w{writer:02}/{i:08}", threads.name()).into_bytes()
}

/// Its value: the three numbers it was made from, so a mixed-up value is caught.
fn value(threads: ThreadCount, writer: u32, i: u64) -> [u8; 24] {
    let mut v = [0u8; 24];
    v[..8].copy_from_slice(&u64::from(threads.count()).to_le_bytes());
    v[8..16].copy_from_slice(&u64::from(writer).to_le_bytes());
    v[16..].copy_from_slice(&i.to_le_bytes());
    v
}

/// Puts per writer at `threads`: the scale's ops / 10 (at least 20) in total, divided
/// among the writers (rounded up).
fn per_writer(o: &RunOptions, threads: ThreadCount) -> u64 {
    (o.scale.ops / 10)
        .max(20)
        .div_ceil(u64::from(threads.count()))
}

/// Runs one measurement: `threads` writers, each committing its own keys one put at a
/// time; returns the per-put histogram and the wall time over all writers.
fn run_writers(
    engine: &dyn KvEngine,
    dataset: &str,
    threads: ThreadCount,
    per_writer: u64,
    progress: &dyn Progress,
) -> Result<(Histogram<u64>, std::time::Duration), RunError> {
    // Keys and values are made before any clock starts.
    let work: Vec<Vec<(Vec<u8>, [u8; 24])>> = (0..threads.count())
        .map(|w| {
            (0..per_writer)
                .map(|i| (key(threads, w, i), value(threads, w, i)))
                .collect()
        })
        .collect();
    let start = Instant::now();
    let hists = std::thread::scope(|scope| {
        let handles = work
            .iter()
            .map(|puts| {
                scope.spawn(move || {
                    let mut h = histogram();
                    for (k, v) in puts {
                        let t0 = Instant::now();
                        let r = engine.put(k, v);
                        let took = t0.elapsed();
                        r.map_err(engine_err(engine, dataset, "sync_put"))?;
                        record(&mut h, took);
                    }
                    progress.advance(puts.len() as u64);
                    Ok(h)
                })
            })
            .collect();
        join_all(engine, "sync_put", handles)
    })?;
    let wall = start.elapsed();
    let mut all = histogram();
    for h in hists {
        // Same bounds on both sides: adding cannot fail.
        let _ = all.add(h);
    }
    Ok((all, wall))
}

/// Measures sync_put at 1 and 8 writers on `s`, already open with sync durability; returns
/// the records and what was written.
pub(crate) fn measure(
    o: &RunOptions,
    s: &mut Session,
    progress: &dyn Progress,
) -> Result<(Vec<Record>, Vec<Written>), RunError> {
    let mut records = Vec::new();
    let mut written = Vec::new();
    for threads in THREADS {
        let guard = super::enter_budget(o, s)?;
        let dataset = s.dataset.name.clone();
        let engine = s.engine()?;
        let per = per_writer(o, threads);
        let n = u64::from(threads.count());
        progress.begin(
            &format!("{} {dataset} sync_put {}", s.name(), threads.name()),
            per * n,
        );
        let (hist, wall) = run_writers(engine, &dataset, threads, per, progress)?;
        progress.end();
        written.push(Written {
            threads,
            per_writer: per,
        });
        let kept = if s.kind() == aimeta_adapters::EngineKind::Postgres {
            "; PostgreSQL is not reopened (its server runs outside this process and a reopen \
             would drop its table): its sessions were switched to synchronous_commit on"
        } else if s.kind().is_server() {
            "; etcd is not reopened (its cluster runs outside this process): it fsyncs every \
             commit whatever the run's --durability"
        } else {
            "; the store was reopened with sync durability for these records, whatever the \
             run's --durability"
        };
        records.push(Record {
            ops: hist.len(),
            threads: threads.count(),
            ns_per_op: latency(&hist),
            ops_per_sec: hist.len() as f64 / wall.as_secs_f64().max(1e-9),
            size_on_disk_bytes: None,
            load_secs: Some(s.load_secs),
            note: Some(format!(
                "{n} writer threads, each committing {per} single puts of new keys with an \
                 fsync each (Durability::Sync); ns_per_op is per put, ops_per_sec commits per \
                 second over all writers (above one over the latency where the engine groups \
                 commits); every put was read back afterwards{kept}"
            )),
            ..base_record(
                Workload::SyncPut,
                &dataset,
                s.kind(),
                Some(Variant::Threads(threads)),
            )
        });
        if let Some(r) = records.last_mut() {
            super::cgroup::mark_over_budget(guard.as_ref(), std::slice::from_mut(r));
        }
    }
    Ok((records, written))
}

/// Reads back every put of `written` with its value, and counts that nothing else is
/// under sync_put's prefix.
pub(crate) fn verify(
    engine: &dyn KvEngine,
    dataset: &str,
    written: &[Written],
) -> Result<(), RunError> {
    let mut buf = Vec::new();
    for w in written {
        for writer in 0..w.threads.count() {
            for i in 0..w.per_writer {
                let k = key(w.threads, writer, i);
                let found = engine.get(&k, &mut buf).map_err(engine_err(
                    engine,
                    dataset,
                    "reading back sync_put",
                ))?;
                if !found || buf != value(w.threads, writer, i) {
                    return Err(wrong(
                        engine,
                        "sync_put",
                        format!(
                            "{} acknowledged but read back as {:?}",
                            String::from_utf8_lossy(&k),
                            found.then_some(&buf)
                        ),
                    ));
                }
            }
        }
    }
    let want: u64 = written
        .iter()
        .map(|w| w.per_writer * u64::from(w.threads.count()))
        .sum();
    let got = engine
        .count_range(PREFIX.as_bytes(), b"sync_put0")
        .map_err(engine_err(engine, dataset, "counting sync_put's keys"))?;
    if got != want {
        return Err(wrong(
            engine,
            "sync_put",
            format!("{got} keys under {PREFIX}; {want} were put"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use aimeta_adapters::{open, CacheBudget, Durability, EngineKind, OpenOptions};

    use super::*;
    use crate::run::NoProgress;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn eight_writers_commit_their_own_keys_and_a_lost_put_is_caught() -> TestResult {
        let dir = tempfile::tempdir()?;
        let options = OpenOptions {
            cache: CacheBudget::mib(8),
            durability: Durability::Sync,
            ..OpenOptions::default()
        };
        let engine = open(EngineKind::Aimeta, dir.path(), &options)?;
        let (h, _) = run_writers(engine.as_ref(), "test", ThreadCount::T8, 3, &NoProgress)?;
        assert_eq!(h.len(), 24);
        let written = [Written {
            threads: ThreadCount::T8,
            per_writer: 3,
        }];
        verify(engine.as_ref(), "test", &written)?;
        assert!(key(ThreadCount::T8, 7, 2).as_slice() > b"ds/laion/shard-99999".as_slice());
        engine.delete(&key(ThreadCount::T8, 5, 1))?;
        let lost = verify(engine.as_ref(), "test", &written);
        assert!(
            matches!(&lost, Err(RunError::WrongAnswer { detail, .. }) if detail.contains("sync_put/t8/w05/00000001")),
            "{lost:?}"
        );
        Ok(())
    }
}
