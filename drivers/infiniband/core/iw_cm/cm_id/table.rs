// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The table of live cm_ids (debugfs `iw_cm/cm_ids`, `iw_cm/count`) and the
//! stuck-handler report.  iwcm.c has neither: an operator whose unplug hangs
//! sees hung-task reports and has to read stacks to learn which ULP handler
//! holds everything up.
//!
//! Every cm_id is on [`REGISTRY`] from its creation to its destructor.  A
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
use core::sync::atomic::AtomicU64;
use kernel::time::{Instant, Monotonic};

/// Stable cm_id numbers for the table and the reports (never a kernel
/// pointer: the table is readable with kptr_restrict).  The first is 1.
static NEXT_TABLE_ID: AtomicU64 = AtomicU64::new(1);

/// The next cm_id number.  Any context.
pub(super) fn next_table_id() -> u64 {
    NEXT_TABLE_ID.fetch_add(1, Ordering::Relaxed)
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
    ids: KVec<*const CmId>,
}

impl Registry {
    const fn new() -> Self {
        Self { ids: KVec::new() }
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
    let old = core::mem::replace(&mut REGISTRY.lock().ids, KVec::new());
    // After the unlock.
    drop(old);
}

/// Enters `id` in the table.  `ENOMEM` if the table cannot grow (GFP_ATOMIC,
/// under the lock).  Any context.
pub(super) fn register(id: &CmId) -> Result {
    let mut g = REGISTRY.lock();
    g.ids.push(core::ptr::from_ref(id), GFP_ATOMIC)?;
    Ok(())
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

/// What `Inner` records about the delivery in progress.
#[derive(Clone, Copy)]
pub(super) struct Delivery {
    /// When the handler call began.
    pub(super) since: Instant<Monotonic>,
    /// The event being delivered.
    pub(super) event: Option<EventType>,
    /// The stuck-handler watch reported it.
    pub(super) reported: bool,
}

/// One line of the table: a copy taken under the cm_id's lock.
pub(crate) struct Row {
    pub(crate) id: u64,
    pub(crate) role: Role,
    pub(crate) state: State,
    pub(crate) dev: IwDevice,
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
            dev: self.dev,
            addrs: [l, r, ml, mr],
            queued: g.events.len,
            delivering: g.delivery.map(|d| (d.since.elapsed().as_millis(), d.event)),
            handler: self.raw.handler_context().0.map_or(0, |h| h as usize),
            qp: g.qp.is_some(),
            provider_refs: self.provider_refs.load(Ordering::Relaxed),
        }
    }
}

/// Copies the rows of all live cm_ids (at most as many as were live when it
/// started, plus 64).  Process context, may sleep.
pub(crate) fn snapshot() -> Result<KVVec<Row>> {
    let n = REGISTRY.lock().ids.len();
    let mut rows = KVVec::with_capacity(n + 64, GFP_KERNEL)?;
    let g = REGISTRY.lock();
    for &p in g.ids.iter() {
        if rows.len() == rows.capacity() {
            break;
        }
        // SAFETY: `p` is in the registry and its lock is held: the cm_id's
        // memory is still allocated and its fields intact (type invariant).
        let id = unsafe { &*p };
        // Within the capacity: `push` does not allocate.
        rows.push(id.row(), GFP_ATOMIC)?;
    }
    Ok(rows)
}

/// A NUL-terminated buffer for the C formatters.
struct CBuf<const N: usize> {
    buf: [u8; N],
}

impl<const N: usize> CBuf<N> {
    fn new() -> Self {
        Self { buf: [0; N] }
    }

    fn as_str(&self) -> &str {
        let n = self.buf.iter().position(|&c| c == 0).unwrap_or(N);
        core::str::from_utf8(&self.buf[..n]).unwrap_or("?")
    }
}

/// `%ps` of `f` (a handler's symbol, or its address without kallsyms).
fn symbol(f: usize) -> CBuf<96> {
    let mut b = CBuf::new();
    if f == 0 {
        b.buf[0] = b'-';
    } else {
        // SAFETY: `buf` is writable for its length; `%ps` only looks the
        // address up in kallsyms, it does not dereference it.
        unsafe {
            crate::c::iwcm_c_format_symbol(b.buf.as_mut_ptr().cast(), 96, f as *const c_void)
        };
    }
    b
}

