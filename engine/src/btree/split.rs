//! Where to cut an overfull node, and the separator keys between the pieces.

use crate::page::lcp;

/// Cuts a node whose entries take `sizes` bytes each (computed under the prefix shared by
/// all of them, an upper bound for every piece) plus `fixed` bytes per page, so that each
/// piece fits in `page_size`. Returns the index where each piece after the first starts;
/// empty when everything fits in one page. Appends (`append`) fill the left page, so
/// ascending inserts leave full pages behind; otherwise two pieces of near-equal size are
/// preferred.
pub fn cut_points(sizes: &[usize], fixed: usize, page_size: usize, append: bool) -> Vec<usize> {
    let total: usize = sizes.iter().sum();
    if fixed + total <= page_size {
        return Vec::new();
    }
    if !append && sizes.len() >= 2 {
        let mut best: Option<(usize, usize)> = None;
        let mut left = 0usize;
        for (c, s) in sizes.iter().enumerate().take(sizes.len() - 1) {
            left += s;
            let right = total - left;
            if fixed + left <= page_size && fixed + right <= page_size {
                let skew = left.abs_diff(right);
                if best.is_none_or(|(_, b)| skew < b) {
                    best = Some((c + 1, skew));
                }
            }
        }
        if let Some((c, _)) = best {
            return vec![c];
        }
    }
    let mut cuts = Vec::new();
    let mut used = 0usize;
    for (i, s) in sizes.iter().enumerate() {
        if used > 0 && fixed + used + s > page_size {
            cuts.push(i);
            used = 0;
        }
        used += s;
    }
    cuts
}

/// The shortest key `s` with `left < s <= right` (suffix truncation of separators).
pub fn shortest_separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    let l = lcp(left, right);
    right[..(l + 1).min(right.len())].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

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
