// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The table of live cm_ids (debugfs `iw_cm/cm_ids`, `iw_cm/count`) and the
//! stuck-handler report.  iwcm.c has neither: an operator whose unplug hangs
//! sees hung-task reports and has to read stacks to learn which ULP handler
//! holds everything up.
//!
//! Every cm_id has a number in the table from its allocation to its
//! destructor: the index of an allocating XArray (iw_cm_exports.c), handed
//! out cyclically from 1 ([`Reservation`]), which is also its number in the
//! reports and the tracepoints.  A cm_id is published at its number once
//! it is set up ([`Unlisted::publish`]): a ULP's at once, a
//! CONNECT_REQUEST's child when its request is delivered.  An entry is the cm_id's address, not a
//! reference (a reference would keep it alive): the destructor erases it
//! first thing, under the XArray's lock, so a holder of that lock ([`Locked`])
//! may read the cm_id behind an entry.  Registration and removal are one
//! XArray operation each (O(log n), usually a slot in an existing node);
//! nothing walks the table with the lock held.
//!
//! A read of `iw_cm/cm_ids` is a seq_file iterator ([`seq_start`])
//! that copies one cm_id's [`Row`] at a time, under the table's lock and
//! that cm_id's own, and formats it after both are released.  The stuck-
//! handler watch visits only the cm_ids marked running (`XA_MARK_1`, set
//! while a delivery is in a ULP handler), one at a time.
//!
//! # Lock order
//!
//! The table's lock (the XArray's, interrupts saved), then one cm_id's
//! `inner`.  Nothing takes the table's lock while it holds an `inner`: the
//! running mark is set and cleared after the delivery's `inner` is released.

use super::*;
use crate::bindings;
use crate::rdma::iwpm::SockAddr;
use crate::table_window::{self, Resume};
use core::fmt;
use kernel::time::{Instant, Monotonic};

/// A number reserved in the table for a cm_id being allocated.
///
/// # Invariants
///
/// `id` is allocated in the table, with nothing published at it; dropping
/// the reservation releases the number.
pub(super) struct Reservation {
    id: u32,
}

impl Reservation {
    /// Reserves the next free number, allocating as `ctx` allows.
    pub(super) fn new(ctx: AllocContext) -> Result<Self> {
        // INVARIANT: the number is allocated with nothing at it.
        Ok(Self {
            id: c_helpers::ids_reserve(ctx == AllocContext::Process)?,
        })
    }

    /// The reserved number.
    pub(super) fn id(&self) -> u32 {
        self.id
    }

    /// Hands the number over to `cm_id`, built with it as its `table_id`:
    /// from now on its destructor releases it ([`unregister`]).  The
    /// cm_id is not published yet.
    pub(super) fn hand_over(self, cm_id: Arc<CmId>) -> Unlisted {
        // The number is the cm_id's now: not released here.
        core::mem::forget(self);
        // INVARIANT: `cm_id` was built with this reservation's number
        // (`CmId::alloc`), where nothing is published.
        Unlisted(cm_id)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        c_helpers::ids_erase(self.id);
    }
}

/// A cm_id whose number is reserved in the table but which is not
/// published there: table readers (debugfs `iw_cm/cm_ids`, the stuck-
/// handler watch) cannot reach it.  A CONNECT_REQUEST's child stays so
/// from its allocation in the upcall until `connect_request` has written
/// its addresses, provider data and state, so that while those are
/// written nobody but the writer can reach it (the ULP and the provider
/// get it only with the request, after that).  Dropping an `Unlisted`
/// drops its reference; the cm_id's destructor releases the number.
///
/// # Invariants
///
/// Nothing is published at the cm_id's `table_id`, which is reserved for
/// it and released by its destructor.  Until [`Unlisted::publish`] (the ULP
/// gets a child with its request, after that) or, for a request no ULP
/// will see, until its reject (after the last [`Unlisted::unseen`]), no one
/// else reaches the cm_id's `struct iw_cm_id`: not the ULP, not the
/// provider, not a table reader.
pub(super) struct Unlisted(Arc<CmId>);

