//! etcd adapter (the `etcd-client` crate over etcd's v3 gRPC API), synchronous over one
//! tokio runtime of its own.
//!
//! Two engines: `etcd`, a throwaway cluster of three members, and `etcd-1`, one member, so
//! that the cost of replication is visible beside the cost of the server. The cluster runs
//! from Debian's `etcd-server` binaries on loopback ports picked here, with its data in the
//! engine's directory (see [`cluster`]). `OpenOptions::etcd_endpoints` uses a running
//! cluster instead: the adapter then keeps its keys under a prefix of its own
//! (`aimeta/<pid>_<nanos>_<n>/`), deletes them on close and touches nothing else.
//!
//! Mapping (docs/fairness.md): gets and scans are ranges (`range_end`, `limit`, in pages
//! continued after the last key); counts are `count_only` ranges, counted by the server;
//! compare-and-swap is one transaction comparing the value (or `version = 0` for an absent
//! key); a write batch is one transaction of its last write per key (etcd refuses a key
//! written twice in one), split at the cluster's limits ([`batch`]): `--max-txn-ops` and
//! `--max-request-bytes`, raised on the throwaway cluster to [`THROWAWAY_TXN_OPS`] and
//! [`THROWAWAY_REQUEST_BYTES`] (over every batch the workloads write), etcd's defaults (128
//! and 1.5 MiB) on an existing cluster. A batch split in several transactions is atomic per
//! transaction, not as a whole. Longest-prefix lookups and listings run the shared
//! emulations; `seek_le` is a range up to the key sorted by key descending with limit 1.
//! etcd 3.4 sorts such a range in full before it applies the limit, so the range is bounded
//! below, first by the key less its last byte, then by shorter and shorter prefixes (the
//! stripped length doubling) and last by the smallest key. It also collects every key of
//! an ascending range before it applies the limit, so walks ask their start's
//! neighbourhood first and widen ([`reads::Windows`]).
//!
//! Reads are linearizable (a quorum read through the leader) unless
//! `OpenOptions::read_consistency` asks for serializable ones (served by the member asked).
//! Durability: etcd fsyncs its write-ahead log before it acknowledges every commit and has
//! no weaker mode: every durability opens, writes are always synchronous, and
//! `capabilities().durability` lists only [`Durability::Sync`], so that the harness reports
//! the other modes N/A.

mod batch;
mod cluster;
mod reads;

use crate::api::{
    BatchOp, Capabilities, CasOutcome, Durability, KvEngine, KvPair, OpenOptions, ReadConsistency,
};
use crate::emul::{self, SortedCheck};
use crate::error::{Error, Result};
use batch::{Limits, Write};
use cluster::{ClusterConfig, EtcdCluster};
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, KvClient, Txn, TxnOp};
use reads::KeysOnly;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `--max-txn-ops` of the throwaway cluster.
pub(crate) const THROWAWAY_TXN_OPS: usize = 65_536;
/// `--max-request-bytes` of the throwaway cluster: 8 MiB, under the 10 MiB etcd advises as
/// the most.
pub(crate) const THROWAWAY_REQUEST_BYTES: usize = 8 << 20;
/// The longest key accepted: etcd bounds a key only by the request size, so one put of a
/// key this long with a value of 1 MiB fits even etcd's default 1.5 MiB request.
pub(crate) const MAX_KEY_LEN: usize = 64 * 1024;
const KEY_LIMIT: &str =
    "this adapter's key limit (a key and a 1 MiB value in one default etcd request)";
/// etcd's documented largest backend quota.
pub(crate) const MAX_QUOTA_BYTES: u64 = 8 << 30;
/// etcd's default quota, the least the throwaway cluster gets.
const MIN_QUOTA_BYTES: u64 = 2 << 30;
/// Backend bytes per byte of keys and values: each revision is a `KeyValue` message under a
/// 17-byte revision key in bbolt, pages are not full, and up to 1,000 old revisions are kept.
const BACKEND_PER_DATA_BYTE: u64 = 3;
const BACKEND_SLACK: u64 = 256 << 20;
/// How long a throwaway cluster has to become healthy.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Every request's deadline.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// More than etcd's backend batch interval (100 ms): a write is committed to the backend
/// within it.
const BACKEND_COMMIT_WAIT: Duration = Duration::from_millis(250);
/// Pairs a scan asks for per round trip: the caller's limit, within these bounds.
const PAGE_MIN: usize = 16;
const PAGE_MAX: usize = 4096;
/// How many times `compare_and_swap` retries when its compare failed yet the value it then
/// reads is the expected one (another client changed the key back in between).
const CAS_ATTEMPTS: usize = 8;

/// Which engine: the three-member cluster or the single member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Members {
    /// `etcd`.
    Three,
    /// `etcd-1`.
    One,
}

