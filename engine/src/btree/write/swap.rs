//! Compare-and-swap in one descent. The swap's condition is checked at the leaf that holds
//! the key, on the way down to change it: a swap that finds another value returns before
//! any page is copied (inner pages are copied only once a child reports a change), and one
//! that finds the expected value changes the leaf it already holds. Reading the value first
//! with [`WriteTxn::get`] and then applying the change took two descents and an owned copy
//! of the value (callgrind, docs/performance.md: a twelfth of a swap's instructions).

use super::{Mutation, WriteTxn};
use crate::error::Result;
use crate::page::{decode_overflow_run, ValueCell};

/// The condition of the swap being applied, and what the leaf held when it failed.
#[derive(Debug, Default)]
pub(crate) struct SwapCheck {
    /// The value the swap expects (meaningful when `expect_present`).
    pub(super) expected: Vec<u8>,
    /// False: the swap expects the key to be absent.
    expect_present: bool,
    /// Set at the leaf when the condition failed: the value found (None: absent).
    conflict: Option<Option<Vec<u8>>>,
}

impl WriteTxn<'_> {
    /// Applies `m` if `m`'s key holds `expected` now (None: the key is absent), as this
    /// transaction sees it. Returns `Ok(Ok(changed))` when the condition held (changed is
    /// false for a delete of an absent key) and `Ok(Err(current))` with the value found
    /// when it did not; then nothing is changed and nothing is logged.
    pub fn compare_and_apply(
        &mut self,
        m: Mutation<'_>,
        expected: Option<&[u8]>,
    ) -> Result<std::result::Result<bool, Option<Vec<u8>>>> {
        if self.root.is_none() {
            // An empty tree holds nothing: the condition is that the key is absent.
            if expected.is_some() {
                return Ok(Err(None));
            }
            return self.apply(m).map(Ok);
        }
        // In the writer's scratch: its buffer for the expected value is kept between swaps.
        let check = &mut self.scratch.swap_check;
        check.expected.clear();
        check.expect_present = expected.is_some();
        check
            .expected
            .extend_from_slice(expected.unwrap_or_default());
        check.conflict = None;
        self.checking_swap = true;
        let applied = self.apply_sorted(std::slice::from_ref(&m));
        self.checking_swap = false;
        let changed = applied?;
        if let Some(current) = self.scratch.swap_check.conflict.take() {
            return Ok(Err(current));
        }
        self.log_mutations(std::slice::from_ref(&m));
        Ok(Ok(changed))
    }

    /// At the leaf of a [`WriteTxn::compare_and_apply`]: None when the swap may go on,
    /// else the value found (None: absent), for [`WriteTxn::swap_failed`]. `current` is
    /// what the leaf holds for the key. Outside a swap the condition always holds.
    pub(super) fn swap_verdict(
        &self,
        current: Option<ValueCell<'_>>,
    ) -> Result<Option<Option<Vec<u8>>>> {
        if !self.checking_swap {
            return Ok(None);
        }
        let expected = self.scratch.swap_check.expected.as_slice();
        let holds = match (current, self.scratch.swap_check.expect_present) {
            (None, false) => true,
            (None, true) | (Some(_), false) => false,
            (Some(ValueCell::Inline(v)), true) => v == expected,
            (Some(cell @ ValueCell::Overflow { len, .. }), true) => {
                len as usize == expected.len() && self.owned_value(cell)? == expected
            }
        };
        if holds {
            return Ok(None);
        }
        Ok(Some(match current {
            Some(cell) => Some(self.owned_value(cell)?),
            None => None,
        }))
    }

    /// Records that the swap's condition failed, finding `current`.
    pub(super) fn swap_failed(&mut self, current: Option<Vec<u8>>) {
        self.scratch.swap_check.conflict = Some(current);
    }

    /// A copy of the value `cell` refers to, as this transaction sees it.
    pub(super) fn owned_value(&self, cell: ValueCell<'_>) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        match cell {
            ValueCell::Overflow { first, len }
                if self.scratch.books.overflow.contains_key(&first) =>
            {
                // This transaction encoded the run itself: it always decodes.
                let _ = decode_overflow_run(
                    &self.scratch.books.overflow[&first],
                    len,
                    self.ps,
                    &mut out,
                );
            }
            cell => super::read_value(self.pool, cell, &mut out)?,
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{entries, Fixture};
    use super::*;
    use crate::test_rng::seeded;

    #[test]
    fn a_swap_that_finds_another_value_copies_no_page_and_logs_nothing() {
        let mut fx = Fixture::new(10_000);
        let model = entries(&mut seeded(7), 3_000);
        fx.put_all(&model);
        assert!(fx.version.height >= 3, "a path of three pages or more");
        let (key, value) = model.iter().nth(1_234).expect("an entry");
        let (_, (outcome, copied, log)) = fx.commit(|txn| {
            let outcome = txn
                .compare_and_apply(Mutation::Put(key, b"new"), Some(b"not it"))
                .expect("swap");
            let copied = txn.scratch.books.pages.len() + txn.scratch.books.frees.len();
            (outcome, copied, txn.log.as_ref().map(|(n, _)| *n))
        });
        assert_eq!(
            outcome,
            Err(Some(value.clone())),
            "the value found comes back"
        );
        assert_eq!(copied, 0, "a failed swap copies and frees no page");
        assert_eq!(log, None, "not logging in this fixture");
        assert_eq!(fx.get(&fx.version, key), Some(value.clone()));
    }

    #[test]
    fn a_swap_that_finds_the_expected_value_changes_it_and_is_logged() -> Result<()> {
        let mut fx = Fixture::new(10_000);
        let model = entries(&mut seeded(8), 2_000);
        fx.put_all(&model);
        let (key, value) = model.iter().nth(777).expect("an entry");
        let cur = fx.version.clone();
        let mut txn = WriteTxn::new(
            &fx.pool,
            &mut fx.alloc,
            &mut fx.scratch,
            cur.seq + 1,
            cur.root.as_ref().map(|p| p.id()),
            cur.height,
            cur.entries,
        )
        .with_log();
        assert_eq!(
            txn.compare_and_apply(Mutation::Put(key, b"swapped"), Some(value))?,
            Ok(true)
        );
        assert_eq!(txn.get(key)?, Some(b"swapped".to_vec()));
        // Only the swap that held is in the log record.
        assert_eq!(
            txn.compare_and_apply(Mutation::Delete(key), Some(value))?,
            Err(Some(b"swapped".to_vec()))
        );
        let mut want = Vec::new();
        crate::wal::encode_ops(&mut want, b"", key, Some(b"swapped"));
        assert_eq!(txn.log_payload(), Some((1, want.as_slice())));
        Ok(())
    }

    #[test]
    fn absent_keys_and_values_in_overflow_pages_are_compared_too() -> Result<()> {
        let mut fx = Fixture::new(10_000);
        let big = vec![5u8; 20_000];
        let (_, outcomes) = fx.commit(|txn| -> Result<Vec<_>> {
            Ok(vec![
                // An empty tree: only "absent" holds.
                txn.compare_and_apply(Mutation::Put(b"k", b"v"), Some(b"v"))?,
                txn.compare_and_apply(Mutation::Put(b"k", &big), None)?,
                // Now present, in an overflow run this transaction wrote.
                txn.compare_and_apply(Mutation::Put(b"j", b"v"), Some(b"v"))?,
                txn.compare_and_apply(Mutation::Put(b"k", b"small"), None)?,
                txn.compare_and_apply(Mutation::Put(b"k", b"small"), Some(&big[1..]))?,
                txn.compare_and_apply(Mutation::Put(b"k", b"small"), Some(&big))?,
                // A delete of an absent key that expects it absent changes nothing.
                txn.compare_and_apply(Mutation::Delete(b"x"), None)?,
            ])
        });
        assert_eq!(
            outcomes?,
            vec![
                Err(None),
                Ok(true),
                Err(None),
                Err(Some(big.clone())),
                Err(Some(big.clone())),
                Ok(true),
                Ok(false),
            ]
        );
        // A committed overflow value, read from its pages.
        fx.commit(|txn| txn.apply(Mutation::Put(b"k", &big)).map(|_| ()))
            .1?;
        let (_, outcome) =
            fx.commit(|txn| txn.compare_and_apply(Mutation::Delete(b"k"), Some(&big)));
        assert_eq!(outcome?, Ok(true));
        assert_eq!(fx.get(&fx.version, b"k"), None);
        Ok(())
    }
}