impl Unlisted {
    /// The cm_id's `struct iw_cm_id`, to set up while no one else can
    /// reach it.
    pub(super) fn unseen(&mut self) -> Unseen<'_> {
        // SAFETY: no one else reaches it (type invariant), and `&mut self`
        // makes this the only `Unseen` of it.
        unsafe { Unseen::assume(&self.0.raw) }
    }

    /// The cm_id, not in the table.
    pub(super) fn cm_id(&self) -> &Arc<CmId> {
        &self.0
    }

    /// Publishes the cm_id at its number: table readers see it from now
    /// on, until its destructor calls [`unregister`].  Any context.
    pub(super) fn publish(self) -> Arc<CmId> {
        // The number is reserved with nothing at it (type invariant).
        // SAFETY: the `CmId` lives until its destructor, whose first step
        // is `unregister`, i.e. `ids_erase` of this number.
        unsafe {
            c_helpers::ids_publish(
                self.0.table_id,
                core::ptr::from_ref::<CmId>(&self.0).cast(),
                &self.0.table_seq,
            )
        };
        self.0
    }
}

/// Removes `id` from the table and frees its number.  First in the
/// cm_id's destructor.  Any context.
pub(super) fn unregister(id: &CmId) {
    c_helpers::ids_erase(id.table_id);
}

/// The table, locked (interrupts saved).
///
/// # Invariants
///
/// Every entry of the table is the address of a `CmId` published by
/// [`Unlisted::publish`] at its own number, whose destructor erases it
/// ([`unregister`]) before anything of the cm_id is dropped, under this
/// lock: while a `Locked` lives, the cm_id behind an entry is allocated
/// and its fields intact.
struct Locked(c_helpers::IdsLock);

impl Locked {
    fn new() -> Self {
        Self(c_helpers::IdsLock::lock())
    }

    /// The cm_id with the lowest number at or after `from` (with
    /// `running`: among those marked running), borrowed while the table
    /// is locked.  One XArray lookup.
    fn first_from(&self, from: u32, running: bool) -> Option<&CmId> {
        let p = self.0.find(from, running)?;
        // SAFETY: `p` is an entry of the table and the lock is held: the
        // cm_id is allocated and intact for as long as `self` (type
        // invariant).
        Some(unsafe { &*p.cast::<CmId>() })
    }
}

/// Sets or clears the running mark of cm_id `id` (the stuck-handler
/// watch's set).  Not with any cm_id's `inner` held.  Any context.
pub(super) fn set_running(id: u32, running: bool) {
    c_helpers::ids_set_running(id, running);
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
    pub(crate) id: u32,
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
            provider_refs: self.provider_refs.load(Relaxed),
        }
    }
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

/// One line of debugfs `iw_cm/cm_ids`: what its seq_file iterator holds
/// between `start`/`next` and `show`.
#[expect(
    clippy::large_enum_variant,
    reason = "one per read, in a KBox, reused for every row"
)]
pub(crate) enum Line {
    /// The first line, the number of cm_ids in the table (as the file held
    /// before it became a table), and the column header.
    Head(usize),
    /// A copy of one cm_id's row.
    Row(Row),
}

/// The count line of a read: the number of cm_ids in the table, and the
/// next creation sequence number (the read lists no cm_id published after
/// it, so it never has more rows than its count).  One critical section.
fn head() -> (usize, u64) {
    let t = Locked::new();
    t.0.state()
}

/// The row of the cm_id with the lowest number at or after `from` that
/// the read whose count line found the next sequence number at `end`
/// lists (cm_ids published since are skipped), and that number.  Each
/// step holds the table's lock (interrupts off) for one lookup and one
/// cm_id's copy or skip; a read skips each cm_id published since its
/// count line once.  Any context.
pub(crate) fn row_from(from: u32, end: u64) -> Option<Row> {
    let mut from = from;
    loop {
        let t = Locked::new();
        let id = t.first_from(from, false)?;
        // Written under the table's lock, before it was published.
        let seq = id.table_seq.load(Relaxed);
        match table_window::resume_at(id.table_id, seq, end) {
            Resume::List => return Some(id.row()),
            Resume::SkipTo(n) => from = n,
            Resume::Done => return None,
        }
    }
}

