//! The timed operations of each workload, checked for correct answers as they run: a
//! measurement of a wrong answer is worthless, so a wrong answer stops the run.

use std::collections::{HashMap, VecDeque};

use aimeta_adapters::{CasOutcome, KvEngine, ListItem, LpmMethod};
use rand::RngExt as _;

use super::working_set::TouchedPages;
use super::RunError;
use crate::alloc_count::charged;
use crate::gen::{seeded, ChainGraph, KvQuery, Manifest, Rng, Zipf, YCSB_THETA};

/// Bytes of one manifest entry in the key layout (key and value).
pub(crate) const MANIFEST_ENTRY_BYTES: u64 =
    (crate::gen::MANIFEST_KEY_LEN + crate::gen::MANIFEST_VALUE_LEN) as u64;

/// How a scan from a random offset chooses its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardChoice {
    /// Every shard equally likely.
    Uniform,
    /// Shards by popularity: Zipfian with YCSB's constant 0.99, popular shards spread over
    /// the key space.
    Zipf,
}

/// The error of a failed engine call, for `map_err`. The names become strings only when
/// there is an error: this is built beside every timed operation, and three strings made
/// and dropped each time (as before) were part of every engine's measured time.
pub(crate) fn engine_err<'a>(
    engine: &'a dyn KvEngine,
    dataset: &'a str,
    step: &'static str,
) -> impl FnOnce(aimeta_adapters::Error) -> RunError + 'a {
    move |source| RunError::Engine {
        engine: engine.name().to_string(),
        dataset: dataset.to_string(),
        step: step.to_string(),
        source: Box::new(source),
    }
}

