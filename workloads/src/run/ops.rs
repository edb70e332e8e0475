//! The timed operations of each workload, checked for correct answers as they run: a
//! measurement of a wrong answer is worthless, so a wrong answer stops the run.

use std::collections::HashMap;

use aimeta_adapters::{CasOutcome, KvEngine, ListItem, LpmMethod};
use rand::RngExt as _;

use super::RunError;
use crate::gen::{seeded, ChainGraph, KvQuery, Manifest, Rng};

fn engine_err(
    engine: &dyn KvEngine,
    dataset: &str,
    step: &str,
) -> impl FnOnce(aimeta_adapters::Error) -> RunError {
    let engine = engine.name().to_string();
    let dataset = dataset.to_string();
    let step = step.to_string();
    move |source| RunError::Engine {
        engine,
        dataset,
        step,
        source: Box::new(source),
    }
}

fn wrong(engine: &dyn KvEngine, workload: &str, detail: String) -> RunError {
    RunError::WrongAnswer {
        engine: engine.name().to_string(),
        workload: workload.to_string(),
        detail,
    }
}

/// State of the manifest workloads' operations (random choices, buffers, CAS values).
pub struct ManifestOps {
    /// The data set's shape.
    pub m: Manifest,
    /// Its name.
    pub dataset: String,
    rng: Rng,
    buf: Vec<u8>,
    cas_values: HashMap<Vec<u8>, Vec<u8>>,
}

/// A borrowed engine with the manifest operations' state.
pub struct ManifestRun<'a> {
    /// The engine under test.
    pub engine: &'a dyn KvEngine,
    /// The state.
    pub st: &'a mut ManifestOps,
}

impl ManifestOps {
    /// Operations on a store loaded with `m`, queries drawn from `seed`.
    pub fn new(m: Manifest, dataset: &str, seed: u64) -> Self {
        ManifestOps {
            m,
            dataset: dataset.to_string(),
            rng: seeded(seed),
            buf: Vec::new(),
            cas_values: HashMap::new(),
        }
    }

    /// Binds the state to an engine for a while.
    pub fn on<'a>(&'a mut self, engine: &'a dyn KvEngine) -> ManifestRun<'a> {
        ManifestRun { engine, st: self }
    }
}

impl ManifestRun<'_> {
    fn shard(&mut self) -> u32 {
        self.st.rng.random_range(0..self.st.m.shards)
    }

    /// manifest_scan: 100 entries with values under a random shard's prefix.
    pub fn scan(&mut self) -> Result<(), RunError> {
        let s = self.shard();
        let mut bytes = 0usize;
        let n = self
            .engine
            .scan_prefix(&Manifest::shard_prefix(s), 100, &mut |_, v| {
                bytes += v.len()
            })
            .map_err(engine_err(self.engine, &self.st.dataset, "manifest_scan"))?;
        let want = 100.min(self.st.m.per_shard as usize);
        if n != want || bytes != want * 24 {
            return Err(wrong(
                self.engine,
                "manifest_scan",
                format!("shard {s}: {n} entries, {bytes} value bytes; expected {want}"),
            ));
        }
        Ok(())
    }

    /// manifest_get: a random existing key.
    pub fn get(&mut self) -> Result<(), RunError> {
        let n = self.st.rng.random_range(0..self.st.m.keys());
        let key = self.st.m.nth_key(n);
        let found = self.engine.get(&key, &mut self.st.buf).map_err(engine_err(
            self.engine,
            &self.st.dataset,
            "manifest_get",
        ))?;
        if !found || self.st.buf.len() != 24 {
            return Err(wrong(
                self.engine,
                "manifest_get",
                format!("{} not found", String::from_utf8_lossy(&key)),
            ));
        }
        Ok(())
    }

    /// manifest_list: 20 common prefixes under `ds/laion/` from a random shard onward.
    pub fn list(&mut self) -> Result<(), RunError> {
        let s = self.shard();
        let after = format!("ds/laion/shard-{s:05}").into_bytes();
        let mut items = 0;
        let mut first: Option<Vec<u8>> = None;
        self.engine
            .list_delimited(Manifest::LIST_PREFIX, Some(&after), b'/', 20, &mut |item| {
                items += 1;
                if first.is_none() {
                    if let ListItem::CommonPrefix(p) = item {
                        first = Some(p.to_vec());
                    }
                }
            })
            .map_err(engine_err(self.engine, &self.st.dataset, "manifest_list"))?;
        let want = 20.min((self.st.m.shards - s) as usize);
        if items != want || first.as_deref() != Some(Manifest::shard_prefix(s).as_slice()) {
            return Err(wrong(
                self.engine,
                "manifest_list",
                format!("from shard {s}: {items} items, first {first:?}"),
            ));
        }
        Ok(())
    }

    /// manifest_range100: 100 rows from a random key.
    pub fn range100(&mut self) -> Result<(), RunError> {
        let keys = self.st.m.keys();
        let n = self.st.rng.random_range(0..keys.saturating_sub(100).max(1));
        let start = self.st.m.nth_key(n);
        let got = self
            .engine
            .scan_range(&start, 100, &mut |_, _| {})
            .map_err(engine_err(
                self.engine,
                &self.st.dataset,
                "manifest_range100",
            ))?;
        if got != 100.min(keys as usize) {
            return Err(wrong(
                self.engine,
                "manifest_range100",
                format!("{got} rows from key #{n}"),
            ));
        }
        Ok(())
    }

    /// manifest_count8000: a count over 8,000 consecutive keys.
    pub fn count8000(&mut self) -> Result<(), RunError> {
        let keys = self.st.m.keys();
        let span = 8_000.min(keys.saturating_sub(1));
        let n = self.st.rng.random_range(0..(keys - span).max(1));
        let (a, b) = (self.st.m.nth_key(n), self.st.m.nth_key(n + span));
        let got = self.engine.count_range(&a, &b).map_err(engine_err(
            self.engine,
            &self.st.dataset,
            "manifest_count8000",
        ))?;
        if got != span {
            return Err(wrong(
                self.engine,
                "manifest_count8000",
                format!("counted {got} keys in a range of {span}"),
            ));
        }
        Ok(())
    }

    /// manifest_cas: swap a random key's value for a new one, expecting its current value.
    pub fn cas(&mut self, round: u64) -> Result<(), RunError> {
        let n = self.st.rng.random_range(0..self.st.m.keys());
        let key = self.st.m.nth_key(n);
        let per = u64::from(self.st.m.per_shard);
        let current = self
            .st
            .cas_values
            .get(&key)
            .cloned()
            .unwrap_or_else(|| Manifest::value((n / per) as u32, (n % per) as u32).to_vec());
        let mut new = current.clone();
        new[..8].copy_from_slice(&round.to_le_bytes());
        let out = self
            .engine
            .compare_and_swap(&key, Some(&current), Some(&new))
            .map_err(engine_err(self.engine, &self.st.dataset, "manifest_cas"))?;
        if out != CasOutcome::Ok {
            return Err(wrong(
                self.engine,
                "manifest_cas",
                format!("conflict on {}: {out:?}", String::from_utf8_lossy(&key)),
            ));
        }
        self.st.cas_values.insert(key, new);
        Ok(())
    }
}