/// The seq_file position of the line after the row of cm_id `id` (the
/// positions are: 0 the count line, then each cm_id's number).
fn pos_after(id: u32) -> i64 {
    i64::from(id) + 1
}

/// Fills `line` with the line at position `pos` (or the first after it)
/// and moves `pos` to it; false at the end of the table, with `pos` past
/// it.  `r` keeps the next sequence number at the read's count line.
fn fill(r: &mut bindings::iwcm_table_read, line: &mut Line, pos: &mut i64) -> bool {
    if *pos <= 0 {
        let (count, end) = head();
        r.end_seq = end;
        *pos = 0;
        *line = Line::Head(count);
        return true;
    }
    let found = u32::try_from(*pos)
        .ok()
        .and_then(|from| row_from(from, r.end_seq));
    match found {
        Some(row) => {
            *pos = i64::from(row.id);
            *line = Line::Row(row);
            true
        }
        None => {
            *pos = pos_after(u32::MAX);
            false
        }
    }
}

/// A read's next line, boxed for the seq_file iterator: allocated by
/// [`seq_start`], moved on by [`seq_next`], freed by dropping it.
pub(crate) type SeqLine = KBox<Line>;

/// seq_file `start` of `iw_cm/cm_ids` for the read `r` at `*pos`: the
/// line there (or the first after it; `*pos` moves to it), `None` at the
/// end.  `ENOMEM` without memory.  Process context (the reader's), may
/// sleep.
pub(crate) fn seq_start(
    r: &mut bindings::iwcm_table_read,
    pos: &mut i64,
) -> Result<Option<SeqLine>> {
    let mut line = KBox::new(Line::Head(0), GFP_KERNEL)?;
    Ok(fill(r, &mut line, pos).then_some(line))
}

/// seq_file `next`: moves `*pos` past `line` and fills it with the next
/// line; `None` (the line dropped) at the end.  Process context.
pub(crate) fn seq_next(
    r: &mut bindings::iwcm_table_read,
    mut line: SeqLine,
    pos: &mut i64,
) -> Option<SeqLine> {
    *pos = match &*line {
        Line::Head(_) => 1,
        Line::Row(row) => pos_after(row.id),
    };
    fill(r, &mut line, pos).then_some(line)
}

impl kernel::fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Line::Head(n) => write!(f, "{}\n{}", n, HEADER),
            Line::Row(row) => write_row(f, row),
        }
    }
}

