// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The table of live cm_ids (debugfs `iw_cm/cm_ids`, `iw_cm/count`) and the
//! stuck-handler report.  iwcm.c has neither: an operator whose unplug hangs
//! sees hung-task reports and has to read stacks to learn which ULP handler
//! holds everything up.
//!
//! Every cm_id is on [`REGISTRY`] from its creation (a CONNECT_REQUEST's
//! child: from its request's delivery; it is allocated in the upcall,
//! where the table cannot grow, and counted in `iw_cm/count` from then) to
//! its destructor.  A
//! reader (the debugfs file, the stuck-handler watch) copies each entry's
//! [`Row`] under the registry lock and formats the copies after the unlock;
//! it never keeps a pointer to a cm_id beyond the lock.
//!
//! # Lock order
//!
//! `REGISTRY` (a `SpinLockIrq`), then one cm_id's `inner`.  The cm_id's
//! destructor takes `REGISTRY` alone; nothing takes `REGISTRY` while it holds
//! an `inner`.

use super::*;
use crate::rdma::iwpm::SockAddr;
use core::fmt;
use kernel::time::{Instant, Monotonic};

/// Stable cm_id numbers for the table and the reports (never a kernel
/// pointer: the table is readable with kptr_restrict).  The first is 1.
static NEXT_TABLE_ID: Atomic<u64> = Atomic::new(1);

/// The next cm_id number.  Any context.
pub(super) fn next_table_id() -> u64 {
    NEXT_TABLE_ID.fetch_add(1, Relaxed)
}

/// The live cm_ids, by address.
///
/// # Invariants
///
/// Each entry is the address of a `CmId` whose destructor has not yet
/// removed it: [`unregister`] runs first in the destructor, under the
/// registry lock, so while that lock is held every entry is a `CmId` whose
/// memory is still allocated and whose fields are intact.
pub(crate) struct Registry {
    ids: KVVec<*const CmId>,
}

impl Registry {
    const fn new() -> Self {
        Self { ids: KVVec::new() }
    }
}

// SAFETY: the entries are addresses only, dereferenced under the registry
// lock (type invariant); `CmId` is `Sync`.
unsafe impl Send for Registry {}

kernel::sync::global_lock! {
    // SAFETY: initialized by `init` in the module's init, before any cm_id
    // exists.
    pub(crate) unsafe(uninit) static REGISTRY: SpinLockIrq<Registry> = Registry::new();
}

/// Initialises [`REGISTRY`].
///
/// # Safety
///
/// Called once, from the module's init, before any cm_id is created.
pub(crate) unsafe fn init() {
    // SAFETY: guaranteed by the caller.
    unsafe { REGISTRY.init() };
}

/// Frees the table's storage (a static is never dropped).  Module exit,
/// when no cm_id is left.
pub(crate) fn exit() {
    let old = core::mem::replace(&mut REGISTRY.lock().ids, KVVec::new());
    // After the unlock.
    drop(old);
}

/// Enters `id` in the table.  Nothing is allocated under the lock: when the
/// table is full it grows to twice its size (GFP_KERNEL, kvmalloc) outside
/// the lock, and the entries move over under it.  `ENOMEM` if it cannot
/// grow.  Process context, may sleep (as `CmId::new`).
pub(super) fn register(id: &CmId) -> Result {
    let p = core::ptr::from_ref(id);
    loop {
        let want = {
            let mut g = REGISTRY.lock();
            if g.ids.push_within_capacity(p).is_ok() {
                return Ok(());
            }
            (g.ids.capacity() * 2).max(64)
        };
        let mut bigger = Some(KVVec::with_capacity(want, GFP_KERNEL)?);
        let old = {
            let mut g = REGISTRY.lock();
            match bigger.take() {
                // Not grown by another thread meanwhile.
                Some(mut b) if g.ids.capacity() < want => {
                    for &e in g.ids.iter() {
                        // `want` is more than the old capacity: room for all.
                        let _ = b.push_within_capacity(e);
                    }
                    Some(core::mem::replace(&mut g.ids, b))
                }
                other => {
                    bigger = other;
                    None
                }
            }
        };
        // Both after the unlock (kvfree may not run with interrupts off).
        drop(old);
        drop(bigger);
    }
}

