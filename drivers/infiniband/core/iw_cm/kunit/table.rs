// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Cases of the debugfs table of live cm_ids (`iw_cm/cm_ids`) and of the
//! stuck-handler watch's set, through iw_cm.ko's test-only interface
//! (`table_line`, `TableRead`, `running_ids`).

use super::{fake_provider::*, fake_ulp::*};
use crate::bindings;
use crate::iface;
use core::ptr;
use core::sync::atomic::Ordering::SeqCst;
use kernel::prelude::*;

/// The fields of `id`'s debugfs table line (iw_cm/cm_ids), split at
/// spaces into `out`; their number.
pub(super) fn table_fields<'a>(
    id: *mut bindings::iw_cm_id,
    buf: &'a mut [u8],
    out: &mut [&'a str],
) -> usize {
    // SAFETY: `id` is live and owned by the calling test.
    let Some(n) = (unsafe { iface::table_line(id, buf) }) else {
        return 0;
    };
    let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
    let mut k = 0;
    for f in line.trim_end().split(' ') {
        if k == out.len() {
            return out.len() + 1;
        }
        out[k] = f;
        k += 1;
    }
    k
}

pub(super) fn table_line_names_role_state_addresses_handler_and_references() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let l = create(&mut dev, 14)?;
    let a = create(&mut dev, 15)?;
    // Columns: id role state dev local remote mapped_local
    // mapped_remote queued delivering_ms event handler qp provider_refs.
    let lid = {
        let (mut buf, mut f) = ([0u8; 512], [""; 16]);
        assert_eq!(table_fields(l, &mut buf, &mut f), 14);
        assert!(f[0].parse::<u64>().is_ok());
        assert_eq!(f[1], "-");
        assert_eq!(f[2], "Idle");
        assert!(!f[3].is_empty());
        assert_eq!(f[4], "192.0.2.1:4420");
        assert_eq!(f[5], "192.0.2.2:4420");
        // Not mapped yet: unset.
        assert_eq!(f[6], "-");
        assert_eq!((f[8], f[9], f[10]), ("0", "-", "-"));
        // The fake ULP's handler, by symbol (`%ps`), not by address.
        assert!(f[11].contains("ulp_handler"));
        assert_eq!((f[12], f[13]), ("0", "0"));
        f[0].parse::<u64>().unwrap_or(0)
    };

    // SAFETY: `l` is live and owned by the test.
    assert_eq!(unsafe { bindings::iw_cm_listen(l, 2) }, 0);
    {
        let (mut buf, mut f) = ([0u8; 512], [""; 16]);
        assert_eq!(table_fields(l, &mut buf, &mut f), 14);
        assert_eq!(f[0].parse::<u64>().unwrap_or(0), lid);
        assert_eq!((f[1], f[2]), ("listener", "Listen"));
        assert_eq!(f[6], "192.0.2.1:4420");
    }

    assert_eq!(connect(a), 0);
    {
        let (mut buf, mut f) = ([0u8; 512], [""; 16]);
        assert_eq!(table_fields(a, &mut buf, &mut f), 14);
        assert!(f[0].parse::<u64>().unwrap_or(0) > lid);
        // iw_cm holds the QP from connect on; the fake provider took
        // its reference on the cm_id in connect.
        assert_eq!((f[1], f[2], f[12], f[13]), ("active", "ConnSent", "1", "1"));
    }

    // SAFETY: the test owns both ids.
    unsafe {
        bindings::iw_destroy_cm_id(a);
        bindings::iw_destroy_cm_id(l);
    }
    provider_release(a);
    assert!(wait_live(base));
    Ok(())
}

/// The cm_id number of `id` (the first field of its table line).
pub(super) fn table_number(id: *mut bindings::iw_cm_id) -> u32 {
    let (mut buf, mut f) = ([0u8; 512], [""; 16]);
    if table_fields(id, &mut buf, &mut f) != 14 {
        return 0;
    }
    f[0].parse().unwrap_or(0)
}

/// A whole read of debugfs `iw_cm/cm_ids` through iw_cm.ko's seq_file
/// iterator, `chunk` rows per read() (the seq_file core stops and
/// starts the iterator again each time its buffer is full): the count
/// line and the listed numbers, or `None` when they are not in strictly
/// increasing order (a number listed twice, or out of place).
pub(super) fn read_table(chunk: usize) -> Result<Option<(usize, KVec<u32>)>> {
    let mut t = iface::TableRead::default();
    let mut all = KVec::new();
    let mut ids = KVec::from_elem(0u32, chunk, GFP_KERNEL)?;
    loop {
        let n = t.read(&mut ids);
        if n == 0 {
            break;
        }
        all.extend_from_slice(&ids[..n], GFP_KERNEL)?;
    }
    let ordered = all.windows(2).all(|w| w[0] < w[1]);
    Ok(ordered.then_some((t.count, all)))
}