/// A stuck delivery found by a scan: what the report names.
pub(super) struct Stuck {
    id: u32,
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
        s.id.into(),
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
/// the others).  Visits only the cm_ids marked running, one per critical
/// section.  Returns whether a delivery is still in progress (the watch
/// then runs again).  Process context (a work item).
#[no_mangle]
pub(crate) extern "C" fn iwcm_stuck_scan(threshold_ms: u32) -> bool {
    let mut found: KVec<Stuck> = KVec::new();
    if found.reserve(8, GFP_KERNEL).is_err() {
        return true;
    }
    let mut running = false;
    let mut from = 1;
    loop {
        let t = Locked::new();
        let Some(id) = t.first_from(from, true) else {
            break;
        };
        running = true;
        if let Some(s) = id.stuck(threshold_ms, found.len() == found.capacity()) {
            // Within the capacity: no allocation under the locks.
            let _ = found.push(s, GFP_ATOMIC);
        }
        match id.table_id.checked_add(1) {
            Some(n) => from = n,
            None => break,
        }
    }
    for s in found.iter() {
        report(s, false);
    }
    running
}

impl CmId {
    /// What the stuck-handler watch reports of this cm_id's delivery, if it
    /// has run `threshold_ms` and was not reported yet (and `full` does not
    /// say that the scan has reported enough): marked reported now.  The
    /// rate limit is taken here: a line it suppresses is tried again at the
    /// next scan.  Takes `inner`; any context.
    fn stuck(&self, threshold_ms: u32, full: bool) -> Option<Stuck> {
        let mut g = self.inner.lock();
        let state = g.state;
        let d = g.delivery.as_mut()?;
        let ms = d.since.elapsed().as_millis();
        if d.reported || ms < i64::from(threshold_ms) || full || !c_helpers::stuck_ratelimit() {
            return None;
        }
        d.reported = true;
        Some(Stuck {
            id: self.table_id,
            state,
            event: d.event,
            handler: d.handler,
            dev: self.dev_info.name,
            ms,
        })
    }
}

/// The end of a delivery, for [`CmId::delivery_ended`] once `inner` is
/// released.
#[must_use]
pub(super) struct Ended {
    /// The delivery was in the stuck-handler watch's set.
    watched: bool,
    /// The watch had reported it: the line that says it returned.
    returned: Option<Stuck>,
}

impl CmId {
    /// Marks the start of a delivery by task `me` (with `inner` held); when
    /// it calls the ULP's handler `handler` (not 0), records the call for the
    /// table and the stuck-handler watch and returns true: the caller then
    /// calls [`CmId::watch_delivery`] once `inner` is released.
    #[must_use]
    pub(super) fn delivery_begins(
        g: &mut Inner,
        me: usize,
        event: Option<EventType>,
        handler: usize,
    ) -> bool {
        g.delivering = me;
        if handler == 0 {
            return false;
        }
        g.delivery = Some(Delivery {
            since: Instant::now(),
            event,
            handler,
            reported: false,
        });
        true
    }

    /// Enters this cm_id's delivery in the stuck-handler watch's set (the
    /// running mark) and makes sure the watch runs.  After
    /// [`CmId::delivery_begins`], without `inner` held.  Any context.
    pub(super) fn watch_delivery(&self) {
        set_running(self.table_id, true);
        c_helpers::stuck_arm();
    }

    /// Marks the end of the delivery (with `inner` held); what
    /// [`CmId::delivery_ended`] does after the unlock.
    pub(super) fn delivery_ends(&self, g: &mut Inner) -> Ended {
        g.delivering = 0;
        let Some(d) = g.delivery.take() else {
            return Ended {
                watched: false,
                returned: None,
            };
        };
        let returned = d.reported.then(|| Stuck {
            id: self.table_id,
            state: g.state,
            event: d.event,
            handler: d.handler,
            dev: self.dev_info.name,
            ms: d.since.elapsed().as_millis(),
        });
        Ended {
            watched: true,
            returned,
        }
    }

    /// Takes the ended delivery out of the watch's set and, if the watch
    /// named it, reports that it returned (not rate-limited: it pairs with
    /// a line that was printed).  Without `inner` held; process context.
    pub(super) fn delivery_ended(&self, e: Ended) {
        if e.watched {
            set_running(self.table_id, false);
        }
        if let Some(s) = e.returned {
            report(&s, true);
        }
    }
}

/// Writes the table line of `id` (for the KUnit suite's formatting case,
/// through kunit_iface.rs).  Takes the cm_id's lock.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn write_line_of(id: &CmId, w: &mut impl fmt::Write) -> fmt::Result {
    write_row(w, &id.row())
}

/// The numbers of the cm_ids marked running, as [`iwcm_stuck_scan`] visits
/// them: up to `out.len()` into `out`; returns how many there are (for
/// the KUnit suite, through kunit_iface.rs).  Any context.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn running_ids(out: &mut [u32]) -> usize {
    let (mut n, mut from) = (0, 1u32);
    loop {
        let t = Locked::new();
        let Some(id) = t.first_from(from, true) else {
            return n;
        };
        if let Some(slot) = out.get_mut(n) {
            *slot = id.table_id;
        }
        n += 1;
        match id.table_id.checked_add(1) {
            Some(next) => from = next,
            None => return n,
        }
    }
}

