//! The conformance data set, the `BTreeMap` reference model and the read checks that compare
//! an engine with it.

mod key_limits;

pub use key_limits::check_key_limits;

use aimeta_adapters::{KvEngine, ListItem, LpmMethod};
use rand::{Rng as _, RngExt as _};
use std::collections::BTreeMap;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;
pub type CheckResult = Result<(), Box<dyn std::error::Error>>;

/// The workspace's one generator (PCG 128/64, value-stable across rand releases), so every
/// engine and every run sees the same keys.
fn seeded(seed: u64) -> rand_pcg::Pcg64Mcg {
    use rand::SeedableRng as _;
    rand_pcg::Pcg64Mcg::seed_from_u64(seed)
}

/// The kv-cache chains: per model, 40 chains of 1-8 blocks branching from earlier chains,
/// with every prefix on a '/' boundary stored (`kv`, `kv/<model>`, ...): prefix-closed.
pub fn kv_chains() -> Vec<Vec<String>> {
    let mut rng = seeded(0x9e37_79b9_7f4a_7c15);
    let mut chains: Vec<Vec<String>> = Vec::new();
    for model in ["llama70b", "mistral7b"] {
        let first = chains.len();
        for i in 0..40 {
            let mut chain: Vec<String> = vec!["kv".into(), model.into()];
            if i > 0 {
                let parent = &chains[first + rng.random_range(0..i)];
                let keep = 2 + rng.random_range(0..parent.len() - 1);
                chain = parent[..keep.min(parent.len())].to_vec();
            }
            let depth = 3 + rng.random_range(0..8);
            while chain.len() < depth {
                chain.push(format!("{:08x}", rng.next_u64() as u32));
            }
            chains.push(chain);
        }
    }
    chains
}

/// A few thousand keys: dataset manifests, prefix-closed kv chains, keys that are prefixes of
/// other keys, binary keys holding 0x00 and ending in 0xFF, an empty and a 10 KiB value.
pub fn dataset() -> Model {
    let mut m = Model::new();
    for shard in 0..50u32 {
        for sample in 0..100u32 {
            let k = format!("ds/laion/shard-{shard:05}/sample-{sample:08}");
            let v = format!("{{\"offset\":{},\"len\":{}}}", sample * 4096, 1000 + shard);
            m.insert(k.into_bytes(), v.into_bytes());
        }
    }
    for k in [
        "ds",
        "ds/laion/shard-00003",
        "ds/laion/shard-00007/",
        "ds/laion/manifest.json",
        "ds/coco/train/0001",
        "ds/coco/val/0001",
        "a",
        "ab",
        "abc",
        "abd",
        "abcd/e",
        "zz/tail/1",
        "zz/tail/2",
    ] {
        m.insert(k.as_bytes().to_vec(), format!("v:{k}").into_bytes());
    }
    for chain in kv_chains() {
        for depth in 1..=chain.len() {
            let k = chain[..depth].join("/");
            m.insert(
                k.clone().into_bytes(),
                format!("blocks:{depth}").into_bytes(),
            );
        }
    }
    let binary: [&[u8]; 14] = [
        &[0x00],
        &[0x00, 0x00],
        &[0x00, 0x01, 0x00],
        &[0x01, 0x00, 0xFF],
        b"b/\x00x",
        &[b'b', 0xFF],
        &[b'b', 0xFF, 0xFF],
        &[b'b', 0xFF, 0xFF, 0x00],
        &[0xFE, 0xFF],
        &[0xFF],
        &[0xFF, 0x00],
        &[0xFF, 0xFF],
        &[0xFF, 0xFF, 0xFF],
        &[0xFF, 0xFF, b'/', 0x01],
    ];
    for (i, k) in binary.iter().enumerate() {
        m.insert(k.to_vec(), vec![i as u8, 0x00, 0xFF]);
    }
    m.insert(b"empty/value".to_vec(), Vec::new());
    m.insert(
        b"big/value".to_vec(),
        (0..10_240u32).map(|i| (i % 251) as u8).collect(),
    );
    m
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn collect_scan(
    f: impl FnOnce(&mut dyn FnMut(&[u8], &[u8])) -> aimeta_adapters::Result<usize>,
) -> Result<Pairs, aimeta_adapters::Error> {
    let mut got = Vec::new();
    let n = f(&mut |k, v| got.push((k.to_vec(), v.to_vec())))?;
    assert_eq!(n, got.len(), "returned count differs from visited count");
    Ok(got)
}

/// Every key, through an unbounded range scan from the empty key.
pub fn assert_full_contents(e: &dyn KvEngine, model: &Model) -> CheckResult {
    let got = collect_scan(|v| e.scan_range(b"", usize::MAX, v))?;
    let want: Pairs = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len(), "{}: key count", e.name());
    assert_eq!(got, want, "{}: full contents", e.name());
    Ok(())
}