/// Registration and removal of many cm_ids keep the table consistent:
/// every live cm_id listed once, in number order, whatever the read's
/// chunk size; destroyed ones gone, their numbers not reused soon; the
/// count line equal to the live count when nothing changes.  5000 ids
/// make the XArray three levels deep.
pub(super) fn many_cm_ids_register_and_unregister_consistently() -> Result {
    const N: usize = 5000;
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let mut ids = KVec::with_capacity(N, GFP_KERNEL)?;
    let mut nums = KVec::with_capacity(N, GFP_KERNEL)?;
    for _ in 0..N {
        let id = create(&mut dev, 41)?;
        ids.push(id, GFP_KERNEL)?;
        nums.push(table_number(id), GFP_KERNEL)?;
    }
    assert!(nums.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(iface::live(), base + N);
    for chunk in [1, 7, 4096] {
        let Some((count, listed)) = read_table(chunk)? else {
            panic!("table read in chunks of {chunk} out of order");
        };
        assert_eq!(count, base + N);
        assert_eq!(listed.len(), count);
        assert!(nums.iter().all(|n| listed.binary_search(n).is_ok()));
    }
    // Every other one goes.
    for (i, &id) in ids.iter().enumerate() {
        if i % 2 == 1 {
            // SAFETY: the test owns the id.
            unsafe { bindings::iw_destroy_cm_id(id) };
        }
    }
    assert!(wait_live(base + N / 2));
    let Some((count, listed)) = read_table(13)? else {
        panic!("table read out of order after the removals");
    };
    assert_eq!((count, listed.len()), (base + N / 2, base + N / 2));
    for (i, n) in nums.iter().enumerate() {
        assert_eq!(listed.binary_search(n).is_ok(), i % 2 == 0);
    }
    // New ids get numbers after the last one (cyclic allocation).
    let last = nums[N - 1];
    for i in 0..N / 10 {
        let id = create(&mut dev, 41)?;
        assert!(table_number(id) > last);
        ids[2 * i + 1] = id;
    }
    for (i, &id) in ids.iter().enumerate() {
        if i % 2 == 0 || i < N / 5 {
            // SAFETY: the test owns the id (an old even one or a new one).
            unsafe { bindings::iw_destroy_cm_id(id) };
        }
    }
    assert!(wait_live(base));
    let Some((count, listed)) = read_table(64)? else {
        panic!("table read out of order at the end");
    };
    assert_eq!((count, listed.len()), (base, base));
    Ok(())
}

/// A read lists no cm_id created after its count line, however long it
/// takes, so its rows never outnumber its count; the next read does.
pub(super) fn a_read_lists_no_cm_id_created_after_its_count_line() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let old = create(&mut dev, 42)?;
    let mut t = iface::TableRead::default();
    // The count line only (no room for a row).
    assert_eq!(t.read(&mut []), 0);
    assert_eq!(t.count, base + 1);
    let mut new = [ptr::null_mut(); 5];
    for id in new.iter_mut() {
        *id = create(&mut dev, 42)?;
    }
    let mut rows = KVec::from_elem(0u32, base + 64, GFP_KERNEL)?;
    let mut n = 0;
    loop {
        let k = t.read(&mut rows[n..]);
        if k == 0 {
            break;
        }
        n += k;
    }
    assert!(n <= t.count);
    assert!(rows[..n].contains(&table_number(old)));
    for &id in &new {
        assert!(!rows[..n].contains(&table_number(id)));
    }
    let Some((count, listed)) = read_table(8)? else {
        panic!("table read out of order");
    };
    assert_eq!((count, listed.len()), (base + 6, base + 6));
    let mut all = [old; 6];
    all[1..].copy_from_slice(&new);
    for id in all {
        assert!(listed.contains(&table_number(id)));
        // SAFETY: the test owns the id.
        unsafe { bindings::iw_destroy_cm_id(id) };
    }
    assert!(wait_live(base));
    Ok(())
}