impl Members {
    fn name(self) -> &'static str {
        match self {
            Members::Three => "etcd",
            Members::One => "etcd-1",
        }
    }

    fn count(self) -> usize {
        match self {
            Members::Three => 3,
            Members::One => 1,
        }
    }
}

/// The backend quota a store of `data_bytes` needs, or [`Error::EtcdQuota`] over 8 GiB.
pub(crate) fn quota_for(data_bytes: u64) -> Result<u64> {
    let need = data_bytes
        .saturating_mul(BACKEND_PER_DATA_BYTE)
        .saturating_add(BACKEND_SLACK);
    if need > MAX_QUOTA_BYTES {
        return Err(Error::EtcdQuota {
            need_bytes: need,
            max_bytes: MAX_QUOTA_BYTES,
        });
    }
    Ok(need.max(MIN_QUOTA_BYTES))
}

/// An etcd cluster's key space (or a prefix of it); see the module docs.
pub(crate) struct EtcdEngine {
    name: &'static str,
    /// Every key sent is this prefix plus the caller's key (empty on a throwaway cluster).
    ns: Vec<u8>,
    limits: Limits,
    serializable: bool,
    kv: KvClient,
    client: Client,
    rt: tokio::runtime::Runtime,
    /// Held for its Drop, which stops the members; declared last so that the client and
    /// the runtime go first.
    cluster: Option<EtcdCluster>,
}

fn eerr(engine: &'static str, operation: &'static str) -> impl Fn(etcd_client::Error) -> Error {
    move |e| Error::backend(engine, operation, e)
}

impl EtcdEngine {
    /// Starts a throwaway cluster in `dir` (or connects to `etcd_endpoints`) and waits until
    /// every member answers a linearizable read.
    pub(crate) fn open(members: Members, dir: &Path, o: &OpenOptions) -> Result<Self> {
        let name = members.name();
        let quota = quota_for(o.expected_data_bytes)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("etcd-client")
            .enable_all()
            .build()
            .map_err(|e| Error::backend(name, "start the tokio runtime", e))?;
        let external: Vec<String> = o
            .etcd_endpoints
            .iter()
            .flatten()
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        let (cluster, endpoints, limits, ns) = if external.is_empty() {
            emul::ensure_dir(name, dir)?;
            let config = ClusterConfig {
                members: members.count(),
                quota_bytes: quota,
                max_txn_ops: THROWAWAY_TXN_OPS,
                max_request_bytes: THROWAWAY_REQUEST_BYTES,
                start_timeout: START_TIMEOUT,
            };
            let cluster = EtcdCluster::start(dir, config)?;
            wait_healthy(&rt, &cluster, config.start_timeout)?;
            let endpoints = cluster.endpoints()?;
            let limits = Limits {
                max_ops: THROWAWAY_TXN_OPS,
                max_request_bytes: THROWAWAY_REQUEST_BYTES,
            };
            (Some(cluster), endpoints, limits, Vec::new())
        } else {
            (None, external, Limits::DEFAULT, unique_namespace())
        };
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(REQUEST_TIMEOUT);
        let client = rt
            .block_on(Client::connect(&endpoints, Some(options)))
            .map_err(eerr(name, "connect"))?;
        let kv = client
            .kv_client()
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(limits.max_request_bytes + (1 << 20));
        Ok(EtcdEngine {
            name,
            ns,
            limits,
            serializable: o.read_consistency == ReadConsistency::Serializable,
            kv,
            client,
            rt,
            cluster,
        })
    }

    /// The throwaway cluster, if this engine started one.
    #[cfg(test)]
    pub(crate) fn cluster(&self) -> Option<&EtcdCluster> {
        self.cluster.as_ref()
    }

    /// Fails once a member of the throwaway cluster has exited.
    fn alive(&self) -> Result<()> {
        match &self.cluster {
            Some(c) => c.check_alive(),
            None => Ok(()),
        }
    }

    /// Runs one request on the runtime, after checking that the cluster is whole; a
    /// request that failed because a member died reports the member.
    fn call<T>(
        &self,
        operation: &'static str,
        f: impl std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        self.alive()?;
        match self.rt.block_on(f) {
            Ok(t) => Ok(t),
            Err(e) => {
                if let Some(c) = &self.cluster {
                    c.check_alive_now()?;
                }
                Err(Error::backend(self.name, operation, e))
            }
        }
    }