/// `%pISpc` of `a` ("-" when unset).
fn addr(a: &SockAddr) -> CBuf<56> {
    let mut b = CBuf::new();
    // SAFETY: `buf` is writable for its length; `a` is a valid
    // sockaddr_storage, read according to its family.
    unsafe { crate::c::iwcm_c_format_addr(b.buf.as_mut_ptr().cast(), 56, a) };
    b
}

/// The device's name.
fn dev_name(dev: &IwDevice) -> CBuf<32> {
    let mut b = CBuf::new();
    // SAFETY: a cm_id's device outlives it (the ULP's device reference), and
    // the row was taken while the cm_id lived; the name is a NUL-terminated
    // string (never NULL).
    let name = unsafe { CStr::from_char_ptr(crate::c::iwcm_c_dev_name(dev.as_raw().cast())) };
    let bytes = name.to_bytes();
    if bytes.is_empty() {
        // One word per column: an unnamed device shows as "-".
        b.buf[0] = b'-';
        return b;
    }
    let n = bytes.len().min(31);
    b.buf[..n].copy_from_slice(&bytes[..n]);
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
        dev_name(&row.dev).as_str(),
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

/// debugfs `iw_cm/cm_ids`: the count of live cm_ids on the first line (as
/// the file held before it became a table), the column header, then one
/// line per live cm_id.
pub(crate) struct CmIdTable;

/// See [`CmIdTable`].
pub(crate) static TABLE: CmIdTable = CmIdTable;

impl fmt::Debug for CmIdTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // No newline after the last line: debugfs adds it.
        write!(f, "{}\n{}", LIVE.load(Ordering::Relaxed), HEADER)?;
        let rows = snapshot().map_err(|_| fmt::Error)?;
        for row in rows.iter() {
            f.write_str("\n")?;
            write_row(f, row)?;
        }
        Ok(())
    }
}

/// A stuck delivery found by a scan: what the report names.
struct Stuck {
    id: u64,
    state: State,
    event: Option<EventType>,
    handler: usize,
    dev: IwDevice,
    ms: i64,
}

/// Reports a stuck delivery (`done`: it returned after `ms`).  Process
/// context.
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
    let name = dev_name(&s.dev);
    // SAFETY: the strings are NUL-terminated buffers that live through the
    // call; `handler` is only printed with `%ps`.
    unsafe {
        crate::c::iwcm_c_report_stuck(
            s.id,
            state.buf.as_ptr().cast(),
            event.buf.as_ptr().cast(),
            s.handler as *const c_void,
            name.buf.as_ptr().cast(),
            s.ms.max(0) as u64,
            done,
        )
    };
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
            d.reported = true;
            let s = Stuck {
                id: id.table_id,
                state,
                event: d.event,
                handler: id.raw.handler_context().0.map_or(0, |h| h as usize),
                dev: id.dev,
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
    /// Marks the start of a delivery into the ULP's handler (with `inner`
    /// held) and makes sure the stuck-handler watch runs.
    pub(super) fn delivery_begins(g: &mut Inner, me: usize, event: Option<EventType>) {
        g.delivering = me;
        g.delivery = Some(Delivery {
            since: Instant::now(),
            event,
            reported: false,
        });
        // SAFETY: queues a static delayed work; any context.
        unsafe { crate::c::iwcm_c_stuck_arm() };
    }

    /// Marks the end of the delivery (with `inner` held); when the watch had
    /// reported it, what to report now that it returned (to be passed to
    /// [`CmId::report_returned`] after the unlock).
    pub(super) fn delivery_ends(&self, g: &mut Inner) -> Option<(State, Option<EventType>, i64)> {
        g.delivering = 0;
        let d = g.delivery.take()?;
        if !d.reported {
            return None;
        }
        Some((g.state, d.event, d.since.elapsed().as_millis()))
    }

    /// The report that a delivery the watch named has returned.  Process
    /// context.
    pub(super) fn report_returned(&self, r: Option<(State, Option<EventType>, i64)>) {
        if let Some((state, event, ms)) = r {
            let s = Stuck {
                id: self.table_id,
                state,
                event,
                handler: self.raw.handler_context().0.map_or(0, |h| h as usize),
                dev: self.dev,
                ms,
            };
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