/// The stuck-handler watch's set holds the deliveries that are in a ULP
/// handler and nothing else: the watch visits those, not every cm_id.
pub(super) fn only_running_deliveries_are_in_the_watch_set() -> Result {
    reset();
    let base = iface::live();
    let mut dev = FakeDev::new()?;
    let a = create(&mut dev, 1)?;
    let b = create(&mut dev, 9)?;
    for id in [a, b] {
        assert_eq!(connect(id), 0);
        assert_eq!(upcall(id, EV_REPLY, 0), 0);
    }
    assert!(wait_until(|| NEVENTS.load(SeqCst) == 2));
    let mut running = [0u32; 4];
    assert!(wait_until(|| iface::running_ids(&mut [0u32; 4]) == 0));
    MODE.store(MODE_BLOCK_TAG1_CLOSE, SeqCst);
    assert_eq!(upcall(a, EV_CLOSE, 0), 0);
    assert!(wait_until(|| BLOCKED.load(SeqCst)));
    assert_eq!(iface::running_ids(&mut running), 1);
    assert_eq!(running[0], table_number(a));
    RELEASE.store(true, SeqCst);
    assert!(wait_until(|| !BLOCKED.load(SeqCst)));
    assert!(wait_until(|| iface::running_ids(&mut [0u32; 4]) == 0));
    for id in [a, b] {
        provider_release(id);
        // SAFETY: the test owns the ids.
        unsafe { bindings::iw_destroy_cm_id(id) };
    }
    assert!(wait_live(base));
    Ok(())
}

/// Whether numbers `a` and `b` share a leaf of the table's XArray.
fn same_leaf(a: u32, b: u32, leaf_shift: u32) -> bool {
    a >> leaf_shift == b >> leaf_shift
}

/// What the table reserves with no cm_id after a create or a destroy of
/// the cm_id numbered `num` in the churn, in the leaves it crossed (from
/// `from`): at most one number (the keeper of the cursor's leaf,
/// iw_cm_exports.c), in `num`'s leaf, never `num` while it lives, never
/// listed by a read of the table nor counted in it; `live` cm_ids are in
/// the table.  The number kept, if any.
fn check_reserved(from: u32, num: u32, alive: bool, live: usize) -> Result<Option<u32>> {
    let r = iface::ids_reserved(from);
    ensure!(r.count <= 1);
    let Some((count, listed)) = read_table(16)? else {
        pr_err!("table read out of order in the churn\n");
        return Err(EINVAL);
    };
    ensure!(count == live && listed.len() == live);
    ensure!(listed.contains(&num) == alive);
    if r.count == 0 {
        return Ok(None);
    }
    ensure!(same_leaf(r.last, num, r.leaf_shift));
    ensure!(if alive { r.last < num } else { r.last <= num });
    ensure!(!listed.contains(&r.last));
    ensure!(iface::event_slots(r.last).is_none());
    Ok(Some(r.last))
}

/// The table keeps the last entry of its cursor's XArray leaf reserved
/// once its cm_id is gone (so that churn does not free and allocate the
/// leaf on every create), one number at most: create and destroy in a
/// loop across four leaves leave at most one number reserved with no
/// cm_id in the leaves crossed, in the leaf of the last number handed
/// out (the one before is released when the cursor moves on), never
/// listed or counted as a cm_id; the numbers keep advancing, each
/// handed out once.  Before the churn, with no cm_id alive, nothing but
/// the keeper is reserved: no earlier case leaked a number (what is
/// reserved then is also said, as a KTAP comment).
pub(super) fn churn_keeps_at_most_one_number_reserved() -> Result {
    reset();
    let base = iface::live();
    let before = iface::ids_reserved(0);
    kernel::kunit::info(format_args!(
        "    # churn_keeps_at_most_one_number_reserved: {} numbers reserved with no cm_id before the churn (lowest {}, highest {}, keeper {}), {} cm_ids live\n",
        before.count, before.first, before.last, before.keeper, base
    ));
    // With no cm_id alive and none being created, the keeper is the only
    // number reserved: a reservation nobody releases would be a leak.
    if base == 0 {
        ensure!(before.count == usize::from(before.keeper != 0));
        ensure!(before.first == before.keeper);
    }
    let shift = before.leaf_shift;
    let leaf = 1usize << shift;
    let mut dev = FakeDev::new()?;
    // The churn's leaves: from the first number's on.
    let mut from = 0;
    // Destroys after which a number was kept; keepers in turn.
    let (mut prev, mut kept, mut keeper, mut keepers) = (0u32, 0usize, 0u32, 0usize);
    for _ in 0..4 * leaf + 1 {
        let id = create(&mut dev, 43)?;
        let num = table_number(id);
        if from == 0 {
            from = num >> shift << shift;
        }
        let alive = check_reserved(from, num, true, base + 1);
        // SAFETY: the test owns the id.
        unsafe { bindings::iw_destroy_cm_id(id) };
        ensure!(wait_live(base));
        alive?;
        // Advancing: never a number handed out before, nor a kept one.
        ensure!(num > prev);
        prev = num;
        if let Some(k) = check_reserved(from, num, false, base)? {
            kept += 1;
            if k != keeper {
                keeper = k;
                keepers += 1;
            }
        }
    }
    // The keeper was there after (nearly) every destroy, and moved on
    // with the cursor: one per leaf crossed.
    ensure!(kept >= 3 * leaf);
    ensure!(keepers >= 3);
    Ok(())
}
