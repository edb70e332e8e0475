//! Tests of the etcd adapter's throwaway cluster: the install hint, the quota, batches over
//! the limits, a member that dies, a member that cannot start, and cleanup after drop and
//! after the process holding the cluster is killed with SIGKILL.

use super::*;
use std::io::Write as _;

/// The engine on a throwaway cluster in `dir`, or `None` (printed) without etcd here.
fn open_or_skip(members: Members, dir: &Path) -> Result<Option<EtcdEngine>> {
    if let Err(e) = cluster::find_etcd() {
        let _ = writeln!(std::io::stderr(), "etcd skipped: {e}");
        return Ok(None);
    }
    let opts = OpenOptions {
        expected_data_bytes: 1 << 20,
        ..OpenOptions::default()
    };
    EtcdEngine::open(members, dir, &opts).map(Some)
}

fn tempdir() -> Result<tempfile::TempDir> {
    tempfile::tempdir().map_err(|e| Error::io("etcd", "create", "a temp dir", e))
}

fn test_err(what: &str) -> Error {
    Error::backend("etcd", "test", what.to_string())
}

#[test]
fn the_quota_follows_the_data_and_stops_at_8_gib() -> Result<()> {
    assert_eq!(quota_for(0)?, MIN_QUOTA_BYTES);
    assert_eq!(quota_for(1 << 30)?, (3 << 30) + BACKEND_SLACK);
    match quota_for(3 << 30) {
        Err(Error::EtcdQuota {
            need_bytes,
            max_bytes,
        }) => {
            assert_eq!(max_bytes, 8 << 30);
            assert!(need_bytes > max_bytes);
        }
        other => panic!("3 GiB of data gave {other:?}"),
    }
    let message = quota_for(3 << 30).err().map(|e| e.to_string());
    assert!(message.is_some_and(|m| m.contains("8 GiB")));
    Ok(())
}

#[test]
fn a_missing_binary_gives_an_install_hint() {
    let err = Error::EtcdUnavailable {
        searched: "looked in PATH and /usr/bin".into(),
    };
    assert!(err.is_unavailable());
    let msg = err.to_string();
    assert!(msg.contains("apt-get install etcd-server"), "{msg}");
    assert!(msg.contains("--etcd-endpoints"), "{msg}");
}

/// A batch over `--max-txn-ops` is split, every write lands, and the cluster's directory
/// (in the engine's directory) is gone after drop.
#[test]
fn a_batch_over_the_limits_lands_whole_and_drop_removes_the_cluster() -> Result<()> {
    let dir = tempdir()?;
    let Some(engine) = open_or_skip(Members::One, dir.path())? else {
        return Ok(());
    };
    let root = engine
        .cluster()
        .map(|c| c.root().to_path_buf())
        .ok_or_else(|| test_err("no cluster"))?;
    assert!(root.starts_with(dir.path()), "{}", root.display());
    assert!(root.join("member-0").is_dir());
    let keys: Vec<Vec<u8>> = (0..THROWAWAY_TXN_OPS + 100)
        .map(|i| format!("b/{i:06}").into_bytes())
        .collect();
    let ops: Vec<BatchOp<'_>> = keys
        .iter()
        .map(|k| BatchOp::Put { key: k, value: k })
        .collect();
    engine.write_batch(&ops)?;
    assert_eq!(engine.count_range(b"b/", b"b0")?, keys.len() as u64);
    let mut out = Vec::new();
    assert!(engine.get(keys[THROWAWAY_TXN_OPS].as_slice(), &mut out)?);
    assert_eq!(out, keys[THROWAWAY_TXN_OPS]);
    drop(engine);
    assert!(!root.exists(), "{} left behind after drop", root.display());
    Ok(())
}