pub(crate) fn wrong(engine: &dyn KvEngine, workload: &str, detail: String) -> RunError {
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
    zipf: Option<Zipf>,
    /// Pages of the key layout the operations read, while tracking is on (the timed
    /// operations only).
    pub touched: Option<TouchedPages>,
    /// The next point gets' entry numbers and keys, drawn and formatted before their
    /// timing starts (see [`ManifestOps::prepare_gets`]), oldest first.
    prepared_gets: VecDeque<(u64, Vec<u8>)>,
    /// Key buffers of gets done, for the next ones prepared.
    key_buffers: Vec<Vec<u8>>,
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
            zipf: Zipf::new(u64::from(m.shards), YCSB_THETA).ok(),
            touched: None,
            prepared_gets: VecDeque::new(),
            key_buffers: Vec::new(),
        }
    }

    /// Draws and formats the keys of the next `count` point gets now, so that their
    /// timing holds the engine's get and the check of its answer, not the making of the
    /// key. The keys are the ones the gets would have drawn themselves, in the same order.
    pub fn prepare_gets(&mut self, count: u64) {
        for _ in 0..count {
            let n = self.rng.random_range(0..self.m.keys());
            let mut key = self.key_buffers.pop().unwrap_or_default();
            self.m.nth_key_into(n, &mut key);
            self.prepared_gets.push_back((n, key));
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

    /// Marks `count` entries from entry number `first` as read.
    fn touch(&mut self, first: u64, count: u64) {
        if let Some(t) = self.st.touched.as_mut() {
            t.touch_entries(first, count, MANIFEST_ENTRY_BYTES);
        }
    }

    /// Entry number of sample `i` of shard `s`.
    fn entry(&self, s: u32, i: u32) -> u64 {
        u64::from(s) * u64::from(self.st.m.per_shard) + u64::from(i)
    }

    /// manifest_scan from a random offset: 100 entries with values from a uniformly random
    /// sample of a shard chosen by `choice`, as a data loader resuming inside a shard reads
    /// them (the sample is drawn so that 100 entries remain in the shard).
    pub fn scan_from_offset(&mut self, choice: ShardChoice) -> Result<(), RunError> {
        let m = self.st.m;
        let s = match (choice, &self.st.zipf) {
            (ShardChoice::Zipf, Some(z)) => z.sample(&mut self.st.rng) as u32,
            _ => self.shard(),
        };
        let want = 100.min(m.per_shard);
        let i = self.st.rng.random_range(0..=m.per_shard - want);
        let start = Manifest::key(s, i);
        let prefix = Manifest::shard_prefix(s);
        let (mut n, mut bytes, mut outside) = (0u32, 0usize, 0u32);
        let engine = self.engine;
        charged(|| {
            engine.scan_range(&start, want as usize, &mut |k, v| {
                n += 1;
                bytes += v.len();
                outside += u32::from(!k.starts_with(&prefix));
            })
        })
        .map_err(engine_err(self.engine, &self.st.dataset, "manifest_scan"))?;
        if n != want || outside != 0 || bytes != want as usize * 24 {
            return Err(wrong(
                self.engine,
                "manifest_scan",
                format!("shard {s} from sample {i}: {n} entries ({outside} outside the shard), {bytes} value bytes; expected {want}"),
            ));
        }
        self.touch(self.entry(s, i), u64::from(want));
        Ok(())
    }

    /// manifest_scan: 100 entries with values under a random shard's prefix.
    pub fn scan(&mut self) -> Result<(), RunError> {
        let s = self.shard();
        let mut bytes = 0usize;
        let engine = self.engine;
        let prefix = Manifest::shard_prefix(s);
        let n = charged(|| engine.scan_prefix(&prefix, 100, &mut |_, v| bytes += v.len()))
            .map_err(engine_err(self.engine, &self.st.dataset, "manifest_scan"))?;
        let want = 100.min(self.st.m.per_shard as usize);
        if n != want || bytes != want * 24 {
            return Err(wrong(
                self.engine,
                "manifest_scan",
                format!("shard {s}: {n} entries, {bytes} value bytes; expected {want}"),
            ));
        }
        self.touch(self.entry(s, 0), want as u64);
        Ok(())
    }

    /// manifest_get: a random existing key.
    pub fn get(&mut self) -> Result<(), RunError> {
        let (n, key) = match self.st.prepared_gets.pop_front() {
            Some(prepared) => prepared,
            None => {
                let n = self.st.rng.random_range(0..self.st.m.keys());
                (n, self.st.m.nth_key(n))
            }
        };
        let found = charged(|| self.engine.get(&key, &mut self.st.buf)).map_err(engine_err(
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
        self.touch(n, 1);
        self.st.key_buffers.push(key);
        Ok(())
    }

    /// manifest_list: 20 common prefixes under `ds/laion/` from a random shard onward.
    pub fn list(&mut self) -> Result<(), RunError> {
        let s = self.shard();
        let after = format!("ds/laion/shard-{s:05}").into_bytes();
        let mut items = 0;
        let mut first: Option<Vec<u8>> = None;
        let engine = self.engine;
        charged(|| {
            engine.list_delimited(Manifest::LIST_PREFIX, Some(&after), b'/', 20, &mut |item| {
                items += 1;
                if first.is_none() {
                    if let ListItem::CommonPrefix(p) = item {
                        first = Some(p.to_vec());
                    }
                }
            })
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
        // A listing reads at least the first entry of each shard it names.
        for shard in s..s + want as u32 {
            self.touch(self.entry(shard, 0), 1);
        }
        Ok(())
    }

    /// manifest_range100: 100 rows from a random key.
    pub fn range100(&mut self) -> Result<(), RunError> {
        let keys = self.st.m.keys();
        let n = self.st.rng.random_range(0..keys.saturating_sub(100).max(1));
        let start = self.st.m.nth_key(n);
        let got = charged(|| self.engine.scan_range(&start, 100, &mut |_, _| {})).map_err(
            engine_err(self.engine, &self.st.dataset, "manifest_range100"),
        )?;
        if got != 100.min(keys as usize) {
            return Err(wrong(
                self.engine,
                "manifest_range100",
                format!("{got} rows from key #{n}"),
            ));
        }
        self.touch(n, got as u64);
        Ok(())
    }

    /// manifest_count8000: a count over 8,000 consecutive keys.
    pub fn count8000(&mut self) -> Result<(), RunError> {
        let keys = self.st.m.keys();
        let span = 8_000.min(keys.saturating_sub(1));
        let n = self.st.rng.random_range(0..(keys - span).max(1));
        let (a, b) = (self.st.m.nth_key(n), self.st.m.nth_key(n + span));
        let got = charged(|| self.engine.count_range(&a, &b)).map_err(engine_err(
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
        self.touch(n, span);
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
        let out = charged(|| {
            self.engine
                .compare_and_swap(&key, Some(&current), Some(&new))
        })
        .map_err(engine_err(self.engine, &self.st.dataset, "manifest_cas"))?;
        if out != CasOutcome::Ok {
            return Err(wrong(
                self.engine,
                "manifest_cas",
                format!("conflict on {}: {out:?}", String::from_utf8_lossy(&key)),
            ));
        }
        self.st.cas_values.insert(key, new);
        self.touch(n, 1);
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
    let got = charged(|| engine.longest_prefix(&q.key, method, out)).map_err(engine_err(
        engine,
        dataset,
        "kvchain_lpm",
    ))?;
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
    let found =
        charged(|| engine.get(key, out)).map_err(engine_err(engine, dataset, "kvchain_get"))?;
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
    touched: &mut Option<TouchedPages>,
) -> Result<(), RunError> {
    let start = rng.random_range(0..g.nodes);
    if let Some(t) = touched.as_mut() {
        // Every node is one fixed-size entry, stored in node order.
        let entry = g.data_bytes() / u64::from(g.nodes.max(1));
        let mut at = start;
        for _ in 0..500 {
            t.touch_entries(u64::from(at), 1, entry);
            at = g.walk(at, 1);
        }
    }
    let mut key = ChainGraph::key(start);
    for _ in 0..500 {
        if !charged(|| engine.get(&key, buf)).map_err(engine_err(
            engine,
            dataset,
            "chain_walk500",
        ))? {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_gets_are_the_keys_the_gets_would_have_drawn_in_order() {
        let m = Manifest {
            shards: 7,
            per_shard: 1_000,
        };
        let mut ops = ManifestOps::new(m, "manifest", 42);
        ops.prepare_gets(3);
        ops.prepare_gets(2);
        // What `ManifestRun::get` draws when nothing is prepared.
        let mut rng = seeded(42);
        let drawn: Vec<(u64, Vec<u8>)> = (0..5)
            .map(|_| {
                let n = rng.random_range(0..m.keys());
                (n, m.nth_key(n))
            })
            .collect();
        assert_eq!(ops.prepared_gets.iter().cloned().collect::<Vec<_>>(), drawn);
    }
}
