//! The longest key the table `kv(k bytea PRIMARY KEY, ...)` accepts: the primary key's btree
//! refuses an index tuple over `BTMaxItemSize` ("index row size ... exceeds btree version 4
//! maximum 2704"), so the key limit follows the server's page size.
//!
//! On a btree page (src/include/access/nbtree.h, version 4, PostgreSQL 12 and later):
//!
//! ```text
//! BTMaxItemSize = MAXALIGN_DOWN((BLCKSZ - MAXALIGN(SizeOfPageHeaderData + 3 * sizeof(ItemIdData))
//!                                - MAXALIGN(sizeof(BTPageOpaqueData))) / 3)
//!                 - MAXALIGN(sizeof(ItemPointerData))
//!               = MAXALIGN_DOWN((8192 - MAXALIGN(24 + 3 * 4) - 16) / 3) - 8 = 2704 on 8 KiB pages
//! ```
//!
//! (three tuples per page, less room for the heap TID a pivot tuple may gain). A leaf tuple
//! is `MAXALIGN(sizeof(IndexTupleData) + VARHDRSZ + key)` = `MAXALIGN(8 + 4 + key)`, so the
//! longest key is `BTMaxItemSize - 12` = **2,692 bytes** on 8 KiB pages. The test below
//! measures it against a throwaway cluster with real inserts of random (incompressible) keys.
//!
//! Compression: `index_form_tuple` compresses a datum over `TOAST_INDEX_TARGET` (512 bytes)
//! with pglz when that saves space, so a compressible key (a path of repeated hex segments)
//! can be indexed well past 2,692 bytes. Random bytes cannot be compressed, so 2,692 is the
//! limit every key is guaranteed, and the one the adapter enforces.
//!
//! A server of PostgreSQL 11 or older (btree version 3) accepts 8 bytes more; the limit
//! computed here is then merely conservative.

use crate::error::Result;
use postgres::Client;

/// What [`crate::Error::InvalidKey`] names as the limit.
pub(super) const LIMIT: &str = "PostgreSQL's btree index row limit for a bytea primary key";

/// `MAXALIGN`: 8 on every 64-bit server (`MAXIMUM_ALIGNOF`).
const MAX_ALIGN: usize = 8;
/// `SizeOfPageHeaderData`.
const PAGE_HEADER: usize = 24;
/// `sizeof(ItemIdData)`: a line pointer.
const ITEM_ID: usize = 4;
/// `sizeof(BTPageOpaqueData)`: the btree special space at a page's end.
const BTREE_OPAQUE: usize = 16;
/// `sizeof(ItemPointerData)`: a heap TID.
const ITEM_POINTER: usize = 6;
/// `sizeof(IndexTupleData)`: an index tuple's header (TID and t_info).
const INDEX_TUPLE_HEADER: usize = 8;
/// `VARHDRSZ`: the 4-byte varlena header of a bytea over 126 bytes.
const VARLENA_HEADER: usize = 4;

const fn align_up(n: usize) -> usize {
    n.div_ceil(MAX_ALIGN) * MAX_ALIGN
}

const fn align_down(n: usize) -> usize {
    n / MAX_ALIGN * MAX_ALIGN
}

/// `BTMaxItemSize` of a btree page of `block_size` bytes.
pub(super) const fn btree_max_item_size(block_size: usize) -> usize {
    align_down((block_size - align_up(PAGE_HEADER + 3 * ITEM_ID) - align_up(BTREE_OPAQUE)) / 3)
        - align_up(ITEM_POINTER)
}

/// The longest incompressible bytea key a btree on `block_size`-byte pages indexes.
pub(super) const fn btree_max_key_len(block_size: usize) -> usize {
    // BTMaxItemSize is MAXALIGNed, so MAXALIGN(12 + key) <= it exactly when 12 + key <= it.
    btree_max_item_size(block_size) - INDEX_TUPLE_HEADER - VARLENA_HEADER
}

/// The key limit on the server `client` is connected to, from its `block_size`.
pub(super) fn server_max_key_len(client: &mut Client) -> Result<usize> {
    let perr = |e| crate::error::Error::backend(super::NAME, "read block_size", e);
    let row = client
        .query_one("SELECT current_setting('block_size')::int4", &[])
        .map_err(perr)?;
    let block_size: i32 = row.try_get(0).map_err(perr)?;
    let block_size = usize::try_from(block_size).unwrap_or(8192);
    Ok(btree_max_key_len(block_size))
}

#[cfg(test)]
mod tests {
    use super::super::{cluster, PgEngine};
    use super::*;
    use crate::api::{KvEngine, OpenOptions};
    use crate::error::Error;
    use rand::{Rng as _, SeedableRng as _};

    #[test]
    fn the_formula_gives_postgres_own_2704_and_a_2692_byte_key_on_8_kib_pages() {
        assert_eq!(btree_max_item_size(8192), 2704); // the number in the server's error
        assert_eq!(btree_max_key_len(8192), 2692);
        assert_eq!(btree_max_item_size(32768), 10_896);
    }

    /// Binary search with real inserts, past the adapter's own check: the longest random
    /// key the server indexes is the limit the adapter reports, and one byte more is the
    /// server's "index row size exceeds maximum" error.
    #[test]
    fn measured_limit_of_the_throwaway_cluster_is_the_reported_one() -> Result<()> {
        if let Err(e) = cluster::bindir_from_env() {
            println!("PostgreSQL skipped: {e}");
            return Ok(());
        }
        let opts = OpenOptions {
            pg_url: Some(String::new()), // blank: a throwaway cluster, whatever the environment
            ..OpenOptions::default()
        };
        let engine = PgEngine::open(&opts)?;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5eed_2692);
        let mut insert = |len: usize| -> Result<bool> {
            let mut key = vec![0u8; len];
            rng.fill_bytes(&mut key);
            engine.pool().with(|c| {
                match c.client.execute(&c.put, &[&key, &b"v".as_slice()]) {
                    Ok(_) => Ok(true),
                    Err(e) if e.as_db_error().is_some() => Ok(false), // the index row size error
                    Err(e) => Err(Error::backend(super::super::NAME, "probe insert", e)),
                }
            })
        };
        let (mut fits, mut too_long) = (1usize, 8192usize);
        assert!(insert(fits)? && !insert(too_long)?);
        while too_long - fits > 1 {
            let mid = fits + (too_long - fits) / 2;
            if insert(mid)? {
                fits = mid;
            } else {
                too_long = mid;
            }
        }
        assert_eq!(fits, 2692, "measured on this server (8 KiB pages)");
        assert_eq!(engine.capabilities().max_key_len, Some(fits));
        Ok(())
    }
}