/// On an existing cluster (`etcd_endpoints`) the engine keeps to a prefix of its own, splits
/// batches at etcd's default 128 operations, and deletes its keys on close.
#[test]
fn an_existing_cluster_is_used_under_a_prefix_and_left_clean() -> Result<()> {
    let dir = tempdir()?;
    let Some(owner) = open_or_skip(Members::One, dir.path())? else {
        return Ok(());
    };
    let endpoints = owner
        .cluster()
        .ok_or_else(|| test_err("no cluster"))?
        .endpoints()?;
    owner.put(b"theirs", b"kept")?;
    let opts = OpenOptions {
        etcd_endpoints: Some(endpoints),
        ..OpenOptions::default()
    };
    let guest = EtcdEngine::open(Members::Three, &dir.path().join("unused"), &opts)?;
    assert!(guest.cluster().is_none());
    let keys: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("g/{i:04}").into_bytes())
        .collect();
    let ops: Vec<BatchOp<'_>> = keys
        .iter()
        .map(|k| BatchOp::Put {
            key: k,
            value: b"v",
        })
        .collect();
    guest.write_batch(&ops)?;
    assert_eq!(guest.count_range(b"g/", b"g0")?, 300);
    assert_eq!(
        guest.count_range(&[0], &[0xFF])?,
        300,
        "the guest sees only its own keys"
    );
    let mut out = Vec::new();
    assert!(!guest.get(b"theirs", &mut out)?);
    let mut last = Vec::new();
    assert!(crate::emul::OrderedRead::last_key(&guest, &mut last)?);
    assert_eq!(last, b"g/0299");
    assert_eq!(owner.count_range(b"aimeta/", b"aimeta0")?, 300);
    drop(guest);
    assert_eq!(owner.count_range(b"aimeta/", b"aimeta0")?, 0);
    assert!(owner.get(b"theirs", &mut out)? && out == b"kept");
    Ok(())
}

/// A member killed under a three-member cluster (which still has a quorum) fails the next
/// calls with an error naming it.
#[test]
fn a_dead_member_is_named() -> Result<()> {
    let dir = tempdir()?;
    let Some(engine) = open_or_skip(Members::Three, dir.path())? else {
        return Ok(());
    };
    engine.put(b"k", b"v")?;
    let pids = engine
        .cluster()
        .ok_or_else(|| test_err("no cluster"))?
        .pids()?;
    let pid = pids
        .get(1)
        .copied()
        .ok_or_else(|| test_err("no member 1"))?;
    let target = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
        .ok_or_else(|| test_err("member 1 has no pid"))?;
    rustix::process::kill_process(target, rustix::process::Signal::KILL)
        .map_err(|e| Error::backend("etcd", "kill member 1", e))?;
    // The monitor polls every 50 ms; give it up to 30 s on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    let err = loop {
        match engine.get(b"k", &mut out) {
            Err(e) => break e,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(_) => return Err(test_err("no error after a member was killed")),
        }
    };
    match &err {
        Error::EtcdMemberDied { member, .. } => {
            assert!(member.starts_with("m1 ("), "{member}");
            assert!(member.contains(&format!("pid {pid}")), "{member}");
        }
        other => panic!("a killed member gave {other:?}"),
    }
    Ok(())
}

/// A member whose client port is taken exits at once: the start fails naming it, with the
/// end of its log, and nothing is left behind.
#[test]
fn a_member_that_cannot_start_is_named_with_its_log() -> Result<()> {
    if cluster::find_etcd().is_err() {
        return Ok(());
    }
    let dir = tempdir()?;
    let taken = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error::io("etcd", "bind", "127.0.0.1:0", e))?;
    let port = taken
        .local_addr()
        .map_err(|e| Error::io("etcd", "read address", "127.0.0.1", e))?
        .port();
    let peer = cluster::pick_ports(1)?;
    let config = ClusterConfig {
        members: 1,
        quota_bytes: MIN_QUOTA_BYTES,
        max_txn_ops: 128,
        max_request_bytes: 1 << 20,
        start_timeout: START_TIMEOUT,
    };
    let cluster = EtcdCluster::start_on(dir.path(), config, &[port, peer[0]])?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::backend("etcd", "runtime", e))?;
    let err = match wait_healthy(&rt, &cluster, START_TIMEOUT) {
        Err(e) => e.to_string(),
        Ok(()) => return Err(test_err("a member on a taken port became healthy")),
    };
    assert!(err.contains("m0 (http://127.0.0.1:"), "{err}");
    assert!(err.contains("address already in use"), "{err}");
    let root = cluster.root().to_path_buf();
    drop(cluster);
    assert!(!root.exists());
    Ok(())
}

const CHILD_ENV: &str = "AIMETA_ETCD_CLUSTER_CHILD";

/// Run only as the child of the test below: opens a three-member cluster under the
/// directory it is given, reports the cluster's directory and member pids, and blocks on
/// stdin until it is killed.
#[test]
fn child_holds_a_cluster_until_killed() -> Result<()> {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return Ok(()); // not the child: nothing to do
    };
    let engine = EtcdEngine::open(Members::Three, Path::new(&dir), &OpenOptions::default())?;
    engine.put(b"k", b"v")?;
    let cluster = engine.cluster().ok_or_else(|| test_err("no cluster"))?;
    let pids: Vec<String> = cluster.pids()?.iter().map(u32::to_string).collect();
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "ROOT={}", cluster.root().display());
    let _ = writeln!(stdout, "PIDS={}", pids.join(","));
    let _ = stdout.flush();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    Ok(())
}

