//! Opening a tree directory: creating a new data file, or reading the newer valid
//! superblock copy and the free list of an existing one.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::config::{TreeConfig, MIN_CACHE_PAGES};
use crate::btree::Version;
use crate::error::{OpenError, Result};
use crate::filter::{FILTER_FILE, MAX_BITS_PER_KEY};
use crate::frame::{Allocator, Geometry};
use crate::page::{
    decode_freelist_page, KeyLengths, MetaReject, PageId, PageKind, Superblock, FORMAT_VERSION,
    META_LEN, OLDEST_READ_VERSION,
};
use crate::pool::{Access, BufferPool, PoolConfig};
use crate::storage::{DataReads, Storage, StorageError};
use crate::wal::{Wal, WalOpened, WAL_FILES};

/// Name of the data file inside the tree directory.
pub const DATA_FILE: &str = "data.aimkv";
/// Name of the lock file that keeps a second process out.
pub const LOCK_FILE: &str = "LOCK";

/// What opening produced.
pub struct Opened {
    pub pool: Arc<BufferPool>,
    pub version: Version,
    pub alloc: Allocator,
    pub superblock: Superblock,
    pub slot: u8,
    pub freelist_pages: Vec<PageId>,
    pub lock: fs::File,
    pub wal: WalOpened,
}

