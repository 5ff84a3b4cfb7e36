// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Userspace tests of which cm_ids a read of debugfs `iw_cm/cm_ids` lists
//! (table_window.rs, the same file the module compiles), against a model
//! of the table: the XArray's cyclic allocator (`__xa_alloc_cyclic`, which
//! skips the numbers in use), the publication that gives a cm_id its
//! creation sequence number, and an allocation that drops the lock to
//! allocate (GFP_KERNEL) between reading the allocator's position and
//! taking a number.

#[path = "../../../drivers/infiniband/core/iw_cm/table_window.rs"]
mod table_window;

use std::collections::{BTreeMap, BTreeSet};
use table_window::{listed, resume_at, Resume};

/// The table, as iw_cm_exports.c keeps it.
struct Table {
    /// The largest number (u32::MAX in the module; smaller to wrap often).
    max: u32,
    /// The allocator's next number to try (`iwcm_ids_next`).
    next: u32,
    /// Numbers reserved, nothing published at them.
    reserved: BTreeSet<u32>,
    /// Published cm_ids: number -> creation sequence number.
    published: BTreeMap<u32, u64>,
    /// The next sequence number and the count line's number.
    seq: u64,
}

/// A read: its count line.
struct Read {
    count: usize,
    end: u64,
    /// The cm_ids published before it (number and sequence number).
    before: BTreeMap<u32, u64>,
}

impl Table {
    fn new(max: u32) -> Self {
        Self {
            max,
            next: 1,
            reserved: BTreeSet::new(),
            published: BTreeMap::new(),
            seq: 0,
        }
    }

    fn used(&self, id: u32) -> bool {
        self.reserved.contains(&id) || self.published.contains_key(&id)
    }

    /// The lowest free number in [from, max], if any.
    fn free_from(&self, from: u32) -> Option<u32> {
        (from.max(1)..=self.max).find(|&i| !self.used(i))
    }

    /// `__xa_alloc_cyclic` from the position `min` it read (the lock may
    /// have been dropped since): the lowest free number at or after it,
    /// else from 1; the allocator's next is the number after it.
    fn reserve_from(&mut self, min: u32) -> u32 {
        let id = self
            .free_from(min)
            .or_else(|| self.free_from(1))
            .expect("model table full");
        self.reserved.insert(id);
        self.next = if id == self.max { 1 } else { id + 1 };
        id
    }

    fn reserve(&mut self) -> u32 {
        self.reserve_from(self.next)
    }

    fn publish(&mut self, id: u32) {
        assert!(self.reserved.remove(&id));
        self.published.insert(id, self.seq);
        self.seq += 1;
    }

    fn create(&mut self) -> u32 {
        let id = self.reserve();
        self.publish(id);
        id
    }

    fn erase(&mut self, id: u32) {
        self.reserved.remove(&id);
        self.published.remove(&id);
    }

    /// The count line.
    fn head(&self) -> Read {
        Read {
            count: self.published.len(),
            end: self.seq,
            before: self.published.clone(),
        }
    }

    /// The rest of read `r` from its cursor, walking as table.rs's
    /// `row_from` does: one lookup at a time, skipping what it does not
    /// list.
    fn rows(&self, r: &Read) -> Vec<u32> {
        let mut out = Vec::new();
        let mut from = 1u32;
        while let Some((&id, &seq)) = self.published.range(from..).next() {
            match resume_at(id, seq, r.end) {
                Resume::List => {
                    out.push(id);
                    match id.checked_add(1) {
                        Some(n) => from = n,
                        None => break,
                    }
                }
                Resume::SkipTo(n) => {
                    assert!(n > id, "skip from {id} to {n} goes back");
                    from = n;
                }
                Resume::Done => break,
            }
        }
        out
    }

    /// Checks what read `r` lists now: exactly the cm_ids published
    /// before its count line and still live, in order, no more than its
    /// count.
    fn check(&self, r: &Read, what: &str) {
        let rows = self.rows(r);
        let want: Vec<u32> = self
            .published
            .iter()
            .filter(|(id, seq)| r.before.get(id) == Some(seq))
            .map(|(&id, _)| id)
            .collect();
        assert_eq!(rows, want, "{what}");
        assert!(rows.len() <= r.count, "{what}: more rows than the count");
    }
}

#[test]
fn the_sequence_number_decides() {
    assert!(listed(0, 1));
    assert!(!listed(1, 1));
    assert!(!listed(u64::MAX, 0));
    assert_eq!(resume_at(7, 3, 5), Resume::List);
    assert_eq!(resume_at(7, 5, 5), Resume::SkipTo(8));
    assert_eq!(resume_at(u32::MAX, 9, 5), Resume::Done);
    assert_eq!(resume_at(u32::MAX, 4, 5), Resume::List);
}

