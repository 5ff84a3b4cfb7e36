// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What iw_cm accepts from a provider's `struct iw_cm_event`.
//!
//! Every field of a provider event is untrusted: the peer on the wire shapes
//! the MPA request or reply (private data length, IRD/ORD, reject flag), and
//! a buggy provider may pass it on unchecked.  One example, siw in 7.3: an
//! MPA reply whose private data length field exceeds the MPA limit makes
//! siw_recv_mpa_rr() fail before a private data buffer exists, and
//! siw_cm_upcall() still reports CONNECT_REPLY with `private_data = NULL + 4`
//! and `private_data_len = (u8)(len - 4)`; iwcm.c's cm_event_handler()
//! copies from it and the kernel oopses.
//!
//! [`check`] is the policy, per event type and status, applied in the
//! provider's upcall before anything is copied or queued:
//!
//! | field | rule | on violation |
//! |---|---|---|
//! | event type | CONNECT_REQUEST .. CLOSE | refused (-EINVAL to the provider) |
//! | status | 0 for CONNECT_REQUEST; 0 or a negative errno (-1 .. -4095) otherwise (ESTABLISHED too: qedr's failed passive connection, passed on as iwcm.c does) | CONNECT_REQUEST refused; CONNECT_REPLY delivered as failed with -EPROTO; others delivered with 0 |
//! | private data | only on CONNECT_REQUEST and on CONNECT_REPLY with status 0, -ECONNRESET or -ECONNREFUSED (the peer's MPA reject: siw reports it as -ECONNRESET, iw_cxgb4 as -ECONNREFUSED; rdma_cm hands it to the ULP as REJECTED) | not copied; not read at all, and not a fault, for the other failed CONNECT_REPLYs (siw passes on whatever it buffered with every failure) |
//! | private data length | at most 512 (RFC 5044 MPA limit) | CONNECT_REQUEST refused, otherwise not copied |
//! | private data pointer | not NULL and not in the first page when the length is non-zero; readable ([`Fields::pdata_addr`] and the glue's `copy_from_kernel_nofault`) | CONNECT_REQUEST refused, otherwise not copied |
//! | ird / ord | at most the device's `max_qp_rd_atom` / `max_qp_init_rd_atom` (the larger of the two) on CONNECT_REQUEST, CONNECT_REPLY and ESTABLISHED; ignored on DISCONNECT and CLOSE (qedr fills them on every event) | clamped, cleared on DISCONNECT and CLOSE; never a fault (siw and qedr pass the peer's values on unclamped) |
//! | addresses | AF_INET or AF_INET6, local and remote of one family, on CONNECT_REQUEST and CONNECT_REPLY (the events whose addresses iw_cm and rdma_cm use) | CONNECT_REQUEST refused; CONNECT_REPLY: the cm_id's own addresses are used |
//! | provider_data | not NULL on CONNECT_REQUEST (the provider object iw_accept/iw_reject hand back) | refused |
//!
//! Every violation is a provider fault: counted, and logged with a warning
//! line once per kind (never a WARN() backtrace: a peer can shape these
//! fields through a provider, and a WARN would let it panic a
//! `panic_on_warn` machine).  A refused
//! CONNECT_REQUEST returns -EINVAL from the upcall: the provider keeps its
//! connection object and releases it itself, as it does when iwcm.c has no
//! free work entry (-ENOMEM).
//!
//! What cannot be checked here: that a private data pointer that is
//! readable points to a buffer of at least `private_data_len` bytes (siw's
//! MPA v2 path subtracts 4 from a `u8` length and can wrap), that
//! `provider_data` is the provider's live object, and that an event is for a
//! cm_id the provider still holds a reference on.
//!
//! No kernel dependencies: `tools/statemachine` compiles this file in
//! userspace and checks the table above over every event type, status class
//! and field value class.

/// `MPA_MAX_PRIVDATA` (RFC 5044 section 7.1: at most 512 bytes).
pub const MPA_MAX_PRIVDATA: usize = 512;
/// `MAX_ERRNO` of include/linux/err.h.
pub const MAX_ERRNO: i32 = 4095;
/// Addresses below this are never a private data buffer (the NULL page;
/// iwcm.c and siw compute `NULL + 4` for a missing MPA v2 buffer).
pub const MIN_PDATA_ADDR: usize = 4096;
/// `AF_INET`, `AF_INET6` (include/linux/socket.h).
pub const AF_INET: u16 = 2;
/// See [`AF_INET`].
pub const AF_INET6: u16 = 10;
/// `ECONNRESET`: siw's status for a peer's MPA reject.
pub const ECONNRESET: i32 = 104;
/// `ECONNREFUSED`: iw_cxgb4's status for a peer's MPA reject.
pub const ECONNREFUSED: i32 = 111;
/// `EPROTO`: the status a CONNECT_REPLY with an impossible status gets.
pub const EPROTO: i32 = 71;

