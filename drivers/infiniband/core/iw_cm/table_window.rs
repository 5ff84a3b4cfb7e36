// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Which cm_ids a read of debugfs `iw_cm/cm_ids` lists: those published
//! before its count line.  Pure (userspace-tested by `make hosttest`,
//! tools/statemachine/tests/table_window.rs).
//!
//! A cm_id is published in the table under the table's lock, which gives
//! it the next creation sequence number, a `u64` counted from 0 that never
//! wraps (at a billion cm_ids a second it would take 584 years).  A read
//! keeps `end`, the next sequence number at its count line, and lists a
//! cm_id only if its sequence number is below `end`: published before the
//! count line, and so counted in it.  A read then never lists more rows
//! than its count, however long it takes.
//!
//! The table's number (the XArray index) cannot say this: it is handed out
//! cyclically, so after the 32-bit allocator wraps a new cm_id gets a
//! number below a live one's, skipping the numbers still in use; and an
//! allocation that may sleep drops the table's lock while it allocates a
//! node, then takes the lowest free number from where the allocator stood
//! before, which another allocation may have freed meanwhile.  A window
//! of numbers ("those from the allocator's position at the count line to
//! its position now") hid live cm_ids from before the count line in both
//! cases.

/// What a read does with the cm_id it found at or after its cursor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Resume {
    /// List it: it was published before the count line.
    List,
    /// Skip it and look again from this number, the next one.
    SkipTo(u32),
    /// Skip it; it has the last number: the read is done.
    Done,
}

/// Whether a read whose count line found the next sequence number at
/// `end` lists a cm_id published with sequence number `seq`.
pub fn listed(seq: u64, end: u64) -> bool {
    seq < end
}

/// What a read whose count line found the next sequence number at `end`
/// does with the cm_id numbered `id`, published with sequence number
/// `seq`, the first at or after its cursor.
pub fn resume_at(id: u32, seq: u64, end: u64) -> Resume {
    if listed(seq, end) {
        Resume::List
    } else {
        id.checked_add(1).map_or(Resume::Done, Resume::SkipTo)
    }
}