    /// The key as stored: the namespace plus `key`, never empty (etcd refuses the empty
    /// key; `[0]` is the smallest key it accepts).
    fn full(&self, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.ns.len() + key.len().max(1));
        k.extend_from_slice(&self.ns);
        k.extend_from_slice(key);
        if k.is_empty() {
            k.push(0);
        }
        k
    }

    /// The exclusive end of this engine's key space: `None` for all of etcd's (a "from
    /// key" range), else the namespace's successor.
    fn space_end(&self) -> Option<Vec<u8>> {
        emul::prefix_successor(&self.ns)
    }

    fn range_opts(&self, end: Option<Vec<u8>>) -> GetOptions {
        let o = match end {
            Some(end) => GetOptions::new().with_range(end),
            None => GetOptions::new().with_from_key(),
        };
        if self.serializable {
            o.with_serializable()
        } else {
            o
        }
    }

    fn strip<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        key.get(self.ns.len()..).unwrap_or_default()
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        emul::check_key_within(self.name, key, MAX_KEY_LEN, KEY_LIMIT)
    }

    /// One transaction per group of `writes` (see [`batch`]).
    fn apply(&self, writes: &[Write<'_>], operation: &'static str) -> Result<()> {
        for group in batch::split(writes, self.limits) {
            let ops: Vec<TxnOp> = group
                .iter()
                .map(|w| match *w {
                    Write::Put(k, v) => TxnOp::put(self.full(k), v, None),
                    Write::Delete(k) => TxnOp::delete(self.full(k), None),
                })
                .collect();
            let mut kv = self.kv.clone();
            self.call(operation, kv.txn(Txn::new().and_then(ops)))?;
        }
        Ok(())
    }
}

/// `aimeta/<pid>_<nanos>_<counter>/`: unique per open, so runs sharing a cluster never collide.
fn unique_namespace() -> Vec<u8> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("aimeta/{}_{nanos}_{n}/", std::process::id()).into_bytes()
}