/// SIGKILL to the process holding a live cluster: no Drop runs, yet the watchdog must stop
/// every member and remove the cluster's directory.
#[test]
fn no_member_or_data_survives_a_sigkill() -> std::result::Result<(), Box<dyn std::error::Error>> {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    if std::env::var_os(CHILD_ENV).is_some() {
        return Ok(()); // the child runs only its own test
    }
    if let Err(e) = cluster::find_etcd() {
        println!("etcd skipped: {e}");
        return Ok(());
    }
    let dir = tempdir()?;
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "etcd::tests::child_holds_a_cluster_until_killed",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let mut root = None;
    let mut pids = Vec::new();
    for line in std::io::BufReader::new(stdout)
        .lines()
        .map_while(|l| l.ok())
    {
        if let Some(r) = line.strip_prefix("ROOT=") {
            root = Some(std::path::PathBuf::from(r));
        }
        if let Some(p) = line.strip_prefix("PIDS=") {
            pids = p.split(',').filter_map(|p| p.parse::<i32>().ok()).collect();
            break;
        }
    }
    let root = root.ok_or("the child never reported a cluster")?;
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(root.join("member-2").is_dir(), "{}", root.display());
    let target = rustix::process::Pid::from_raw(i32::try_from(child.id())?).ok_or("no pid")?;
    rustix::process::kill_process(target, rustix::process::Signal::KILL)?;
    let status = child.wait()?;
    assert!(!status.success(), "the child should die of SIGKILL");
    // A member is gone once /proc no longer shows it running (the reaper may take a moment
    // to collect it, so a zombie counts as gone).
    let running = |pid: &i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(") ")
                    .next()
                    .map(|rest| !rest.starts_with(['Z', 'X']))
            })
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while (root.exists() || pids.iter().any(running)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !root.exists(),
        "{} left behind after SIGKILL",
        root.display()
    );
    let left: Vec<&i32> = pids.iter().filter(|p| running(p)).collect();
    assert!(
        left.is_empty(),
        "etcd members {left:?} still run after SIGKILL"
    );
    Ok(())
}

/// The bounds of `w`'s windows in turn, each advanced with `seen` from `held`, until the
/// last (at most `max` of them).
fn window_bounds(mut w: reads::Windows, held: &[bool], max: usize) -> Vec<Option<Vec<u8>>> {
    let mut bounds = vec![w.bound().map(<[u8]>::to_vec)];
    let mut i = 0;
    while !w.is_last() && bounds.len() < max {
        w.advance(held.get(i).copied().unwrap_or(false));
        bounds.push(w.bound().map(<[u8]>::to_vec));
        i += 1;
    }
    bounds
}

fn some(b: &[u8]) -> Option<Vec<u8>> {
    Some(b.to_vec())
}

#[test]
fn a_walk_starts_in_its_neighbourhood_and_widens_to_its_end() {
    // A listing's re-seek past `ds/laion/shard-00012/`: the window past it is empty, the
    // next sibling holds shard 13.
    let w = reads::Windows::new(b"ds/laion/shard-000120", some(b"ds/laion0"));
    assert_eq!(
        window_bounds(w, &[false, true, false, false], 5),
        [
            some(b"ds/laion/shard-00013"),
            some(b"ds/laion/shard-00014"),
            some(b"ds/laion/shard-0002"),
            some(b"ds/laion/shard-0003"),
            some(b"ds/laion/shard-001"),
        ]
    );
    // A scan from a sample: keys in every window, so each is a level wider.
    let w = reads::Windows::new(b"ds/laion/shard-00012/sample-00000042", None);
    assert_eq!(
        window_bounds(w, &[true, true], 3),
        [
            some(b"ds/laion/shard-00012/sample-0000005"),
            some(b"ds/laion/shard-00012/sample-000001"),
            some(b"ds/laion/shard-00012/sample-00001"),
        ]
    );
    // Nothing past the start: siblings and levels alternate up to the walk's end.
    let start = b"ds/laion/shard-000600";
    let w = reads::Windows::new(start, some(b"ds/laion0"));
    let bounds = window_bounds(w, &[], 1000);
    assert_eq!(bounds.last(), Some(&some(b"ds/laion0")));
    assert!(bounds.len() <= 2 * start.len(), "{}", bounds.len());
    assert!(bounds.windows(2).all(|p| p[0] < p[1]), "{bounds:?}");
    // A prefix scan: the start's neighbourhood already reaches the end, one window.
    let w = reads::Windows::new(b"ds/laion/shard-00012/", some(b"ds/laion/shard-000120"));
    assert_eq!(window_bounds(w, &[], 10), [some(b"ds/laion/shard-000120")]);
    // A one-byte start and an unbounded end: one window, to the end of the key space.
    assert_eq!(
        window_bounds(reads::Windows::new(b"k", None), &[], 10),
        [None]
    );
    // Trailing 0xFF bytes have no successor of their own: the window goes a byte up.
    let w = reads::Windows::new(&[b'a', 0xFF, 0x05], None);
    assert_eq!(
        window_bounds(w, &[false, false], 10),
        [some(b"b"), some(b"c"), None]
    );
}

