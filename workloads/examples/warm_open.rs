//! What warming the inner levels at open costs and saves, on the large scale's manifest
//! (50 M keys, 64 MiB pool): loads it into this engine once, then reopens it with the
//! data file dropped from the OS page cache, with and without `warm_inner_levels`, and
//! prints the open's time, the inner pages it read, and the pool misses of the first
//! 5,000 random gets after it. The numbers behind docs/fairness.md's "Inner pages warmed
//! at open" and the issue 16 entry of docs/performance.md.
//!
//! `cargo run --release -p aimeta-workloads --example warm_open -- [work dir] [scale]`
//! (defaults: /var/tmp/ai-meta-work-warm, large).

use std::path::{Path, PathBuf};
use std::time::Instant;

use aimeta_engine::{DataReads, Readable, Tree, TreeConfig};
use aimeta_workloads::scale::{Scale, LARGE};
use rand::{RngExt as _, SeedableRng as _};

const GETS: usize = 5_000;

fn drop_from_page_cache(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let file = std::fs::File::open(entry?.path())?;
        rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
    }
    Ok(())
}

fn open(dir: &Path, scale: &Scale, warm: bool) -> Result<Tree, aimeta_engine::OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(scale.budget_bytes)
            .data_reads(DataReads::Direct)
            .warm_inner_levels(warm),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let work = PathBuf::from(args.first().map_or("/var/tmp/ai-meta-work-warm", |s| s));
    let scale = match args.get(1).map(String::as_str) {
        None | Some("large") => LARGE,
        Some(other) => Scale::by_name(other).ok_or_else(|| format!("unknown scale {other}"))?,
    };
    let manifest = scale.manifest_beyond;
    let dir = work.join("manifest_beyond");
    if !dir.join("data").exists() {
        std::fs::create_dir_all(&dir)?;
        let tree = open(&dir, &scale, false)?;
        let t = Instant::now();
        tree.bulk_load(manifest.pairs())?;
        tree.checkpoint()?;
        println!(
            "loaded {} keys in {:.1} s",
            manifest.keys(),
            t.elapsed().as_secs_f64()
        );
    }
    for warm in [true, false] {
        drop_from_page_cache(&dir)?;
        let t = Instant::now();
        let tree = open(&dir, &scale, warm)?;
        let opened = t.elapsed();
        let m = tree.metrics();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(16);
        let before = tree.metrics();
        let t = Instant::now();
        for _ in 0..GETS {
            let key = manifest.nth_key(rng.random_range(0..manifest.keys()));
            tree.get(&key)?.ok_or("a stored key is missing")?;
        }
        let gets = t.elapsed();
        let used = tree.metrics().since(&before);
        println!(
            "warm_inner_levels({warm}): open {:.3} s, {} inner pages warmed ({} pages read, {} by readahead; height {}, {} file pages); {GETS} gets: {:.2} misses per get, {:.1} us per get",
            opened.as_secs_f64(),
            m.inner_pages_warmed,
            m.bm_pages_read,
            m.bm_readahead_pages,
            m.height,
            m.file_pages,
            used.bm_read_page_misses as f64 / GETS as f64,
            gets.as_secs_f64() * 1e6 / GETS as f64,
        );
    }
    Ok(())
}