pub fn check_gets(e: &dyn KvEngine, model: &Model) -> CheckResult {
    let mut out = vec![1, 2, 3];
    for (k, v) in model {
        assert!(e.get(k, &mut out)?, "{}: get {k:?} missed", e.name());
        assert_eq!(&out, v, "{}: get {k:?}", e.name());
    }
    let misses: [&[u8]; 7] = [
        b"",
        b"ds/laion/shard-00003/",
        b"ds/laion/shard-00003/sample-00000100",
        b"kv/llama70b/ffffffff",
        &[0x00, 0x00, 0x00],
        &[0xFF, 0xFF, 0xFF, 0xFF],
        b"zzz-missing",
    ];
    for k in misses {
        assert!(!e.get(k, &mut out)?, "{}: get {k:?} should miss", e.name());
        assert!(out.is_empty(), "{}: out not cleared on a miss", e.name());
    }
    Ok(())
}

pub fn check_scans(e: &dyn KvEngine, model: &Model) -> CheckResult {
    let prefixes: [(&[u8], usize); 12] = [
        (b"ds/laion/shard-00003/", 10),
        (b"ds/laion/shard-00003/", usize::MAX),
        (b"ds/laion/shard-00003", 5),
        (b"kv/llama70b/", 1000),
        (b"ab", 100),
        (&[b'b', 0xFF], 100),
        (&[0xFF], 100),
        (&[0xFF, 0xFF], 100),
        (&[0x00], 2),
        (b"", 50),
        (b"no/such/prefix/", 100),
        (b"ds/", 0),
    ];
    for (prefix, limit) in prefixes {
        let got = collect_scan(|v| e.scan_prefix(prefix, limit, v))?;
        let want: Pairs = model
            .range(prefix.to_vec()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            got,
            want,
            "{}: scan_prefix {prefix:?} limit {limit}",
            e.name()
        );
    }
    let starts: [&[u8]; 7] = [
        b"",
        b"ds/laion/shard-00005/sample-00000050",
        b"ds/laion/shard-00005/sample-000000505",
        b"kv/",
        &[0xFE],
        &[0xFF, 0xFF],
        &[0xFF, 0xFF, 0xFF, 0x00],
    ];
    for start in starts {
        let got = collect_scan(|v| e.scan_range(start, 100, v))?;
        let want: Pairs = model
            .range(start.to_vec()..)
            .take(100)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "{}: scan_range from {start:?}", e.name());
    }
    Ok(())
}

/// An owned [`ListItem`], for comparing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Key(Vec<u8>),
    Prefix(Vec<u8>),
}

impl Item {
    fn bytes(&self) -> &[u8] {
        match self {
            Item::Key(b) | Item::Prefix(b) => b,
        }
    }
}

/// The S3 ListObjectsV2 reference: roll up, deduplicate, keep items > start_after.
pub fn model_list(
    m: &Model,
    prefix: &[u8],
    after: Option<&[u8]>,
    d: u8,
    limit: usize,
) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::new();
    for k in m.keys().filter(|k| k.starts_with(prefix)) {
        let item = match k[prefix.len()..].iter().position(|&b| b == d) {
            Some(i) => Item::Prefix(k[..prefix.len() + i + 1].to_vec()),
            None => Item::Key(k.clone()),
        };
        if items.last() != Some(&item) {
            items.push(item);
        }
    }
    items
        .into_iter()
        .filter(|i| after.is_none_or(|a| i.bytes() > a))
        .take(limit)
        .collect()
}

fn list(
    e: &dyn KvEngine,
    prefix: &[u8],
    after: Option<&[u8]>,
    d: u8,
    limit: usize,
) -> Result<Vec<Item>, aimeta_adapters::Error> {
    let mut got = Vec::new();
    let n = e.list_delimited(prefix, after, d, limit, &mut |item| {
        got.push(match item {
            ListItem::Key(k) => Item::Key(k.to_vec()),
            ListItem::CommonPrefix(p) => Item::Prefix(p.to_vec()),
        })
    })?;
    assert_eq!(n, got.len(), "{}: list_delimited count", e.name());
    Ok(got)
}

pub fn check_listing(e: &dyn KvEngine, model: &Model) -> CheckResult {
    type Case<'a> = (&'a [u8], Option<&'a [u8]>, u8, usize);
    let cases: [Case<'_>; 16] = [
        (b"ds/laion/", None, b'/', 1000),
        (b"ds/laion/", None, b'/', 5),
        (b"ds/laion/", Some(b"ds/laion/shard-00003"), b'/', 4),
        (b"ds/laion/", Some(b"ds/laion/shard-00003/"), b'/', 4),
        (
            b"ds/laion/",
            Some(b"ds/laion/shard-00003/sample-00000005"),
            b'/',
            4,
        ),
        (b"ds/laion/", Some(b"ds/laion/shard-00006/"), b'/', 3),
        (b"ds/laion/", Some(b"a"), b'/', 3),
        (b"ds/laion/", Some(b"zz"), b'/', 3),
        (b"ds/", None, b'/', 100),
        (b"", None, b'/', 1000),
        (b"kv/llama70b/", None, b'/', 1000),
        (b"ab", None, b'/', 100),
        (b"", None, 0x00, 1000),
        (&[0xFF], None, 0xFF, 100),
        (b"no/such/", None, b'/', 10),
        (b"ds/", None, b'/', 0),
    ];
    for (prefix, after, d, limit) in cases {
        let got = list(e, prefix, after, d, limit)?;
        let want = model_list(model, prefix, after, d, limit);
        assert_eq!(
            got,
            want,
            "{}: list {prefix:?} after {after:?} delim {d} limit {limit}",
            e.name()
        );
    }
    // Paging with start_after = the last item of each page reproduces the whole listing.
    for (prefix, d) in [
        (&b"ds/laion/"[..], b'/'),
        (b"", b'/'),
        (b"kv/mistral7b/", b'/'),
    ] {
        let whole = model_list(model, prefix, None, d, usize::MAX);
        let mut paged: Vec<Item> = Vec::new();
        loop {
            let after = paged.last().map(|i| i.bytes().to_vec());
            let page = list(e, prefix, after.as_deref(), d, 7)?;
            let done = page.len() < 7;
            paged.extend(page);
            if done {
                break;
            }
        }
        assert_eq!(paged, whole, "{}: paged listing of {prefix:?}", e.name());
    }
    Ok(())
}

