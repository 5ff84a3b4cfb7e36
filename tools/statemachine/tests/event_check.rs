// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Userspace tests of the provider event policy (event_check.rs, the same
//! file the module compiles): every event type against classes of every
//! field, checked against an independent statement of the rules.

#[path = "../../../drivers/infiniband/core/iw_cm/event_check.rs"]
#[allow(dead_code)]
mod event_check;

use event_check::*;

const KINDS: [Kind; 5] = [
    Kind::ConnectRequest,
    Kind::ConnectReply,
    Kind::Established,
    Kind::Disconnect,
    Kind::Close,
];
const STATUSES: [i32; 9] = [0, -104, -111, -110, -22, -71, 5, -4096, i32::MIN];
/// (address, length) of the private data.
const PDATA: [(usize, usize); 6] = [
    (0, 0),
    (0xffff_8880_0000_1000, 20),
    (4, 0x54),
    (0, 8),
    (0xffff_8880_0000_1000, 600),
    (0xffff_8880_0000_1000, 255),
];
const FAMILIES: [(u16, u16); 5] = [(2, 2), (10, 10), (2, 10), (0, 0), (1, 1)];
const IRD_ORD: [(u8, u8); 4] = [(0, 0), (16, 16), (17, 0), (255, 255)];
const LIM: Limits = Limits { max_rd_atom: 16 };

fn errno(s: i32) -> bool {
    (-4095..=-1).contains(&s)
}

fn each(mut f: impl FnMut(Fields, Verdict)) -> usize {
    let mut n = 0;
    for kind in KINDS {
        for status in STATUSES {
            for (pdata_addr, pdata_len) in PDATA {
                for (local_family, remote_family) in FAMILIES {
                    for (ird, ord) in IRD_ORD {
                        for provider_data in [true, false] {
                            let fl = Fields {
                                kind,
                                status,
                                pdata_addr,
                                pdata_len,
                                ird,
                                ord,
                                local_family,
                                remote_family,
                                provider_data,
                            };
                            f(fl, check(&fl, &LIM));
                            n += 1;
                        }
                    }
                }
            }
        }
    }
    n
}

#[test]
fn only_a_connect_request_is_refused_and_only_when_malformed() {
    let n = each(|f, v| {
        if let Verdict::Refuse(faults) = v {
            assert_eq!(f.kind, Kind::ConnectRequest, "{f:?}");
            assert!(!faults.is_empty());
        } else if f.kind == Kind::ConnectRequest {
            // Accepted requests: status 0, usable families, a provider
            // object, private data absent or readable-looking.
            assert_eq!(f.status, 0, "{f:?}");
            assert!(f.provider_data);
            assert!(matches!(f.local_family, 2 | 10) && f.local_family == f.remote_family);
            assert!(f.pdata_len == 0 || (f.pdata_addr >= MIN_PDATA_ADDR && f.pdata_len <= 512));
        }
    });
    assert!(n > 10_000);
}

#[test]
fn delivered_fields_are_within_the_rules() {
    each(|f, v| {
        let Verdict::Deliver { status, copy_pdata, ird, ord, use_addrs, .. } = v else {
            return;
        };
        match f.kind {
            Kind::ConnectRequest => assert_eq!(status, 0),
            _ => assert!(status == 0 || errno(status), "{f:?} -> {status}"),
        }
        if copy_pdata {
            assert!(pdata_allowed(f.kind, status));
            assert!(f.pdata_len > 0 && f.pdata_len <= MPA_MAX_PRIVDATA);
            assert!(f.pdata_addr >= MIN_PDATA_ADDR);
        }
        match f.kind {
            Kind::Disconnect | Kind::Close => assert_eq!((ird, ord), (0, 0)),
            _ => assert!(ird <= LIM.max_rd_atom && ord <= LIM.max_rd_atom),
        }
        if use_addrs {
            assert!(matches!(f.local_family, 2 | 10) && f.local_family == f.remote_family);
        }
    });
}