/// Removes `id` from the table (nothing if it was never entered).  First in
/// the cm_id's destructor.  Any context.
pub(super) fn unregister(id: &CmId) {
    let p = core::ptr::from_ref(id);
    let mut g = REGISTRY.lock();
    if let Some(i) = g.ids.iter().position(|&e| e == p) {
        let last = g.ids.len() - 1;
        g.ids.swap(i, last);
        g.ids.truncate(last);
    }
}

/// How a cm_id came to be.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// Created, neither listening nor connecting yet.
    None,
    /// `iw_cm_listen`.
    Listener,
    /// `iw_cm_connect`.
    Active,
    /// Created by iw_cm for a CONNECT_REQUEST.
    Passive,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::None => "-",
            Role::Listener => "listener",
            Role::Active => "active",
            Role::Passive => "passive",
        }
    }
}

/// What `Inner` records about a call into the ULP's handler in progress.
#[derive(Clone, Copy)]
pub(super) struct Delivery {
    /// When the handler call began.
    pub(super) since: Instant<Monotonic>,
    /// The event being delivered.
    pub(super) event: Option<EventType>,
    /// The handler called (rdma_cm changes a child's `cm_handler` inside
    /// its CONNECT_REQUEST handler: the field is not this).
    pub(super) handler: usize,
    /// The stuck-handler watch reported it.
    pub(super) reported: bool,
}

/// A device name copied while its cm_id (and so its device) lives: the
/// reports and the table format it after the lock, when the device may be
/// gone (`IB_DEVICE_NAME_MAX` bytes).
pub(crate) type DevName = CBuf<64>;

/// The name of `dev`.  Any context.
pub(super) fn copy_dev_name(dev: &IwDevice) -> DevName {
    let mut b = CBuf::new();
    let bytes = dev.name().to_bytes();
    if bytes.is_empty() {
        // One word per column: an unnamed device shows as "-".
        b.buf[0] = b'-';
        return b;
    }
    let n = bytes.len().min(63);
    b.buf[..n].copy_from_slice(&bytes[..n]);
    b
}

/// One line of the table: a copy taken under the cm_id's lock.
pub(crate) struct Row {
    pub(crate) id: u64,
    pub(crate) role: Role,
    pub(crate) state: State,
    pub(crate) dev: DevName,
    pub(crate) addrs: [SockAddr; 4],
    pub(crate) queued: usize,
    /// The running delivery: its age in ms and its event.
    pub(crate) delivering: Option<(i64, Option<EventType>)>,
    pub(crate) handler: usize,
    pub(crate) qp: bool,
    pub(crate) provider_refs: usize,
}

impl CmId {
    /// This cm_id's line.  Takes `inner`; any context.
    fn row(&self) -> Row {
        // For the table only: a ULP (or this module's delivery) may be
        // writing them; a torn copy shows as an odd address, nothing worse.
        let (l, r, ml, mr) = self.raw.snapshot_addrs();
        let g = self.inner.lock();
        Row {
            id: self.table_id,
            role: g.role,
            state: g.state,
            dev: self.dev_info.name,
            addrs: [l, r, ml, mr],
            queued: g.events.len,
            delivering: g.delivery.map(|d| (d.since.elapsed().as_millis(), d.event)),
            // The handler being called, else the one set now.
            handler: g
                .delivery
                .map_or_else(|| self.raw.handler_now(), |d| d.handler),
            qp: g.qp.is_some(),
            provider_refs: self.provider_refs.load(Ordering::Relaxed),
        }
    }
}

/// The number of cm_ids in the table and copies of their rows (at most as
/// many as were live when it started, plus 64), both taken in one critical
/// section.  Process context, may sleep.
pub(crate) fn snapshot() -> Result<(usize, KVVec<Row>)> {
    let n = REGISTRY.lock().ids.len();
    let mut rows = KVVec::with_capacity(n + 64, GFP_KERNEL)?;
    let g = REGISTRY.lock();
    for &p in g.ids.iter() {
        // SAFETY: `p` is in the registry and its lock is held: the cm_id's
        // memory is still allocated and its fields intact (type invariant).
        let id = unsafe { &*p };
        // Within the capacity: no allocation under the lock.
        if rows.push_within_capacity(id.row()).is_err() {
            break;
        }
    }
    Ok((g.ids.len(), rows))
}

