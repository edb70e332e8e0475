//! `check_integrity()` walks every page the tree references, overflow runs included: a
//! store whose scan would fail on an overflow page fails the check first, naming the page,
//! and so does a clean resident page whose image on disk is another one.
//!
//! Pages are changed on a simulated disk, at the documented offsets of the common page
//! header (docs/format.md): crc32c of bytes 4.. at 0, kind at 4, page number at 8, the
//! overflow value's length at 24.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aimeta_engine::storage::SimDisk;
use aimeta_engine::{OpenError, Readable, Tree, TreeConfig};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A closed store on a simulated disk: its data file, and the numbers of its overflow and
/// leaf pages.
struct Store {
    dir: tempfile::TempDir,
    disk: SimDisk,
    path: PathBuf,
    overflow: Vec<usize>,
    leaves: Vec<usize>,
}

impl Store {
    /// Changes the data file's bytes on the disk with `edit`.
    fn damage(&self, edit: impl FnOnce(&mut Vec<u8>)) -> TestResult {
        let mut bytes = self.disk.read_raw(&self.path).ok_or("no data file")?;
        edit(&mut bytes);
        self.disk.write_raw(&self.path, bytes);
        Ok(())
    }

    /// The store, opened.
    fn open(&self) -> Result<Tree, OpenError> {
        open(&self.disk, self.dir.path())
    }
}

const PAGE: usize = 4096;
const KIND_LEAF: u8 = 1;
const KIND_OVERFLOW: u8 = 3;
const BIG: usize = 20_000;

fn open(disk: &SimDisk, dir: &Path) -> Result<Tree, OpenError> {
    Tree::open(
        TreeConfig::new(dir)
            .cache_bytes(16 * PAGE as u64)
            .background_checkpoints(false)
            .storage(Arc::new(disk.clone())),
    )
}

fn seal(page: &mut [u8]) {
    let crc = crc32c::crc32c(&page[4..]);
    page[..4].copy_from_slice(&crc.to_le_bytes());
}

/// Page `from`'s image renumbered and sealed for place `to`, written there: what a stale
/// write of another image leaves behind.
fn plant_copy(bytes: &mut [u8], from: usize, to: usize) {
    let mut img = bytes[from * PAGE..(from + 1) * PAGE].to_vec();
    img[8..16].copy_from_slice(&(to as u64).to_le_bytes());
    seal(&mut img);
    bytes[to * PAGE..(to + 1) * PAGE].copy_from_slice(&img);
}

/// A closed, bulk-loaded store (so that every page image in the file is live) of small
/// values and one 20,000-byte value (an overflow run of five pages) on a new disk.
fn store() -> Result<Store, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let disk = SimDisk::new();
    let tree = open(&disk, dir.path())?;
    let mut items = vec![(b"big".to_vec(), vec![9u8; BIG])];
    items.extend((0..300u32).map(|i| (format!("small/{i:04}").into_bytes(), vec![7u8; 40])));
    tree.bulk_load(items)?;
    drop(tree);
    let path = dir.path().join("data.aimkv");
    let bytes = disk.read_raw(&path).ok_or("no data file")?;
    let kind_of = |p: usize| bytes[p * PAGE + 4];
    let pages = bytes.len() / PAGE;
    let overflow: Vec<usize> = (2..pages)
        .filter(|&p| {
            kind_of(p) == KIND_OVERFLOW
                && u64::from_le_bytes(
                    bytes[p * PAGE + 24..p * PAGE + 32]
                        .try_into()
                        .unwrap_or_default(),
                ) == BIG as u64
        })
        .collect();
    let leaves = (2..pages).filter(|&p| kind_of(p) == KIND_LEAF).collect();
    if overflow.len() != 5 {
        return Err(format!("expected one run of 5 overflow pages, found {overflow:?}").into());
    }
    Ok(Store {
        dir,
        disk,
        path,
        overflow,
        leaves,
    })
}

fn assert_check_names(tree: &Tree, page: usize, what: &str) -> TestResult {
    let e = tree.check_integrity().expect_err(what);
    let msg = e.to_string();
    assert!(msg.contains(&format!("page {page}")), "{what}: {msg}");
    Ok(())
}

#[test]
fn an_overflow_page_holding_a_leaf_image_fails_the_check() -> TestResult {
    let store = store()?;
    let o = store.overflow[2];
    store.damage(|bytes| plant_copy(bytes, store.leaves[0], o))?;
    let tree = store.open()?;
    assert_check_names(&tree, o, "an overflow page holding a leaf")?;
    assert!(tree.get(b"big").is_err(), "the read the check warns of");
    Ok(())
}

#[test]
fn an_overflow_page_of_another_value_or_with_a_bad_checksum_fails_the_check() -> TestResult {
    for damage in ["length", "checksum"] {
        let store = store()?;
        let o = store.overflow[4];
        let at = o * PAGE;
        store.damage(|bytes| match damage {
            "length" => {
                bytes[at + 24..at + 32].copy_from_slice(&(BIG as u64 + 1).to_le_bytes());
                seal(&mut bytes[at..at + PAGE]);
            }
            _ => bytes[at + 1000] ^= 0x40,
        })?;
        let tree = store.open()?;
        assert_check_names(&tree, o, damage)?;
    }
    Ok(())
}

#[test]
fn a_clean_resident_page_whose_disk_image_changed_fails_the_check() -> TestResult {
    let store = store()?;
    let tree = store.open()?;
    tree.check_integrity()?;
    // Every leaf is resident and clean now (the check read them). Another valid leaf
    // image, sealed for this place, is written underneath one of them: the pool would
    // serve it after an eviction without verifying it again.
    let victim = store.leaves[0];
    store.damage(|bytes| plant_copy(bytes, store.leaves[1], victim))?;
    assert_check_names(&tree, victim, "a leaf whose disk image is another leaf")?;
    Ok(())
}