/// The provider event types of `enum iw_cm_event_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// IW_CM_EVENT_CONNECT_REQUEST, on a listener.
    ConnectRequest,
    /// IW_CM_EVENT_CONNECT_REPLY, on a connecting cm_id.
    ConnectReply,
    /// IW_CM_EVENT_ESTABLISHED, on an accepted cm_id.
    Established,
    /// IW_CM_EVENT_DISCONNECT.
    Disconnect,
    /// IW_CM_EVENT_CLOSE.
    Close,
}

/// The fields of one provider event, as read from `struct iw_cm_event`.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// The event type.
    pub kind: Kind,
    /// `status`.
    pub status: i32,
    /// `private_data` as an address.
    pub pdata_addr: usize,
    /// `private_data_len`.
    pub pdata_len: usize,
    /// `ird`.
    pub ird: u8,
    /// `ord`.
    pub ord: u8,
    /// `local_addr.ss_family`.
    pub local_family: u16,
    /// `remote_addr.ss_family`.
    pub remote_family: u16,
    /// `provider_data` is not NULL.
    pub provider_data: bool,
}

/// The device's limits (`struct ib_device_attr`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The largest IRD or ORD the device supports: the larger of
    /// `max_qp_rd_atom` and `max_qp_init_rd_atom` (providers disagree on
    /// which of the event's two fields is which side's).
    pub max_rd_atom: u8,
}

/// The kinds of provider fault found in one event (a bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults(u16);

impl Faults {
    /// None.
    pub const NONE: Faults = Faults(0);
    /// Not an event type of `enum iw_cm_event_type`.
    pub const UNKNOWN_EVENT: Faults = Faults(1 << 0);
    /// A status the event type cannot have.
    pub const BAD_STATUS: Faults = Faults(1 << 1);
    /// Private data on an event (or status) that carries none.
    pub const PDATA_NOT_ALLOWED: Faults = Faults(1 << 2);
    /// A private data length beyond the MPA limit.
    pub const PDATA_TOO_LONG: Faults = Faults(1 << 3);
    /// A NULL, near-NULL or unreadable private data pointer.
    pub const PDATA_BAD_POINTER: Faults = Faults(1 << 4);
    /// An address family iw_cm cannot use, or two different ones.
    pub const BAD_FAMILY: Faults = Faults(1 << 6);
    /// CONNECT_REQUEST without a provider object.
    pub const NO_PROVIDER_DATA: Faults = Faults(1 << 7);

    /// Whether no fault was found.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every fault of `other` is in `self`.
    pub const fn contains(self, other: Faults) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two sets.
    pub const fn with(self, other: Faults) -> Faults {
        Faults(self.0 | other.0)
    }

    /// The raw bits (for messages and traces).
    pub const fn bits(self) -> u16 {
        self.0
    }
}

/// What to do with one provider event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Do not queue it; the upcall returns -EINVAL.  Only for
    /// CONNECT_REQUEST (the provider then releases its connection object
    /// itself) and for unknown event types.
    Refuse(Faults),
    /// Queue it with these (possibly corrected) values.
    Deliver {
        /// The status to deliver.
        status: i32,
        /// Copy the private data (its length and pointer passed the
        /// checks; the copy itself may still fail, see the glue).
        copy_pdata: bool,
        /// The IRD to deliver.
        ird: u8,
        /// The ORD to deliver.
        ord: u8,
        /// The event's addresses may be used (CONNECT_REPLY); otherwise
        /// the cm_id's own.
        use_addrs: bool,
        /// The faults found (empty for a well-formed event).
        faults: Faults,
    },
}

/// A status a provider may report on a failed event: a negative errno.
const fn is_errno(status: i32) -> bool {
    status < 0 && status >= -MAX_ERRNO
}

/// Whether the private data of an event of `kind` with `status` is the
/// peer's (and so may reach the ULP).
pub const fn pdata_allowed(kind: Kind, status: i32) -> bool {
    match kind {
        Kind::ConnectRequest => status == 0,
        Kind::ConnectReply => status == 0 || status == -ECONNRESET || status == -ECONNREFUSED,
        Kind::Established | Kind::Disconnect | Kind::Close => false,
    }
}