#[test]
fn nothing_published_since_lists_everything() {
    let mut t = Table::new(u32::MAX);
    for _ in 0..10 {
        t.create();
    }
    t.erase(3);
    let r = t.head();
    t.check(&r, "steady table");
    assert_eq!(t.rows(&r).len(), r.count);
}

#[test]
fn cm_ids_published_since_are_left_out() {
    let mut t = Table::new(u32::MAX);
    let old = [t.create(), t.create()];
    let r = t.head();
    let new = [t.create(), t.create(), t.create()];
    t.check(&r, "three created after the count line");
    let rows = t.rows(&r);
    assert!(old.iter().all(|i| rows.contains(i)));
    assert!(new.iter().all(|i| !rows.contains(i)));
}

#[test]
fn a_live_cm_id_from_before_a_wrap_is_listed() {
    // A long-lived listener holds number 2; four billion cm_ids later the
    // allocator is at its last number when a read takes its count line.
    let mut t = Table::new(u32::MAX);
    let first = t.create();
    let listener = t.create();
    t.erase(first);
    t.next = u32::MAX;
    let r = t.head();
    // The next cm_ids get u32::MAX, then 1 and 3: 2 is in use.
    let new = [t.create(), t.create(), t.create()];
    assert_eq!(new, [u32::MAX, 1, 3]);
    t.check(&r, "wrap during the read");
    assert_eq!(t.rows(&r), [listener]);
}

#[test]
fn a_wrapped_table_lists_old_and_new_numbers_in_number_order() {
    // Live cm_ids from both sides of a wrap, nothing created during the
    // read: all listed.
    let mut t = Table::new(u32::MAX);
    let a = t.create();
    t.next = u32::MAX - 1;
    let b = t.create();
    let c = t.create();
    let d = t.create();
    assert_eq!((b, c, d), (u32::MAX - 1, u32::MAX, 2));
    let r = t.head();
    assert_eq!(t.rows(&r), [a, d, b, c]);
}

#[test]
fn an_allocation_that_dropped_the_lock_does_not_hide_older_cm_ids() {
    // A GFP_KERNEL reservation reads the allocator at 10 and drops the
    // lock to allocate a node.  Meanwhile 10 .. 14 are created and 12 is
    // destroyed, and a read takes its count line (the allocator at 15).
    // The reservation then takes 12, the lowest free number from 10, and
    // leaves the allocator at 13, behind where the read found it.
    let mut t = Table::new(u32::MAX);
    for _ in 1..10 {
        t.create();
    }
    let min = t.next;
    assert_eq!(min, 10);
    for _ in 10..15 {
        t.create();
    }
    t.erase(12);
    let r = t.head();
    let late = t.reserve_from(min);
    assert_eq!((late, t.next), (12, 13));
    t.check(&r, "reserved, not published");
    t.publish(late);
    t.check(&r, "published after the count line");
    let rows = t.rows(&r);
    assert_eq!(rows.len(), 13);
    assert!(!rows.contains(&12));
    assert!(rows.contains(&10) && rows.contains(&11) && rows.contains(&14));
}

#[test]
fn a_child_published_after_the_count_line_is_left_out() {
    // A CONNECT_REQUEST's child: its number reserved in the upcall
    // before the count line, published at delivery after it.
    let mut t = Table::new(u32::MAX);
    t.create();
    let child = t.reserve();
    let r = t.head();
    assert_eq!(r.count, 1);
    t.publish(child);
    t.check(&r, "child published during the read");
    assert!(!t.rows(&r).contains(&child));
}

/// xorshift64*: a small deterministic generator (no crates).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_churn_with_wraps_and_dropped_locks() {
    // A number space of 40 wraps every few dozen creations; up to two
    // reservations at a time have dropped the lock; a read checked after
    // every step.
    for seed in 1..=200u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut t = Table::new(40);
        let mut pending: Vec<u32> = Vec::new(); // positions read, lock dropped
        let mut reserved: Vec<u32> = Vec::new(); // children not published
        let mut r = t.head();
        for step in 0..400 {
            let live = t.published.len() + t.reserved.len();
            match rng.below(8) {
                0 | 1 if live < 30 => {
                    t.create();
                }
                2 if live < 30 => reserved.push(t.reserve()),
                3 if !reserved.is_empty() => {
                    let i = rng.below(reserved.len() as u64) as usize;
                    t.publish(reserved.swap_remove(i));
                }
                4 if pending.len() < 2 => pending.push(t.next),
                5 if !pending.is_empty() && live < 30 => {
                    let min = pending.remove(0);
                    let id = t.reserve_from(min);
                    t.publish(id);
                }
                6 => {
                    let ids: Vec<u32> = t.published.keys().copied().collect();
                    if !ids.is_empty() {
                        t.erase(ids[rng.below(ids.len() as u64) as usize]);
                    }
                }
                _ => r = t.head(),
            }
            t.check(&r, &format!("seed {seed} step {step}"));
        }
    }
}