/// A NUL-terminated buffer for the C formatters.
#[derive(Clone, Copy)]
pub(crate) struct CBuf<const N: usize> {
    buf: [u8; N],
}

impl<const N: usize> CBuf<N> {
    fn new() -> Self {
        Self { buf: [0; N] }
    }

    pub(crate) fn as_str(&self) -> &str {
        let n = self.buf.iter().position(|&c| c == 0).unwrap_or(N);
        core::str::from_utf8(&self.buf[..n]).unwrap_or("?")
    }

    /// The buffer as a C string (its last byte is never written: always
    /// NUL-terminated), valid while `self` is.
    pub(crate) fn as_char_ptr(&self) -> *const kernel::ffi::c_char {
        self.buf.as_ptr().cast()
    }

    /// The buffer up to its first NUL as a C string (empty if it had none).
    pub(crate) fn as_c_str(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.buf).unwrap_or(c"")
    }
}

/// `%ps` of `f` (a handler's symbol, or its address without kallsyms).
fn symbol(f: usize) -> CBuf<96> {
    let mut b = CBuf::new();
    if f == 0 {
        b.buf[0] = b'-';
    } else {
        c_helpers::format_symbol(&mut b.buf, f);
    }
    b
}

/// `%pISpc` of `a` ("-" when unset).
fn addr(a: &SockAddr) -> CBuf<56> {
    let mut b = CBuf::new();
    c_helpers::format_addr(&mut b.buf, a);
    b
}

/// The table's column header.
pub(crate) const HEADER: &str =
    "id role state dev local remote mapped_local mapped_remote queued delivering_ms event handler qp provider_refs";

/// Writes `row` as one line of the table, without the newline (the columns
/// of [`HEADER`], one word each): "-" for an unset address, no delivery or no handler; the
/// handler as `symbol[module]`.
pub(crate) fn write_row(w: &mut impl fmt::Write, row: &Row) -> fmt::Result {
    write!(
        w,
        "{} {} {:?} {} {} {} {} {} {} ",
        row.id,
        row.role.name(),
        row.state,
        row.dev.as_str(),
        addr(&row.addrs[0]).as_str(),
        addr(&row.addrs[1]).as_str(),
        addr(&row.addrs[2]).as_str(),
        addr(&row.addrs[3]).as_str(),
        row.queued,
    )?;
    match row.delivering {
        Some((ms, Some(ev))) => write!(w, "{} {:?} ", ms, ev)?,
        Some((ms, None)) => write!(w, "{} - ", ms)?,
        None => w.write_str("- - ")?,
    }
    // One column: `%ps` gives "symbol [module]" for a module's handler.
    for part in symbol(row.handler).as_str().split(' ') {
        w.write_str(part)?;
    }
    write!(w, " {} {}", u8::from(row.qp), row.provider_refs)
}

/// debugfs `iw_cm/cm_ids`: the number of cm_ids in the table on the first
/// line (as the file held before it became a table; taken with the rows),
/// the column header, then one line per live cm_id.
pub(crate) struct CmIdTable;

/// See [`CmIdTable`].
pub(crate) static TABLE: CmIdTable = CmIdTable;

impl fmt::Debug for CmIdTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, rows) = snapshot().map_err(|_| fmt::Error)?;
        // No newline after the last line: debugfs adds it.
        write!(f, "{}\n{}", n, HEADER)?;
        for row in rows.iter() {
            f.write_str("\n")?;
            write_row(f, row)?;
        }
        Ok(())
    }
}

/// A stuck delivery found by a scan: what the report names.
pub(super) struct Stuck {
    id: u64,
    state: State,
    event: Option<EventType>,
    handler: usize,
    dev: DevName,
    ms: i64,
}

/// Reports a stuck delivery (`done`: it returned after `ms`); the scan
/// took the rate limit's decision.  Process context.
fn report(s: &Stuck, done: bool) {
    let mut state = CBuf::<24>::new();
    let mut event = CBuf::<24>::new();
    let _ = fmt::write(
        &mut BufWriter(&mut state.buf[..23], 0),
        format_args!("{:?}", s.state),
    );
    match s.event {
        Some(e) => {
            let _ = fmt::write(
                &mut BufWriter(&mut event.buf[..23], 0),
                format_args!("{:?}", e),
            );
        }
        None => event.buf[0] = b'-',
    }
    c_helpers::report_stuck(
        s.id,
        state.as_c_str(),
        event.as_c_str(),
        s.handler,
        s.dev.as_c_str(),
        s.ms.max(0) as u64,
        done,
    );
}