/// Whether an address family can be the family of an iWARP connection.
const fn family_ok(f: u16) -> bool {
    f == AF_INET || f == AF_INET6
}

/// The policy (see the module documentation).  Pure.
pub fn check(f: &Fields, lim: &Limits) -> Verdict {
    let mut faults = Faults::NONE;
    let refuse_on_fault = f.kind == Kind::ConnectRequest;

    // Status.
    let status = match f.kind {
        Kind::ConnectRequest => {
            if f.status != 0 {
                faults = faults.with(Faults::BAD_STATUS);
            }
            0
        }
        // qedr reports a failed passive connection as ESTABLISHED with a
        // negative errno, then CLOSE (qedr_iw_passive_complete); iwcm.c
        // passes it on, rdma_cm reads no status on ESTABLISHED.  As C.
        Kind::Established => {
            if f.status == 0 || is_errno(f.status) {
                f.status
            } else {
                faults = faults.with(Faults::BAD_STATUS);
                0
            }
        }
        Kind::ConnectReply => {
            if f.status == 0 || is_errno(f.status) {
                f.status
            } else {
                faults = faults.with(Faults::BAD_STATUS);
                -EPROTO
            }
        }
        Kind::Disconnect | Kind::Close => {
            if f.status == 0 || is_errno(f.status) {
                f.status
            } else {
                faults = faults.with(Faults::BAD_STATUS);
                0
            }
        }
    };

    // Private data (judged on the corrected status).
    let mut copy_pdata = false;
    if f.pdata_len != 0 {
        if matches!(f.kind, Kind::Established | Kind::Disconnect | Kind::Close) {
            faults = faults.with(Faults::PDATA_NOT_ALLOWED);
        } else if !pdata_allowed(f.kind, status) {
            // A failed CONNECT_REPLY that is not the peer's reject (or a
            // request refused for its status): dropped by policy, unread.
            // Not a fault: siw reports whatever it buffered with every
            // failure, and a peer can make that a bogus pointer.
        } else if f.pdata_len > MPA_MAX_PRIVDATA {
            faults = faults.with(Faults::PDATA_TOO_LONG);
        } else if f.pdata_addr < MIN_PDATA_ADDR {
            faults = faults.with(Faults::PDATA_BAD_POINTER);
        } else {
            copy_pdata = true;
        }
    }

    // IRD/ORD.
    let (mut ird, mut ord) = (f.ird, f.ord);
    match f.kind {
        // Clamped to what this device can do, not a fault: siw and qedr
        // report the peer's own values unclamped (siw_proc_mpareply,
        // qedr_iw_mpa_reply), and a peer's device may do more.
        Kind::ConnectRequest | Kind::ConnectReply | Kind::Established => {
            ird = ird.min(lim.max_rd_atom);
            ord = ord.min(lim.max_rd_atom);
        }
        // Not the ULP's to read (iwcm.c and rdma_cm ignore them here):
        // cleared, not a fault.  qedr's CLOSE carries the connection's
        // ird/ord (qedr_iw_issue_event fills them for every event).
        Kind::Disconnect | Kind::Close => {
            ird = 0;
            ord = 0;
        }
    }

    // Addresses.
    let mut use_addrs = false;
    if matches!(f.kind, Kind::ConnectRequest | Kind::ConnectReply) {
        if family_ok(f.local_family) && f.local_family == f.remote_family {
            use_addrs = true;
        } else if f.kind == Kind::ConnectReply && f.local_family == 0 && f.remote_family == 0 {
            // qedr never fills a CONNECT_REPLY's addresses
            // (qedr_iw_issue_event): the cm_id's own stand in, not a fault.
        } else {
            faults = faults.with(Faults::BAD_FAMILY);
        }
    }

    if f.kind == Kind::ConnectRequest && !f.provider_data {
        faults = faults.with(Faults::NO_PROVIDER_DATA);
    }

    // A request is accepted only when everything about it is right (IRD/ORD
    // are clamped, as the device would negotiate them down anyway).
    let request_bad = Faults::BAD_STATUS
        .with(Faults::PDATA_NOT_ALLOWED)
        .with(Faults::PDATA_TOO_LONG)
        .with(Faults::PDATA_BAD_POINTER)
        .with(Faults::BAD_FAMILY)
        .with(Faults::NO_PROVIDER_DATA);
    if refuse_on_fault && faults.0 & request_bad.0 != 0 {
        return Verdict::Refuse(faults);
    }
    Verdict::Deliver {
        status,
        copy_pdata,
        ird,
        ord,
        use_addrs,
        faults,
    }
}