/// Checks the directory: created when missing; when it has no data file it must be empty.
fn prepare_dir(dir: &Path) -> Result<PathBuf, OpenError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OpenError::InvalidConfig {
            reason: format!(
                "{} is a file, not a directory: give TreeConfig::new a directory",
                dir.display()
            ),
        });
    }
    fs::create_dir_all(dir).map_err(|e| StorageError::io("create directory", dir, 0, e))?;
    let data = dir.join(DATA_FILE);
    if !data.exists() {
        let entries =
            fs::read_dir(dir).map_err(|e| StorageError::io("list directory", dir, 0, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StorageError::io("list directory", dir, 0, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != LOCK_FILE && name != FILTER_FILE && !WAL_FILES.contains(&name.as_str()) {
                return Err(OpenError::ForeignDirectory {
                    dir: dir.to_path_buf(),
                    found: name,
                });
            }
        }
    }
    Ok(data)
}

fn lock_dir(dir: &Path) -> Result<fs::File, OpenError> {
    let path = dir.join(LOCK_FILE);
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io("open", &path, 0, e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(fs::TryLockError::WouldBlock) => Err(OpenError::AlreadyOpen {
            dir: dir.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(e)) => Err(StorageError::io("lock", &path, 0, e).into()),
    }
}

fn capacity_pages(cfg: &TreeConfig, geo: Geometry) -> Result<usize, OpenError> {
    let budget = cfg.budget_bytes(geo.frame_size);
    let pages = budget / u64::from(geo.page_size);
    if pages < MIN_CACHE_PAGES {
        return Err(OpenError::CacheTooSmall {
            given: budget,
            min: MIN_CACHE_PAGES * u64::from(geo.page_size),
            min_pages: MIN_CACHE_PAGES,
            page_size: geo.page_size,
        });
    }
    Ok(pages as usize)
}

/// The durable free list of an existing tree.
struct FreeList {
    /// The free extents it records.
    extents: Vec<(PageId, u64)>,
    /// The pages that hold it.
    pages: Vec<PageId>,
}

/// Reads the free list the superblock names.
fn read_freelist(pool: &BufferPool, sb: &Superblock, data: &Path) -> Result<FreeList, OpenError> {
    let corrupt = |page: PageId, reason: String| OpenError::FreeListCorrupt {
        file: data.to_path_buf(),
        page,
        reason,
    };
    let mut extents = Vec::new();
    let mut pages = Vec::new();
    let mut next = sb.freelist;
    while next != 0 {
        if pages.len() as u64 >= sb.freelist_pages.max(1) * 2 + 16 {
            return Err(corrupt(
                next,
                format!(
                    "the list does not end: {} pages read, {} recorded",
                    pages.len(),
                    sb.freelist_pages
                ),
            ));
        }
        let buf = pool.read_run(next, 1, PageKind::FreeList)?;
        let h = crate::page::PageHeader::read(&buf)
            .ok_or_else(|| corrupt(next, "the page has no header".into()))?;
        let (ex, n) = decode_freelist_page(&buf, h.count, h.aux)
            .map_err(|reason| corrupt(next, reason.to_string()))?;
        extents.extend(ex.into_iter().map(|(s, l)| (s, u64::from(l))));
        pages.push(next);
        next = n;
    }
    Ok(FreeList { extents, pages })
}

/// Writes superblock copy `slot`.
pub fn write_superblock(storage: &dyn Storage, sb: &Superblock, slot: u8) -> Result<()> {
    let mut page = vec![0u8; sb.page_size as usize];
    sb.encode(&mut page);
    storage.write_at(&page, u64::from(slot) * u64::from(sb.page_size))?;
    Ok(())
}

/// Opens or creates the tree in `cfg.dir`.
pub fn open(cfg: &TreeConfig) -> Result<Opened, OpenError> {
    if cfg.key_filter_bits > MAX_BITS_PER_KEY {
        return Err(OpenError::InvalidConfig {
            reason: format!(
                "key_filter_bits({}) is more than {MAX_BITS_PER_KEY}: give 0 (no filter) to \
                 {MAX_BITS_PER_KEY}; 10 rejects about 99 % of absent keys",
                cfg.key_filter_bits
            ),
        });
    }
    let data = prepare_dir(&cfg.dir)?;
    let lock = lock_dir(&cfg.dir)?;
    let storage: Arc<dyn Storage> = cfg.opener.open_data(&data, true, cfg.data_reads)?;
    // A superblock an earlier process wrote may not be on disk yet; recovery is about to
    // rely on it (and let log records go), so make it durable first.
    storage.sync()?;
    // The superblock is read before the log is touched, so that a file this build must
    // refuse (a newer format) is left exactly as it was.
    let existing = if storage.len()? == 0 {
        None
    } else {
        Some(read_superblock(storage.as_ref())?)
    };
    let checkpointed_seq = existing.as_ref().map_or(0, |(sb, _)| sb.seq);
    let wal = Wal::open(cfg.opener.as_ref(), &cfg.dir, checkpointed_seq)?;
    let Some((sb, slot)) = existing else {
        return create(cfg, storage, lock, wal);
    };
    let geo = Geometry::new(sb.page_size, sb.frame_size).map_err(|reason| {
        OpenError::SuperblockCorrupt {
            file: data.clone(),
            first: reason.clone(),
            second: reason,
        }
    })?;
    let pool = Arc::new(BufferPool::new(
        storage,
        geo,
        PoolConfig {
            capacity_pages: capacity_pages(cfg, geo)?,
            scan_io: cfg.scan_io,
            fill_readaround_pages: cfg.fill_readaround_bytes as usize / geo.page_bytes(),
            share_images: cfg.data_reads == DataReads::Shared,
            reserve_buffers: cfg.reserve_cache,
        },
    ));
    let freelist = read_freelist(&pool, &sb, &data)?;
    let alloc = Allocator::new(geo, sb.page_count, freelist.extents);
    let root = if sb.root == 0 {
        None
    } else {
        let page = pool.get(sb.root, Access::Point)?;
        let want = if sb.height == 1 {
            PageKind::Leaf
        } else {
            PageKind::Inner
        };
        if page.kind() != want {
            return Err(crate::page::PageError::UnexpectedKind {
                file: data.clone(),
                page: sb.root,
                expected: want.name(),
                found: page.kind() as u8,
            }
            .into());
        }
        pool.set_pinned(&page, true);
        Some(page)
    };
    Ok(Opened {
        version: Version::new(sb.seq, root, sb.height, sb.entries).with_key_lengths(sb.key_lengths),
        pool,
        alloc,
        superblock: sb,
        slot,
        freelist_pages: freelist.pages,
        lock,
        wal,
    })
}

fn create(
    cfg: &TreeConfig,
    storage: Arc<dyn Storage>,
    lock: fs::File,
    wal: WalOpened,
) -> Result<Opened, OpenError> {
    let geo = Geometry::new(cfg.page_size, cfg.frame_size)
        .map_err(|reason| OpenError::InvalidConfig { reason })?;
    let capacity = capacity_pages(cfg, geo)?;
    let alloc = Allocator::new(geo, 0, []);
    let sb = Superblock {
        version: FORMAT_VERSION,
        page_size: geo.page_size,
        frame_size: geo.frame_size,
        seq: 0,
        root: 0,
        height: 0,
        entries: 0,
        page_count: alloc.page_count(),
        freelist: 0,
        freelist_pages: 0,
        free_pages: alloc.free_pages(),
        log_start: 0,
        generation: 0,
        key_lengths: KeyLengths::empty(),
    };
    storage.set_len(geo.offset(alloc.page_count()))?;
    write_superblock(storage.as_ref(), &sb, 0)?;
    write_superblock(storage.as_ref(), &sb, 1)?;
    storage.sync()?;
    let pool = Arc::new(BufferPool::new(
        storage,
        geo,
        PoolConfig {
            capacity_pages: capacity,
            scan_io: cfg.scan_io,
            fill_readaround_pages: cfg.fill_readaround_bytes as usize / geo.page_bytes(),
            share_images: cfg.data_reads == DataReads::Shared,
            reserve_buffers: cfg.reserve_cache,
        },
    ));
    Ok(Opened {
        pool,
        version: Version::empty(0),
        alloc,
        superblock: sb,
        slot: 0,
        freelist_pages: Vec::new(),
        lock,
        wal,
    })
}

/// Reads both superblock copies and returns the newer valid one and its slot. A copy
/// written by a newer format version refuses the open whatever the other copy says: opening
/// from the older copy would replay the log and overwrite what the newer build wrote.
fn read_superblock(storage: &dyn Storage) -> Result<(Superblock, u8), OpenError> {
    let file = storage.path().to_path_buf();
    let len = storage.len()?;
    let mut first = vec![0u8; META_LEN];
    storage.read_at(&mut first, 0)?;
    let a = Superblock::decode(&first);
    // The second copy sits one page in; when the first copy cannot say the page size, try
    // each size the engine can be configured with.
    let second_at: Vec<u64> = match &a {
        Ok(sb) => vec![u64::from(sb.page_size)],
        Err(_) => vec![4096, 8192, 16384, 32768],
    };
    let mut b: std::result::Result<Superblock, MetaReject> = Err(MetaReject::BadMagic([0; 8]));
    for at in second_at {
        if at + META_LEN as u64 > len {
            continue;
        }
        let mut buf = vec![0u8; META_LEN];
        storage.read_at(&mut buf, at)?;
        b = Superblock::decode(&buf);
        if matches!(b, Ok(_) | Err(MetaReject::TooNew(_))) {
            break;
        }
    }
    match (a, b) {
        (Err(MetaReject::TooNew(v)), _) | (_, Err(MetaReject::TooNew(v))) => {
            Err(OpenError::FormatTooNew {
                file,
                found: v,
                supported: FORMAT_VERSION,
            })
        }
        (Ok(x), Ok(y)) => Ok(if y.generation > x.generation {
            (y, 1)
        } else {
            (x, 0)
        }),
        (Ok(x), Err(_)) => Ok((x, 0)),
        (Err(_), Ok(y)) => Ok((y, 1)),
        (Err(MetaReject::TooOld(v)), _) | (_, Err(MetaReject::TooOld(v))) => {
            Err(OpenError::FormatTooOld {
                file,
                found: v,
                supported: OLDEST_READ_VERSION,
            })
        }
        (Err(MetaReject::BadMagic(m)), Err(MetaReject::BadMagic(_))) => {
            Err(OpenError::BadMagic { file, found: m })
        }
        (Err(x), Err(y)) => Err(OpenError::SuperblockCorrupt {
            file,
            first: x.to_string(),
            second: y.to_string(),
        }),
    }
}
