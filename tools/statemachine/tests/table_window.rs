// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Userspace tests of which cm_ids a read of debugfs `iw_cm/cm_ids` lists
//! (table_window.rs, the same file the module compiles): a model of the
//! cyclic allocator, with and without a wrap during the read.

#[path = "../../../drivers/infiniband/core/iw_cm/table_window.rs"]
mod table_window;

use table_window::{resume_at, Resume};

/// The numbers a read lists out of `live` (sorted), walking as the
/// iterator does from number 1.
fn walk(live: &[u32], end: u32, next: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut from = 1u64;
    while let Some(&id) = live.iter().find(|&&i| u64::from(i) >= from) {
        match resume_at(id, end, next) {
            Resume::List => {
                out.push(id);
                from = u64::from(id) + 1;
            }
            Resume::SkipTo(n) => {
                assert!(n > id, "skip from {id} to {n} goes back");
                from = n.into();
            }
            Resume::Done => break,
        }
    }
    out
}

#[test]
fn nothing_allocated_since_lists_everything() {
    let live = [1, 5, 9, u32::MAX];
    for end in [0, 1, 6, 10, u32::MAX] {
        assert_eq!(walk(&live, end, end), live);
    }
}

#[test]
fn numbers_allocated_since_are_left_out() {
    // Allocated before: 3, 7 (and 4000, from before an earlier wrap).
    // Count line at 8; then 8, 9, 10 were allocated (next is 11).
    let live = [3, 7, 8, 9, 10, 4000];
    assert_eq!(walk(&live, 8, 11), [3, 7, 4000]);
}

#[test]
fn a_wrap_during_the_read_leaves_the_new_low_numbers_out() {
    // Count line with the allocator at u32::MAX - 1; then u32::MAX - 1,
    // u32::MAX, 1 and 2 were allocated (next is 3).
    let live = [2, 1, 5, 100, u32::MAX - 1, u32::MAX];
    let mut sorted = live;
    sorted.sort_unstable();
    assert_eq!(walk(&sorted, u32::MAX - 1, 3), [5, 100]);
}

#[test]
fn the_allocator_at_its_last_number() {
    // next == 0: u32::MAX was handed out, 1 comes next.
    let live = [1, 2, 50, u32::MAX];
    assert_eq!(walk(&live, 0, 0), live);
    // Count line at 50; 50 .. u32::MAX allocated since.
    assert_eq!(walk(&live, 50, 0), [1, 2]);
    // Count line when u32::MAX was the last; 1 and 2 allocated since.
    assert_eq!(walk(&live, 0, 3), [50, u32::MAX]);
}

#[test]
fn every_small_case_lists_exactly_the_old_numbers() {
    // A 4-bit model of the number space is not the real one: check the
    // rule directly instead, for every (id, end, next) near the edges.
    let edge = [1u32, 2, 3, 1000, u32::MAX - 2, u32::MAX - 1, u32::MAX, 0];
    for &end in &edge {
        for &next in &edge {
            for &id in edge.iter().filter(|&&i| i != 0) {
                let (e, n, i) = (pos(end), pos(next), u64::from(id));
                let new = if e <= n { i >= e && i < n } else { i >= e || i < n };
                let r = resume_at(id, end, next);
                assert_eq!(r == Resume::List, !new, "id {id} end {end} next {next}");
                if let Resume::SkipTo(to) = r {
                    assert!(u64::from(to) == n && to > id);
                }
            }
        }
    }
}

fn pos(next: u32) -> u64 {
    if next == 0 {
        1 << 32
    } else {
        next.into()
    }
}