/// The number of event slots of the cm_id numbered `id`, `None` when there
/// is none (for the KUnit suite, through kunit_iface.rs).  Any context.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn event_slots(id: u32) -> Option<usize> {
    let t = Locked::new();
    let c = t.first_from(id, false).filter(|c| c.table_id == id)?;
    let n = c.inner.lock().events.slots.len();
    Some(n)
}

/// The event slots of the children of the CONNECT_REQUESTs queued on
/// `this`, in queue order: up to `out.len()` (at most 8) into `out`;
/// returns how many requests are queued (for the KUnit suite, through
/// kunit_iface.rs: a queued child is not in the table).  Takes the cm_id's
/// lock, then each child's; any context.
#[cfg(CONFIG_KUNIT)]
pub(crate) fn queued_children_slots(this: &CmId, out: &mut [usize]) -> usize {
    let mut children: [Option<Arc<CmId>>; 8] = Default::default();
    let n = {
        let g = this.inner.lock();
        let mut n = 0;
        let ring = &g.events;
        let queued = ring.slots.iter().cycle().skip(ring.head).take(ring.len);
        for ev in queued {
            if let Some(c) = ev.as_ref().and_then(|e| e.child.as_ref()) {
                if let Some(slot) = children.get_mut(n) {
                    // A reference, no allocation: the child is read after
                    // the unlock (one cm_id's `inner` at a time).
                    *slot = Some(c.cm_id().clone());
                }
                n += 1;
            }
        }
        n
    };
    for (o, c) in out.iter_mut().zip(children.iter().flatten()) {
        *o = c.inner.lock().events.slots.len();
    }
    n
}

#[kunit_tests(rust_iw_cm_table)]
mod tests {
    use super::*;

    /// A row of a connecting cm_id on "siw0" with no address set.
    fn row() -> Row {
        let mut dev = DevName::new();
        dev.buf[..4].copy_from_slice(b"siw0");
        Row {
            id: 7,
            role: Role::Active,
            state: State::ConnSent,
            dev,
            addrs: [SockAddr::default(); 4],
            queued: 2,
            delivering: None,
            handler: 0,
            qp: true,
            provider_refs: 1,
        }
    }

    /// Whether `row` renders as `want` (the columns of [`HEADER`]).
    fn renders(row: &Row, want: &str) -> bool {
        let mut buf = [0u8; 512];
        let mut w = BufWriter(&mut buf, 0);
        let ok = write_row(&mut w, row).is_ok();
        let n = w.1;
        let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
        if !ok || line != want {
            pr_err!("table row: {:?}, want {:?}\n", line, want);
            return false;
        }
        true
    }

    /// A table row has the columns of the header, one word each: "-" for
    /// an unset address, no delivery, no delivery event or no handler; a
    /// handler as its symbol and module without the space `%ps` puts
    /// between them; the QP as 0 or 1.
    #[test]
    fn table_row_has_one_word_per_header_column() {
        assert_eq!(HEADER.split(' ').count(), 14);
        let mut r = row();
        assert!(renders(&r, "7 active ConnSent siw0 - - - - 2 - - - 1 1"));
        r.delivering = Some((1500, Some(EventType::ConnectReply)));
        r.qp = false;
        assert!(renders(
            &r,
            "7 active ConnSent siw0 - - - - 2 1500 ConnectReply - 0 1"
        ));
        r.delivering = Some((0, None));
        assert!(renders(&r, "7 active ConnSent siw0 - - - - 2 0 - - 0 1"));
        r.role = Role::None;
        r.state = State::Idle;
        r.handler = crate::c_entry::iwcm_table_show as usize;
        let mut buf = [0u8; 512];
        let mut w = BufWriter(&mut buf, 0);
        assert!(write_row(&mut w, &r).is_ok());
        let n = w.1;
        let line = core::str::from_utf8(&buf[..n]).unwrap_or("");
        assert_eq!(line.split(' ').count(), 14);
        assert!(line.starts_with("7 - Idle siw0 "));
        assert!(line.contains(" iwcm_table_show[iw_cm] 0 1"));
    }
}
