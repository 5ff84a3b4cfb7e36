// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Which cm_ids a read of debugfs `iw_cm/cm_ids` lists: those allocated
//! before its count line.  Pure (userspace-tested by `make hosttest`,
//! tools/statemachine/tests/table_window.rs).
//!
//! The table's numbers are handed out cyclically from 1 up to `u32::MAX`
//! (`xa_alloc_cyclic`); the allocator's `next` is the number it tries
//! first, 0 once it handed out `u32::MAX` (1 comes next).  A read keeps
//! `end`, the allocator's `next` at its count line: the numbers allocated
//! since are those from `end` up to the allocator's `next` now, cyclically.
//! Leaving them out, a read never lists more rows than its count (the
//! numbers allocated when it was taken), however long it takes.

/// What a read does with the number it found at or after its cursor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Resume {
    /// List it: it was allocated before the count line.
    List,
    /// Skip it and look again from this number, the first that may have
    /// been allocated before the count line.
    SkipTo(u32),
    /// No number from it on was allocated before the count line: the read
    /// is done.
    Done,
}

/// The allocator's `next` as a position on a line where 1 << 32 follows
/// `u32::MAX`.
fn position(next: u32) -> u64 {
    if next == 0 {
        1 << 32
    } else {
        next.into()
    }
}

/// What a read whose count line found the allocator at `end` does with
/// number `id`, now that the allocator is at `next`.
pub fn resume_at(id: u32, end: u32, next: u32) -> Resume {
    let (e, n, i) = (position(end), position(next), u64::from(id));
    if e <= n {
        // Allocated since: [e, n).  Above them only numbers from before a
        // wrap of the allocator.
        if i < e || i >= n {
            Resume::List
        } else {
            u32::try_from(n).map_or(Resume::Done, Resume::SkipTo)
        }
    } else if i >= n && i < e {
        // The allocator wrapped since: [e, 1 << 32) and [1, n) are new.
        Resume::List
    } else if i < n {
        // `n < e <= 1 << 32`: a number.
        Resume::SkipTo(n as u32)
    } else {
        Resume::Done
    }
}