/// Scans and listings from many starts, with small and large limits, against a model, on
/// a key set with gaps, keys that are prefixes of others and 0x00/0xFF bytes: the windows
/// a walk narrows to lose and repeat no key.
#[test]
fn narrowed_walks_match_a_model() -> Result<()> {
    use std::collections::BTreeMap;
    let dir = tempdir()?;
    let Some(engine) = open_or_skip(Members::One, dir.path())? else {
        return Ok(());
    };
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for shard in (0..40u32).filter(|s| s % 7 != 3) {
        for sample in (0..30u32).filter(|i| (i * shard) % 11 != 5) {
            let k = format!("ds/laion/shard-{shard:05}/sample-{sample:08}").into_bytes();
            model.insert(k.clone(), k);
        }
    }
    for k in [
        &b"ds"[..],
        b"ds/laion/shard-00003",
        b"ds/laion/z",
        b"dt",
        &[0x00],
        &[0x00, 0xFF],
        &[b'd', b's', 0xFF],
        &[0xFF],
        &[0xFF, 0xFF, 0x00],
    ] {
        model.insert(k.to_vec(), b"v".to_vec());
    }
    let pairs: Vec<KvPair> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    engine.bulk_load(&mut pairs.into_iter())?;
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    let mut starts: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"ds/laion/shard-00003/".to_vec(),
        b"ds/laion/shard-000030".to_vec(),
        b"ds/laion/shard-00039/sample-00000029".to_vec(),
        b"ds/laion/shard-00040".to_vec(),
        vec![0xFF, 0xFF],
    ];
    for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 13 == 0) {
        starts.push(k.clone());
        starts.push(emul::key_successor(k));
        let mut bumped = k.clone();
        if let Some(b) = bumped.last_mut().filter(|b| **b < 0xFF) {
            *b += 1;
        }
        starts.push(bumped);
        if i % 2 == 0 {
            starts.push(k[..k.len() / 2].to_vec());
        }
    }
    for start in &starts {
        for limit in [1usize, 3, 40, 1000] {
            let mut got = Vec::new();
            let n = engine.scan_range(start, limit, &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()));
            })?;
            let want: Vec<(Vec<u8>, Vec<u8>)> = model
                .range(start.clone()..)
                .take(limit)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(n, want.len(), "scan_range from {start:?} limit {limit}");
            assert_eq!(got, want, "scan_range from {start:?} limit {limit}");
        }
    }
    // Listings of shards from each shard on, as manifest_list asks, and of the whole space.
    for shard in 0..42u32 {
        let after = format!("ds/laion/shard-{shard:05}").into_bytes();
        for (prefix, limit) in [
            (&b"ds/laion/"[..], 20usize),
            (b"ds/laion/", 1000),
            (b"", 50),
        ] {
            let mut got = Vec::new();
            engine.list_delimited(prefix, Some(&after), b'/', limit, &mut |item| {
                got.push(match item {
                    crate::api::ListItem::Key(k) => (false, k.to_vec()),
                    crate::api::ListItem::CommonPrefix(p) => (true, p.to_vec()),
                });
            })?;
            let mut want: Vec<(bool, Vec<u8>)> = Vec::new();
            for k in model.keys().filter(|k| k.starts_with(prefix)) {
                let item = match k[prefix.len()..].iter().position(|&b| b == b'/') {
                    Some(i) => (true, k[..prefix.len() + i + 1].to_vec()),
                    None => (false, k.clone()),
                };
                if want.last() != Some(&item) {
                    want.push(item);
                }
            }
            want.retain(|(_, b)| b.as_slice() > after.as_slice());
            want.truncate(limit);
            assert_eq!(got, want, "list {prefix:?} after {after:?} limit {limit}");
        }
    }
    Ok(())
}