/// kvchain_lpm: one query by one method, checked against the generator's answer.
pub fn lpm(
    engine: &dyn KvEngine,
    dataset: &str,
    q: &KvQuery,
    method: LpmMethod,
    out: &mut Vec<u8>,
) -> Result<(), RunError> {
    let got = engine
        .longest_prefix(&q.key, method, out)
        .map_err(engine_err(engine, dataset, "kvchain_lpm"))?;
    if got != q.expect_len {
        return Err(wrong(
            engine,
            "kvchain_lpm",
            format!(
                "{method:?} on {}: {got:?}, expected {:?}",
                String::from_utf8_lossy(&q.key),
                q.expect_len
            ),
        ));
    }
    Ok(())
}

/// kvchain_get: a point get of the query's answer: its longest stored prefix for a hit
/// (found), the query itself for a miss (absent).
pub fn kv_get(
    engine: &dyn KvEngine,
    dataset: &str,
    q: &KvQuery,
    out: &mut Vec<u8>,
) -> Result<(), RunError> {
    let key = &q.key[..q.expect_len.unwrap_or(q.key.len())];
    let found = engine
        .get(key, out)
        .map_err(engine_err(engine, dataset, "kvchain_get"))?;
    if found != q.expect_len.is_some() {
        return Err(wrong(
            engine,
            "kvchain_get",
            format!(
                "{}: found {found}, expected {}",
                String::from_utf8_lossy(key),
                q.expect_len.is_some()
            ),
        ));
    }
    Ok(())
}

/// chain_walk500: 500 dependent gets along the chain graph from a random node.
pub fn walk500(
    engine: &dyn KvEngine,
    dataset: &str,
    g: &ChainGraph,
    rng: &mut Rng,
    buf: &mut Vec<u8>,
) -> Result<(), RunError> {
    let start = rng.random_range(0..g.nodes);
    let mut key = ChainGraph::key(start);
    for _ in 0..500 {
        if !engine
            .get(&key, buf)
            .map_err(engine_err(engine, dataset, "chain_walk500"))?
        {
            return Err(wrong(
                engine,
                "chain_walk500",
                format!("{} missing", String::from_utf8_lossy(&key)),
            ));
        }
        key.clear();
        key.extend_from_slice(ChainGraph::next_key(buf));
    }
    let want = ChainGraph::key(g.walk(start, 500));
    if key != want {
        return Err(wrong(
            engine,
            "chain_walk500",
            "the walk ended at the wrong node".into(),
        ));
    }
    Ok(())
}