/// Waits until every member answers a linearizable read through itself alone, or fails
/// with the member that exited or is still not healthy at the deadline, and its log tail.
fn wait_healthy(
    rt: &tokio::runtime::Runtime,
    cluster: &EtcdCluster,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    for endpoint in cluster.endpoints()? {
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(1))
            .with_timeout(Duration::from_secs(2));
        loop {
            cluster.check_exited()?;
            let probe = rt.block_on(async {
                let mut c = Client::connect([endpoint.as_str()], Some(options.clone())).await?;
                c.get("aimeta-health", None).await
            });
            let last = match probe {
                Ok(_) => break,
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(cluster.not_healthy(
                    &endpoint,
                    format!("no linearizable read within {timeout:?} (last error: {last})"),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

impl Drop for EtcdEngine {
    /// On someone else's cluster, deletes this engine's keys.
    fn drop(&mut self) {
        if self.cluster.is_none() {
            if let Some(end) = self.space_end() {
                let mut kv = self.kv.clone();
                let ns = self.ns.clone();
                let opts = etcd_client::DeleteOptions::new().with_range(end);
                let _ = self.rt.block_on(kv.delete(ns, Some(opts)));
            }
        }
    }
}

impl KvEngine for EtcdEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    /// Emulated longest-prefix and listing, native counts (`count_only`), no I/O counters,
    /// and only the synchronous durability etcd has.
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            durability: &[Durability::Sync],
            ..Capabilities::emulated(false, Some(MAX_KEY_LEN))
        }
    }

    /// Transactions of puts at the cluster's limits, each atomic on its own.
    fn bulk_load(&self, pairs: &mut dyn Iterator<Item = KvPair>) -> Result<u64> {
        let mut check = SortedCheck::for_engine(self)?;
        let mut chunk: Vec<KvPair> = Vec::new();
        let (mut bytes, mut n) = (0usize, 0u64);
        let flush = |chunk: &mut Vec<KvPair>| -> Result<()> {
            let writes: Vec<Write<'_>> = chunk.iter().map(|(k, v)| Write::Put(k, v)).collect();
            self.apply(&writes, "bulk_load: txn")?;
            chunk.clear();
            Ok(())
        };
        for (k, v) in pairs {
            check.check(&k)?;
            self.check_key(&k)?;
            let b = Write::Put(&k, &v).request_bytes();
            if chunk.len() >= self.limits.max_ops || bytes + b > self.limits.payload_bytes() {
                flush(&mut chunk)?;
                bytes = 0;
            }
            bytes += b;
            chunk.push((k, v));
            n += 1;
        }
        flush(&mut chunk)?;
        Ok(n)
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        crate::emul::OrderedRead::point_get(self, key, out)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        let mut kv = self.kv.clone();
        self.call("put", kv.put(self.full(key), value, None))?;
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        if key.is_empty() {
            return Ok(());
        }
        let mut kv = self.kv.clone();
        self.call("delete", kv.delete(self.full(key), None))?;
        Ok(())
    }

    /// One transaction of the batch's last write per key; split at the cluster's limits,
    /// and then atomic per transaction only (module docs).
    fn write_batch(&self, ops: &[BatchOp<'_>]) -> Result<()> {
        emul::check_batch_within(self.name, ops, MAX_KEY_LEN, KEY_LIMIT)?;
        self.apply(&batch::last_writes(ops), "write_batch: txn")
    }

    /// One transaction: compare the value (`version = 0` for "absent"), then put or delete;
    /// on a failed compare the current value is read back, and if another client restored
    /// the expected value in between the swap is tried again.
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.check_key(key)?;
        let full = self.full(key);
        let mut current = None;
        for _ in 0..CAS_ATTEMPTS {
            let compare = match expected {
                Some(e) => Compare::value(full.clone(), CompareOp::Equal, e),
                None => Compare::version(full.clone(), CompareOp::Equal, 0),
            };
            let op = match new {
                Some(n) => TxnOp::put(full.clone(), n, None),
                None => TxnOp::delete(full.clone(), None),
            };
            let mut kv = self.kv.clone();
            let resp = self.call(
                "compare_and_swap",
                kv.txn(Txn::new().when([compare]).and_then([op])),
            )?;
            if resp.succeeded() {
                return Ok(CasOutcome::Ok);
            }
            let mut kv = self.kv.clone();
            let now = self.call("compare_and_swap: read current", kv.get(full.clone(), None))?;
            current = now.kvs().first().map(|p| p.value().to_vec());
            if current.as_deref() != expected {
                break;
            }
        }
        Ok(CasOutcome::Conflict { current })
    }

    /// Only [`Durability::Sync`], which is what etcd always does.
    fn set_durability(&self, durability: Durability) -> Result<bool> {
        Ok(durability == Durability::Sync)
    }

    fn scan_prefix(
        &self,
        prefix: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        emul::scan_prefix(self, prefix, limit, visit)
    }

    fn scan_range(
        &self,
        start_inclusive: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        emul::scan_range(self, start_inclusive, limit, visit)
    }

    /// The shared emulation over `keys_only` ranges.
    fn list_delimited(
        &self,
        prefix: &[u8],
        start_after: Option<&[u8]>,
        delimiter: u8,
        limit: usize,
        visit: &mut dyn FnMut(crate::api::ListItem<'_>),
    ) -> Result<usize> {
        emul::list_delimited(
            &KeysOnly(self),
            prefix,
            start_after,
            delimiter,
            limit,
            visit,
        )
    }

    fn longest_prefix(
        &self,
        query: &[u8],
        method: crate::api::LpmMethod,
        out: &mut Vec<u8>,
    ) -> Result<Option<usize>> {
        emul::longest_prefix(self, query, method, out)
    }

    /// A `count_only` range: the server counts its index without returning keys.
    fn count_range(&self, start_inclusive: &[u8], end_exclusive: &[u8]) -> Result<u64> {
        if start_inclusive >= end_exclusive {
            return Ok(0);
        }
        let opts = self
            .range_opts(Some(self.full(end_exclusive)))
            .with_count_only();
        let mut kv = self.kv.clone();
        let resp = self.call("count", kv.get(self.full(start_inclusive), Some(opts)))?;
        Ok(u64::try_from(resp.count()).unwrap_or(0))
    }

    /// Every commit is already on disk (etcd fsyncs its log per commit and its backend at
    /// least every 100 ms). What is left of a burst of writes is etcd 3.4's read buffer:
    /// each read copies the buffer of the backend's last commits at the largest length it
    /// has grown to (`txReadBuffer.unsafeCopy` copies every bucket's whole slice, not the
    /// entries in use), and a bucket keeps that length until a commit writes nothing to it.
    /// After a bulk load of 65,536-put transactions every point get copied 3 to 5 MB and
    /// took 4.0 to 6.7 ms on 600 k keys here, against 0.3 to 1.0 ms after such a commit
    /// (docs/fairness.md; `cargo run --release -p aimeta-adapters --example etcd_ranges`).
    /// So a checkpoint makes that commit: a lease granted and revoked writes only etcd's
    /// lease bucket, and the wait lets the backend commit each (its batch interval is
    /// 100 ms). No key and no revision changes.
    fn checkpoint(&self) -> Result<()> {
        self.alive()?;
        let mut lease = self.client.lease_client();
        let granted = self.call("checkpoint: lease grant", lease.grant(60, None))?;
        std::thread::sleep(BACKEND_COMMIT_WAIT);
        self.call("checkpoint: lease revoke", lease.revoke(granted.id()))?;
        std::thread::sleep(BACKEND_COMMIT_WAIT);
        self.alive()
    }

    /// The backend file of the member answering (`Status.dbSize`): one replica's data,
    /// without the write-ahead log and snapshots every member keeps beside it.
    fn size_on_disk(&self) -> Result<u64> {
        let mut m = self.client.maintenance_client();
        let status = self.call("status", m.status())?;
        Ok(u64::try_from(status.db_size()).unwrap_or(0))
    }

    fn io_counters(&self) -> Option<crate::api::IoCounters> {
        None
    }
}

#[cfg(test)]
mod tests;