/// Brute-force longest stored prefix of `q`.
pub fn model_lpm<'m>(m: &'m Model, q: &[u8]) -> Option<(usize, &'m Vec<u8>)> {
    (1..=q.len())
        .rev()
        .find_map(|l| m.get(&q[..l]).map(|v| (l, v)))
}

fn check_lpm_query(e: &dyn KvEngine, m: &Model, q: &[u8], method: LpmMethod) -> CheckResult {
    let mut out = vec![9];
    let got = e.longest_prefix(q, method, &mut out)?;
    match model_lpm(m, q) {
        Some((len, v)) => {
            assert_eq!(got, Some(len), "{}: {method:?} of {q:?}", e.name());
            assert_eq!(&out, v, "{}: {method:?} value of {q:?}", e.name());
        }
        None => assert_eq!(got, None, "{}: {method:?} of {q:?} should miss", e.name()),
    }
    Ok(())
}

pub fn check_lpm(e: &dyn KvEngine, model: &Model) -> CheckResult {
    let mut queries: Vec<Vec<u8>> = Vec::new();
    for k in model.keys().step_by(7) {
        queries.push(k.clone());
        queries.push([k.as_slice(), b"/deadbeef/x"].concat());
        queries.push(k[..k.len().saturating_sub(3)].to_vec());
    }
    for q in [
        &b"abz"[..],
        b"abcd",
        b"abcd/ef",
        b"ds/laion/shard-00003/zzz",
        b"ds/laion/shard-00003",
        b"q/no/such/key",
        b"\x01",
        b"\x00\x01",
        b"b/\x00xyz",
        b"b\xff\xff\xff",
        b"\xff\xff\xff\xff\xff",
        b"\xff\xff/\x01\x02",
        b"\xff\xfe",
        b"kv/llama70b/00000000",
    ] {
        queries.push(q.to_vec());
    }
    let hits = queries
        .iter()
        .filter(|q| model_lpm(model, q).is_some())
        .count();
    assert!(
        hits > 0 && hits < queries.len(),
        "the query set needs both hits and misses"
    );
    for q in &queries {
        check_lpm_query(e, model, q, LpmMethod::PredecessorSeek)?;
    }
    // Bisect only on the prefix-closed kv chains: stored chains, extended, and diverging ones.
    let bisect = LpmMethod::Bisect { delimiter: b'/' };
    for (i, chain) in kv_chains().iter().enumerate() {
        let full = chain.join("/");
        check_lpm_query(e, model, full.as_bytes(), bisect)?;
        let extended = format!("{full}/{:08x}/{:08x}", i, i * 7919);
        check_lpm_query(e, model, extended.as_bytes(), bisect)?;
        let diverged = format!("{}/0000dead/{:08x}", chain[..chain.len() - 1].join("/"), i);
        check_lpm_query(e, model, diverged.as_bytes(), bisect)?;
        check_lpm_query(e, model, diverged.as_bytes(), LpmMethod::PredecessorSeek)?;
    }
    check_lpm_query(e, model, b"kx/llama70b/00000000", bisect)?; // a miss at the first segment
    Ok(())
}

pub fn check_counts(e: &dyn KvEngine, model: &Model) -> CheckResult {
    let ranges: [(&[u8], &[u8]); 8] = [
        (b"ds/laion/shard-00003/", b"ds/laion/shard-00003/\xff"),
        (b"ds/", b"ds0"),
        (b"", b"\xff\xff\xff\xff"),
        (b"kv/", b"kv0"),
        (b"\x00", b"\x00\x01"),
        (b"\xfe", b"\xff\x00"),
        (b"b", b"a"),
        (b"q", b"r"),
    ];
    for (s, end) in ranges {
        let want = if s < end {
            model.range(s.to_vec()..end.to_vec()).count() as u64
        } else {
            0
        };
        assert_eq!(
            e.count_range(s, end)?,
            want,
            "{}: count_range {s:?}..{end:?}",
            e.name()
        );
    }
    Ok(())
}