#[test]
fn well_formed_events_pass_unchanged_and_without_faults() {
    each(|f, v| {
        let status_ok = match f.kind {
            Kind::ConnectRequest => f.status == 0,
            _ => f.status == 0 || errno(f.status),
        };
        let fam_ok = !matches!(f.kind, Kind::ConnectRequest | Kind::ConnectReply)
            || (matches!(f.local_family, 2 | 10) && f.local_family == f.remote_family)
            || (f.kind == Kind::ConnectReply && (f.local_family, f.remote_family) == (0, 0));
        let pd_ok = f.pdata_len == 0
            || (pdata_allowed(f.kind, f.status) && f.pdata_addr >= MIN_PDATA_ADDR && f.pdata_len <= 512)
            || (f.kind == Kind::ConnectReply && status_ok && !pdata_allowed(f.kind, f.status));
        // (ird/ord: clamped or cleared, never a fault.)
        let irdord_ok = true;
        let pv_ok = f.kind != Kind::ConnectRequest || f.provider_data;
        let well_formed = status_ok && fam_ok && pd_ok && irdord_ok && pv_ok;
        match v {
            Verdict::Deliver { status, ird, ord, faults, .. } => {
                assert_eq!(faults.is_empty(), well_formed, "{f:?} -> {v:?}");
                if well_formed && !matches!(f.kind, Kind::Disconnect | Kind::Close) {
                    assert_eq!((status, ird, ord), (f.status, f.ird.min(16), f.ord.min(16)));
                } else if well_formed {
                    assert_eq!((status, ird, ord), (f.status, 0, 0));
                }
            }
            Verdict::Refuse(_) => assert!(!well_formed, "{f:?}"),
        }
    });
}

/// siw's CONNECT_REPLY for a malformed MPA reply (issue 10): -EINVAL with
/// private data at NULL + 4, length (u8)(0x5858 - 4).  Dropped unread, no
/// fault (a peer can send it at will), the failure delivered.
#[test]
fn siw_malformed_mpa_reply_is_delivered_without_private_data() {
    let f = Fields {
        kind: Kind::ConnectReply,
        status: -22,
        pdata_addr: 4,
        pdata_len: 0x54,
        ird: 0,
        ord: 0,
        local_family: 2,
        remote_family: 2,
        provider_data: false,
    };
    assert_eq!(
        check(&f, &LIM),
        Verdict::Deliver {
            status: -22,
            copy_pdata: false,
            ird: 0,
            ord: 0,
            use_addrs: true,
            faults: Faults::NONE
        }
    );
    // The peer's reject keeps its private data; NULL + 4 there is a fault.
    let rej = Fields { status: -104, pdata_addr: 0xffff_8880_0000_1000, ..f };
    assert!(matches!(check(&rej, &LIM), Verdict::Deliver { copy_pdata: true, .. }));
    let rej_bad = Fields { status: -104, ..f };
    assert!(matches!(
        check(&rej_bad, &LIM),
        Verdict::Deliver { copy_pdata: false, faults, .. } if faults.contains(Faults::PDATA_BAD_POINTER)
    ));
}

/// qedr (drivers/infiniband/hw/qedr/qedr_iw_cm.c): a failed passive
/// connection is ESTABLISHED with a negative errno, then CLOSE, and every
/// event carries the connection's ird/ord.  Delivered as iwcm.c does
/// (the status as it is; CLOSE's ird/ord cleared), without a fault.
#[test]
fn qedr_failed_passive_connection_is_delivered_as_c_does() {
    let est = Fields {
        kind: Kind::Established,
        status: -104,
        pdata_addr: 0,
        pdata_len: 0,
        ird: 8,
        ord: 8,
        local_family: 2,
        remote_family: 2,
        provider_data: false,
    };
    assert!(matches!(
        check(&est, &LIM),
        Verdict::Deliver { status: -104, ird: 8, ord: 8, faults: Faults::NONE, .. }
    ));
    let close = Fields { kind: Kind::Close, status: 0, ..est };
    assert!(matches!(
        check(&close, &LIM),
        Verdict::Deliver { status: 0, ird: 0, ord: 0, faults: Faults::NONE, .. }
    ));
    // A status that is no errno is still a fault.
    let bad = Fields { status: 7, ..est };
    assert!(matches!(
        check(&bad, &LIM),
        Verdict::Deliver { status: 0, faults, .. } if faults.contains(Faults::BAD_STATUS)
    ));
}

/// qedr's CONNECT_REPLY has no addresses (family 0) and the peer's
/// ird/ord unclamped (its limit is 32): delivered, the cm_id's own
/// addresses standing in, ird/ord clamped, no fault.  A request without
/// addresses is still refused.
#[test]
fn qedr_connect_reply_without_addresses_is_not_a_fault() {
    let rep = Fields {
        kind: Kind::ConnectReply,
        status: 0,
        pdata_addr: 0,
        pdata_len: 0,
        ird: 64,
        ord: 64,
        local_family: 0,
        remote_family: 0,
        provider_data: false,
    };
    assert_eq!(
        check(&rep, &LIM),
        Verdict::Deliver {
            status: 0,
            copy_pdata: false,
            ird: 16,
            ord: 16,
            use_addrs: false,
            faults: Faults::NONE
        }
    );
    let req = Fields { kind: Kind::ConnectRequest, provider_data: true, ..rep };
    assert!(matches!(check(&req, &LIM), Verdict::Refuse(f) if f.contains(Faults::BAD_FAMILY)));
}
