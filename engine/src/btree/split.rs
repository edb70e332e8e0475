//! Where to cut an overfull node, and the separator keys between the pieces. The one
//! split policy of the tree: leaves and inner nodes differ only in how a run of their
//! entries is measured.

use crate::page::{lcp, LeafEntry, LeafSizer};

/// Where to cut `len` entries so that each piece fits in `page_size`: the index where
/// each piece after the first starts, empty when everything fits in one page. Appends
/// (`append`) fill the left page, so ascending inserts leave full pages behind; otherwise
/// two pieces of near-equal size are preferred.
///
/// A piece is measured as a run `R` grown one entry at a time from `empty`:
/// `grow(run, first, i)` is the run of entries `first..i` with entry `i` appended, and
/// `bytes(&run)` its exact size as one page. Growing a run never makes it smaller in the
/// cases that matter here: the balanced search stops at the first left piece that does
/// not fit.
pub fn cut_runs<R: Copy>(
    len: usize,
    empty: R,
    grow: impl Fn(R, usize, usize) -> R,
    bytes: impl Fn(&R) -> usize,
    page_size: usize,
    append: bool,
) -> Vec<usize> {
    let run_of = |first: usize, end: usize| (first..end).fold(empty, |run, i| grow(run, first, i));
    if bytes(&run_of(0, len)) <= page_size {
        return Vec::new();
    }
    if !append && len >= 2 {
        if let Some(cut) = crossing_cut(len, &run_of, &bytes, page_size) {
            return vec![cut];
        }
        let mut best: Option<(usize, usize)> = None;
        let mut left = empty;
        for cut in 1..len {
            left = grow(left, 0, cut - 1);
            let left_bytes = bytes(&left);
            if left_bytes > page_size {
                break;
            }
            let right_bytes = bytes(&run_of(cut, len));
            if right_bytes <= page_size {
                let skew = left_bytes.abs_diff(right_bytes);
                if best.is_none_or(|(_, best_skew)| skew < best_skew) {
                    best = Some((cut, skew));
                }
            }
        }
        if let Some((cut, _)) = best {
            return vec![cut];
        }
    }
    let mut cuts = Vec::new();
    let mut first = 0;
    let mut run = empty;
    for i in 0..len {
        let next = grow(run, first, i);
        if i > first && bytes(&next) > page_size {
            cuts.push(i);
            first = i;
            run = grow(empty, i, i);
        } else {
            run = next;
        }
    }
    cuts
}