/// A `fmt::Write` into a fixed buffer (truncating).
struct BufWriter<'a>(&'a mut [u8], usize);

impl fmt::Write for BufWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.0.len() - self.1;
        let n = s.len().min(room);
        self.0[self.1..self.1 + n].copy_from_slice(&s.as_bytes()[..n]);
        self.1 += n;
        Ok(())
    }
}

/// Called by the stuck-handler watch (iw_cm_exports.c) once a second while
/// a delivery runs: reports each delivery that has run `threshold_ms` or
/// more and was not reported yet (at most 8 per scan; the next scan reports
/// the others).  Returns whether a delivery is still in progress (the watch
/// then runs again).  Process context (a work item).
#[no_mangle]
pub(crate) extern "C" fn iwcm_stuck_scan(threshold_ms: u32) -> bool {
    let mut found: KVec<Stuck> = KVec::new();
    if found.reserve(8, GFP_KERNEL).is_err() {
        return true;
    }
    let mut running = false;
    {
        let g = REGISTRY.lock();
        for &p in g.ids.iter() {
            // SAFETY: as in `snapshot`.
            let id = unsafe { &*p };
            let mut inner = id.inner.lock();
            let state = inner.state;
            let Some(d) = inner.delivery.as_mut() else {
                continue;
            };
            running = true;
            let ms = d.since.elapsed().as_millis();
            if d.reported || ms < i64::from(threshold_ms) || found.len() == found.capacity() {
                continue;
            }
            // Rate-limited before it counts as reported: a line the limit
            // suppresses is tried again at the next scan.
            if !c_helpers::stuck_ratelimit() {
                continue;
            }
            d.reported = true;
            let s = Stuck {
                id: id.table_id,
                state,
                event: d.event,
                handler: d.handler,
                dev: id.dev_info.name,
                ms,
            };
            // Within the capacity: no allocation under the locks.
            let _ = found.push(s, GFP_ATOMIC);
        }
    }
    for s in found.iter() {
        report(s, false);
    }
    running
}

impl CmId {
    /// Marks the start of a delivery by task `me` (with `inner` held); when
    /// it calls the ULP's handler `handler` (not 0), records the call for the
    /// table and the stuck-handler watch, and makes sure the watch runs.
    pub(super) fn delivery_begins(
        g: &mut Inner,
        me: usize,
        event: Option<EventType>,
        handler: usize,
    ) {
        g.delivering = me;
        if handler == 0 {
            return;
        }
        g.delivery = Some(Delivery {
            since: Instant::now(),
            event,
            handler,
            reported: false,
        });
        c_helpers::stuck_arm();
    }

    /// Marks the end of the delivery (with `inner` held); when the watch had
    /// reported it, what to report now that it returned (to be passed to
    /// [`CmId::report_returned`] after the unlock).
    pub(super) fn delivery_ends(&self, g: &mut Inner) -> Option<Stuck> {
        g.delivering = 0;
        let d = g.delivery.take()?;
        if !d.reported {
            return None;
        }
        Some(Stuck {
            id: self.table_id,
            state: g.state,
            event: d.event,
            handler: d.handler,
            dev: self.dev_info.name,
            ms: d.since.elapsed().as_millis(),
        })
    }

    /// The report that a delivery the watch named has returned (not
    /// rate-limited: it pairs with a line that was printed).  Process
    /// context.
    pub(super) fn report_returned(&self, r: Option<Stuck>) {
        if let Some(s) = r {
            report(&s, true);
        }
    }
}

/// Writes the table line of the cm_id behind `raw` (for the KUnit suite's
/// formatting case, through kunit_iface.rs).  Takes the cm_id's lock.
///
/// # Safety
///
/// `raw` is a live cm_id of this module on which the caller holds a
/// reference.
#[cfg(CONFIG_KUNIT)]
pub(crate) unsafe fn write_line_of(raw: *mut RawCmId, w: &mut impl fmt::Write) -> fmt::Result {
    // SAFETY: guaranteed by the caller.
    let id = unsafe { CmId::borrow(raw) };
    write_row(w, &id.row())
}