/// The balanced cut of [`cut_runs`] found by bisection: the left piece grows and the
/// right one shrinks as the cut moves right, so the least skew is at the first cut whose
/// left piece is at least as large as its right one, or at the cut before it (preferred
/// on a tie, as the scan from the left does). Measuring a cut takes one pass over the
/// entries, so this takes a few passes where trying every cut takes one per entry. None
/// when neither of the two gives pieces that fit: the caller then tries every cut.
fn crossing_cut<R>(
    len: usize,
    run_of: &impl Fn(usize, usize) -> R,
    bytes: &impl Fn(&R) -> usize,
    page_size: usize,
) -> Option<usize> {
    let sides = |cut: usize| (bytes(&run_of(0, cut)), bytes(&run_of(cut, len)));
    // The first cut in 1..len with left >= right, or len when there is none.
    let (mut lo, mut hi) = (1, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (left, right) = sides(mid);
        if left >= right {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let fits = |(left, right): (usize, usize)| left <= page_size && right <= page_size;
    let candidates = [
        lo.checked_sub(1).filter(|&c| c >= 1),
        (lo < len).then_some(lo),
    ];
    let mut best: Option<(usize, usize)> = None;
    for cut in candidates.into_iter().flatten() {
        let (left, right) = sides(cut);
        if fits((left, right)) {
            let skew = left.abs_diff(right);
            if best.is_none_or(|(_, best_skew)| skew < best_skew) {
                best = Some((cut, skew));
            }
        }
    }
    best.map(|(cut, _)| cut)
}

/// [`cut_runs`] for entries whose sizes add up: each takes `sizes[i]` bytes (computed
/// under the prefix shared by all of them, an upper bound for every piece), plus `fixed`
/// bytes per page. Inner nodes are cut this way.
pub fn cut_points(sizes: &[usize], fixed: usize, page_size: usize, append: bool) -> Vec<usize> {
    cut_runs(
        sizes.len(),
        0usize,
        |used, _, i| used + sizes[i],
        |used| fixed + used,
        page_size,
        append,
    )
}

/// [`cut_runs`] for leaf entries (ascending), with exact sizes: each piece gets its own
/// prefix and restarts. `lcp_prev` holds each key's common prefix with the one before
/// (the writer has it from the decoded leaf, `LeafNode::decode_borrowed`): for ascending keys the prefix a run's keys share is the least of those, so measuring
/// any run is then arithmetic, not the two key comparisons per entry (each up to a
/// kilobyte for path keys) that measuring every candidate piece from its keys would take.
pub fn leaf_cut_points(
    entries: &[LeafEntry<'_>],
    lcp_prev: &[u32],
    page_size: usize,
    append: bool,
) -> Vec<usize> {
    debug_assert_eq!(entries.len(), lcp_prev.len());
    cut_runs(
        entries.len(),
        LeafSizer::default(),
        |run: LeafSizer, first, i| {
            let e = &entries[i];
            let stored = e.value.stored_len();
            if i == first {
                run.with(e.key.len(), 0, e.key.len(), stored)
            } else {
                let shared = lcp_prev[i] as usize;
                run.with(e.key.len(), shared, shared, stored)
            }
        },
        LeafSizer::size,
        page_size,
        append,
    )
}

/// The shortest key `s` with `left < s <= right` (suffix truncation of separators).
pub fn shortest_separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    let l = lcp(left, right);
    right[..(l + 1).min(right.len())].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::LeafNode;
    use crate::test_rng::{key, seeded};
    use rand::RngExt as _;

    fn cuts_of(entries: &[LeafEntry<'_>], page_size: usize, append: bool) -> Vec<usize> {
        let mut lcps = Vec::new();
        LeafNode::lcps_of(entries, &mut lcps);
        leaf_cut_points(entries, &lcps, page_size, append)
    }

    #[test]
    fn balanced_and_append_cuts() {
        let sizes = vec![100; 50];
        assert!(cut_points(&sizes, 36, 8192, false).is_empty());
        assert_eq!(cut_points(&sizes, 36, 4096, false), vec![25]);
        assert_eq!(cut_points(&sizes, 36, 4096, true), vec![40]);
        let big = vec![1500, 1500, 1500];
        assert_eq!(cut_points(&big, 36, 4096, false), vec![1]);
    }

    #[test]
    fn leaf_cuts_give_pieces_that_fit() {
        let mut rng = seeded(0x2545_F491_4F6C_DD1D);
        for append in [false, true] {
            let mut keys = std::collections::BTreeSet::new();
            while keys.len() < 400 {
                let mut k = b"kv/llama70b/".to_vec();
                k.extend(key(&mut rng, 30));
                keys.insert(k);
            }
            let entries: Vec<_> = keys
                .iter()
                .map(|k| LeafEntry::inline(k, &[7u8; 40]))
                .collect();
            let cuts = cuts_of(&entries, 4096, append);
            assert!(!cuts.is_empty());
            let mut b = vec![0];
            b.extend(&cuts);
            b.push(entries.len());
            for w in b.windows(2) {
                assert!(w[0] < w[1]);
                assert!(LeafNode::encoded_len(&entries[w[0]..w[1]]) <= 4096);
            }
        }
    }

    #[test]
    fn a_leaf_that_fits_is_not_cut_and_a_balanced_cut_is_even() {
        let entries: Vec<_> = (0..60u32)
            .map(|i| LeafEntry::inline(format!("key-{i:04}").as_bytes(), &[1u8; 100]))
            .collect();
        assert!(cuts_of(&entries, 8192, false).is_empty());
        let cuts = cuts_of(&entries, 4096, false);
        assert_eq!(cuts, vec![30], "equal entries split in the middle");
        let appended = cuts_of(&entries, 4096, true);
        assert_eq!(appended.len(), 1);
        assert!(appended[0] > 30, "appends fill the left page: {appended:?}");
        let left = LeafNode::encoded_len(&entries[..appended[0]]);
        assert!(left <= 4096);
        assert!(LeafNode::encoded_len(&entries[..appended[0] + 1]) > 4096);
    }

    #[test]
    fn the_bisected_balanced_cut_is_the_least_skewed_of_all_cuts() {
        let mut rng = seeded(14);
        let mut checked = 0;
        for round in 0..1000 {
            let mut keys = std::collections::BTreeSet::new();
            let n = rng.random_range(2..120);
            while keys.len() < n {
                // Path-like keys (long shared prefixes) in some rounds, short ones in others.
                let mut k = if round % 2 == 0 {
                    vec![b'p'; 300]
                } else {
                    Vec::new()
                };
                k.extend(key(&mut rng, 40));
                keys.insert(k);
            }
            let entries: Vec<_> = keys
                .iter()
                .map(|k| LeafEntry::inline(k, &vec![3u8; rng.random_range(0..400)]))
                .collect();
            let size = |r: &[LeafEntry<'_>]| LeafNode::encoded_len(r);
            if size(&entries) <= 4096 {
                continue;
            }
            let mut want: Option<(usize, usize)> = None;
            for cut in 1..entries.len() {
                let (l, r) = (size(&entries[..cut]), size(&entries[cut..]));
                if l <= 4096 && r <= 4096 && want.is_none_or(|(_, s)| l.abs_diff(r) < s) {
                    want = Some((cut, l.abs_diff(r)));
                }
            }
            if let Some((cut, _)) = want {
                assert_eq!(cuts_of(&entries, 4096, false), vec![cut], "round {round}");
                checked += 1;
            }
        }
        assert!(checked > 60, "{checked} rounds had a balanced cut");
    }

    #[test]
    fn separators_are_short_and_between() {
        assert_eq!(
            shortest_separator(b"shard-01/sample-99", b"shard-02/sample-00"),
            b"shard-02".to_vec()
        );
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc".to_vec());
        let s = shortest_separator(b"a\x00", b"a\x01");
        assert!(s.as_slice() > &b"a\x00"[..] && s.as_slice() <= &b"a\x01"[..]);
    }
}
