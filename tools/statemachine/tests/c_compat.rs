// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Compatibility with drivers/infiniband/core/iwcm.c (Linux 7.3): each test
//! names the C function whose behaviour it pins down.  Where C calls BUG()
//! or waits, the tests check the documented design of our machine instead
//! (destroy never waits; a CLOSE before ESTABLISHED/CONNECT_REPLY is a
//! provider fault that still releases the QP; duplicate CONNECT_REPLY and
//! ESTABLISHED are provider faults).

mod common;

use common::*;
use iw_cm_state::{step, Actions as A, Input as I, Outcome, State as S, ALL_STATES};

fn go(next: S, actions: A) -> Outcome {
    Outcome::Go { next, actions }
}

fn fault(next: S, actions: A) -> Outcome {
    Outcome::ProviderFault { next, actions }
}

#[track_caller]
fn expect(state: S, input: I, want: Outcome) {
    let got = step(state, input);
    assert_eq!(
        got,
        want,
        "\n  got:  {}\n  want: {}",
        render_transition(state, input, got),
        render_transition(state, input, want)
    );
}

/// Runs `inputs` from `start`, executing Go and ProviderFault like the glue;
/// every input must be accepted (no Invalid/Wait/Drop).  Returns the final
/// state and the inputs whose actions included DELIVER.
#[track_caller]
fn run(start: S, inputs: &[I]) -> (S, Vec<I>) {
    let mut state = start;
    let mut delivered = Vec::new();
    for &input in inputs {
        let o = step(state, input);
        let (next, actions) =
            effect(o).unwrap_or_else(|| panic!("rejected: {}", render_transition(state, input, o)));
        if actions.contains(A::DELIVER) {
            delivered.push(input);
        }
        state = next;
    }
    (state, delivered)
}

const DISCONNECTS: [I; 2] = [
    I::Disconnect { abrupt: false },
    I::Disconnect { abrupt: true },
];

// ---- iw_cm_disconnect -----------------------------------------------------

#[test]
fn disconnect_in_closing_idle_connrecv_is_ok_and_does_nothing() {
    // iw_cm_disconnect: CLOSING "remote peer closed first", IDLE "accept or
    // connect returned !0", CONN_RECV "App called disconnect before/without
    // calling accept": ret = 0 and no QP modification.
    for s in [S::Closing, S::Idle, S::ConnRecv] {
        for d in DISCONNECTS {
            expect(s, d, go(s, A::NONE));
        }
    }
}

#[test]
fn disconnect_on_listener_is_invalid() {
    // iw_cm_disconnect: case IW_CM_STATE_LISTEN: ret = -EINVAL.
    for d in DISCONNECTS {
        expect(S::Listen, d, Outcome::Invalid);
    }
}

#[test]
fn disconnect_established_moves_the_qp_and_goes_closing() {
    // iw_cm_disconnect: ESTABLISHED -> CLOSING, then iwcm_modify_qp_sqd
    // (graceful) or iwcm_modify_qp_err (abrupt); nothing delivered.
    expect(
        S::Established,
        I::Disconnect { abrupt: false },
        go(S::Closing, A::QP_SQD),
    );
    expect(
        S::Established,
        I::Disconnect { abrupt: true },
        go(S::Closing, A::QP_ERR),
    );
}

#[test]
fn disconnect_waits_only_while_the_downcall_runs() {
    // iw_cm_disconnect: wait_event(connect_wait, !IWCM_F_CONNECT_WAIT),
    // set by iw_cm_connect/iw_cm_accept until CONNECT_REPLY/ESTABLISHED,
    // i.e. until the remote peer answers.  A divergence
    // (Documentation/iw_cm.rst, "Teardown never waits for the network"):
    // ours waits only while iw_connect/iw_accept runs.
    for s in [S::Connecting, S::Accepting] {
        for d in DISCONNECTS {
            expect(s, d, Outcome::Wait);
        }
    }
}

#[test]
fn disconnect_after_the_downcall_resets_instead_of_waiting() {
    // C would wait for the network here; ours resets the QP.  An accepted
    // id goes to Closing and hears the provider's CLOSE; a connecting id
    // stays and hears the provider's CONNECT_REPLY.
    for d in DISCONNECTS {
        expect(S::AcceptSent, d, go(S::Closing, A::QP_ERR));
        expect(S::ConnSent, d, go(S::ConnSent, A::QP_ERR));
    }
    // Accepted, disconnected, then the provider's CLOSE: delivered, the QP
    // released; a late ESTABLISHED that raced the reset is dropped.
    let (s, delivered) = run(
        S::ConnRecv,
        &[I::Accept, I::AcceptDone, I::Disconnect { abrupt: false }],
    );
    assert_eq!(s, S::Closing);
    assert!(delivered.is_empty());
    expect(S::Closing, I::EvEstablished, fault(S::Closing, A::NONE));
    expect(S::Closing, I::EvClose, go(S::Idle, A::RELEASE_QP | A::DELIVER));
    // Connecting, disconnected, then the provider's failed CONNECT_REPLY.
    let (s, delivered) = run(
        S::Idle,
        &[
            I::Connect,
            I::ConnectDone,
            I::Disconnect { abrupt: true },
            I::EvConnectReply { ok: false },
        ],
    );
    assert_eq!(s, S::Idle);
    assert_eq!(delivered, [I::EvConnectReply { ok: false }]);
}

#[test]
fn the_downcall_return_after_the_events_changes_nothing() {
    // siw reports ESTABLISHED from iw_accept itself (no RTR frame awaited)
    // and CONNECT_REPLY may overtake iw_connect's return: the return then
    // finds the id where the events took it.
    for s in [S::Established, S::Closing, S::Idle, S::Destroying] {
        expect(s, I::AcceptDone, go(s, A::NONE));
        expect(s, I::ConnectDone, go(s, A::NONE));
    }
    expect(S::Accepting, I::AcceptDone, go(S::AcceptSent, A::WAKE_CONNECT_WAITERS));
    expect(S::Connecting, I::ConnectDone, go(S::ConnSent, A::WAKE_CONNECT_WAITERS));
    for s in [S::Listen, S::ConnRecv, S::Connecting, S::ConnSent, S::AcceptSent] {
        expect(s, I::AcceptDone, Outcome::Invalid);
    }
    for s in [S::Listen, S::ConnRecv, S::Accepting, S::ConnSent, S::AcceptSent] {
        expect(s, I::ConnectDone, Outcome::Invalid);
    }
}

#[test]
fn disconnect_after_destroy_is_invalid() {
    // C reaches BUG() (default case); we return -EINVAL.
    for d in DISCONNECTS {
        expect(S::Destroying, d, Outcome::Invalid);
    }
}

// ---- iw_cm_listen -----------------------------------------------------------

#[test]
fn listen_only_from_idle() {
    // iw_cm_listen: IDLE -> LISTEN then iw_create_listen; default: -EINVAL.
    for s in ALL_STATES {
        let want = if s == S::Idle {
            go(S::Listen, A::PROVIDER_LISTEN)
        } else {
            Outcome::Invalid
        };
        expect(s, I::Listen, want);
    }
}

#[test]
fn listen_failure_returns_to_idle() {
    // iw_cm_listen: "if (ret) cm_id_priv->state = IW_CM_STATE_IDLE".
    expect(S::Listen, I::ListenFailed, go(S::Idle, A::NONE));
    // ... and the id can listen again.
    assert_eq!(
        run(S::Idle, &[I::Listen, I::ListenFailed, I::Listen]).0,
        S::Listen
    );
}

// ---- iw_cm_connect ----------------------------------------------------------

#[test]
fn connect_only_from_idle_and_takes_the_qp() {
    // iw_cm_connect: state != IDLE -> -EINVAL; iw_add_ref(qp), CONN_SENT,
    // then iw_connect (ours: Connecting while it runs).
    for s in ALL_STATES {
        let want = if s == S::Idle {
            go(S::Connecting, A::ATTACH_QP | A::PROVIDER_CONNECT)
        } else {
            Outcome::Invalid
        };
        expect(s, I::Connect, want);
    }
}

#[test]
fn connect_twice_is_invalid() {
    // iw_cm_connect: the second call finds CONN_SENT (or ESTABLISHED).
    let (s, _) = run(S::Idle, &[I::Connect]);
    expect(s, I::Connect, Outcome::Invalid);
    let (s, _) = run(S::Idle, &[I::Connect, I::EvConnectReply { ok: true }]);
    expect(s, I::Connect, Outcome::Invalid);
}

#[test]
fn connect_failure_releases_the_qp_and_returns_to_idle() {
    // iw_cm_connect error path: qp = NULL, IDLE, iw_rem_ref, clear
    // CONNECT_WAIT and wake_up_all.
    expect(
        S::Connecting,
        I::ConnectFailed,
        go(S::Idle, A::RELEASE_QP | A::WAKE_CONNECT_WAITERS),
    );
    for s in ALL_STATES
        .into_iter()
        .filter(|&s| !matches!(s, S::Connecting | S::Destroying))
    {
        expect(s, I::ConnectFailed, Outcome::Invalid);
    }
}

// ---- iw_cm_accept / iw_cm_reject ------------------------------------------

#[test]
fn accept_on_a_non_connrecv_id_is_invalid() {
    // iw_cm_accept: state != CONN_RECV -> -EINVAL.  (Accepting is C's
    // CONN_RECV with IWCM_F_CONNECT_WAIT: a second accept there would take
    // a second QP reference in C; we refuse it.)
    for s in ALL_STATES {
        let want = if s == S::ConnRecv {
            go(S::Accepting, A::ATTACH_QP | A::PROVIDER_ACCEPT)
        } else {
            Outcome::Invalid
        };
        expect(s, I::Accept, want);
    }
}

#[test]
fn accept_failure_releases_the_qp_and_returns_to_idle() {
    // iw_cm_accept: "An error on accept precludes provider events": IDLE,
    // iw_rem_ref, wake_up_all.
    expect(
        S::Accepting,
        I::AcceptFailed,
        go(S::Idle, A::RELEASE_QP | A::WAKE_CONNECT_WAITERS),
    );
    for s in ALL_STATES
        .into_iter()
        .filter(|&s| !matches!(s, S::Accepting | S::Destroying))
    {
        expect(s, I::AcceptFailed, Outcome::Invalid);
    }
}

#[test]
fn reject_only_in_connrecv() {
    // iw_cm_reject: state != CONN_RECV -> -EINVAL; else IDLE and iw_reject.
    // Accepting (C's CONN_RECV after iw_cm_accept) is not C-compatible:
    // see `reject_after_accept_diverges_from_c`.
    for s in ALL_STATES.into_iter().filter(|&s| s != S::Accepting) {
        let want = if s == S::ConnRecv {
            go(S::Idle, A::PROVIDER_REJECT)
        } else {
            Outcome::Invalid
        };
        expect(s, I::Reject, want);
    }
}

#[test]
fn reject_after_accept_diverges_from_c() {
    // A divergence (Documentation/iw_cm.rst, "Other differences"): C stays
    // in CONN_RECV after iw_cm_accept until ESTABLISHED, so an
    // iw_cm_reject then goes to IDLE, calls iw_reject on a connection the
    // provider is accepting, and returns the provider's result (0 for
    // siw).  Here the id is Accepting and the reject is refused (-EINVAL)
    // without touching the provider or the QP reference the accept took.
    expect(S::Accepting, I::Reject, Outcome::Invalid);
}

// ---- iw_cm_init_qp_attr ----------------------------------------------------

#[test]
fn init_qp_attr_allowed_only_before_closing() {
    // iwcm_init_qp_init_attr / iwcm_init_qp_rts_attr: IDLE, CONN_SENT,
    // CONN_RECV (including our Accepting), ESTABLISHED; default -EINVAL.
    for s in [
        S::Idle,
        S::Connecting,
        S::ConnSent,
        S::ConnRecv,
        S::Accepting,
        S::AcceptSent,
        S::Established,
    ] {
        expect(s, I::InitQpAttr, go(s, A::NONE));
    }
    for s in [S::Listen, S::Closing, S::Destroying] {
        expect(s, I::InitQpAttr, Outcome::Invalid);
    }
}

// ---- destroy_cm_id -----------------------------------------------------------

#[test]
fn destroy_listener_destroys_the_provider_listen() {
    // destroy_cm_id: LISTEN -> DESTROYING, iw_destroy_listen; unmap.
    expect(
        S::Listen,
        I::Destroy,
        go(S::Destroying, A::PROVIDER_DESTROY_LISTEN | A::UNMAP),
    );
}

#[test]
fn destroy_established_resets_and_releases() {
    // destroy_cm_id: ESTABLISHED -> DESTROYING, iwcm_modify_qp_err, then
    // iw_rem_ref; unmap.
    let (_, a) = effect(step(S::Established, I::Destroy)).unwrap();
    assert!(
        a.contains(A::QP_ERR | A::RELEASE_QP | A::UNMAP),
        "{}",
        render_actions(a)
    );
}

#[test]
fn destroy_idle_or_closing_only_releases() {
    // destroy_cm_id: IDLE, CLOSING -> DESTROYING; the QP (if any) is taken
    // out and iw_rem_ref'd, but not moved (a CLOSING QP is already going
    // down).
    for s in [S::Idle, S::Closing] {
        expect(s, I::Destroy, go(S::Destroying, A::RELEASE_QP | A::UNMAP));
    }
}

#[test]
fn destroy_connrecv_rejects() {
    // destroy_cm_id: CONN_RECV "must tell the provider to reject".
    expect(
        S::ConnRecv,
        I::Destroy,
        go(S::Destroying, A::PROVIDER_REJECT | A::UNMAP),
    );
}

#[test]
fn destroy_twice_is_invalid() {
    // destroy_cm_id: DESTROYING -> BUG(); we return -EINVAL.
    expect(S::Destroying, I::Destroy, Outcome::Invalid);
}

#[test]
fn events_after_destroy_are_dropped() {
    // cm_work_handler: IWCM_F_DROP_EVENTS set by destroy_cm_id -> "dropping
    // event".
    for e in [
        I::EvConnectRequest,
        I::EvConnectReply { ok: true },
        I::EvConnectReply { ok: false },
        I::EvEstablished,
        I::EvDisconnect,
        I::EvClose,
    ] {
        expect(S::Destroying, e, Outcome::Drop);
    }
}

// ---- provider event handlers ----------------------------------------------

#[test]
fn connect_request_on_listener_spawns_a_child() {
    // cm_conn_req_handler: a new cm_id in CONN_RECV gets the event; the
    // listener stays in LISTEN.
    expect(
        S::Listen,
        I::EvConnectRequest,
        go(S::Listen, A::SPAWN_CHILD),
    );
}

#[test]
fn connect_reply_handler() {
    // cm_conn_rep_handler: status 0 -> ESTABLISHED, keep the QP; otherwise
    // IDLE and iw_rem_ref before cm_handler; wake_up_all either way.  (The
    // reply may come before iw_connect returns: Connecting.)
    for s in [S::Connecting, S::ConnSent] {
        expect(
            s,
            I::EvConnectReply { ok: true },
            go(S::Established, A::DELIVER | A::WAKE_CONNECT_WAITERS),
        );
        expect(
            s,
            I::EvConnectReply { ok: false },
            go(
                S::Idle,
                A::RELEASE_QP | A::DELIVER | A::WAKE_CONNECT_WAITERS,
            ),
        );
    }
}

#[test]
fn established_handler() {
    // cm_conn_est_handler: CONN_RECV (accepted) -> ESTABLISHED, deliver,
    // wake_up_all.  (siw reports it from iw_accept itself: Accepting.)
    for s in [S::Accepting, S::AcceptSent] {
        expect(
            s,
            I::EvEstablished,
            go(S::Established, A::DELIVER | A::WAKE_CONNECT_WAITERS),
        );
    }
}

#[test]
fn disconnect_handler_only_acts_when_established() {
    // cm_disconnect_handler: ESTABLISHED -> CLOSING; any other state is
    // left alone, nothing is delivered and nothing else happens.
    expect(S::Established, I::EvDisconnect, go(S::Closing, A::NONE));
    for s in ALL_STATES
        .into_iter()
        .filter(|&s| !matches!(s, S::Established | S::Destroying))
    {
        let o = step(s, I::EvDisconnect);
        assert_eq!(
            effect(o),
            Some((s, A::NONE)),
            "{}",
            render_transition(s, I::EvDisconnect, o)
        );
    }
    // Where a peer DISCONNECT can race with the id's own progress, it is a
    // plain no-op, not a fault.
    for s in [
        S::Idle,
        S::Connecting,
        S::ConnSent,
        S::Accepting,
        S::AcceptSent,
        S::Closing,
    ] {
        expect(s, I::EvDisconnect, go(s, A::NONE));
    }
}

#[test]
fn close_handler() {
    // cm_close_handler: ESTABLISHED/CLOSING -> IDLE, iw_rem_ref, then
    // cm_handler.
    for s in [S::Established, S::Closing] {
        expect(s, I::EvClose, go(S::Idle, A::RELEASE_QP | A::DELIVER));
    }
}

// ---- our design where C BUG()s or waits ------------------------------------

#[test]
fn destroy_never_waits() {
    // destroy_cm_id waits for IWCM_F_CONNECT_WAIT in C; ours does not.
    for s in ALL_STATES {
        assert_ne!(step(s, I::Destroy), Outcome::Wait, "{s:?}");
    }
}

#[test]
fn destroy_of_connecting_or_accepting_id_resets_and_releases() {
    for s in [S::Connecting, S::ConnSent, S::Accepting, S::AcceptSent] {
        expect(
            s,
            I::Destroy,
            go(
                S::Destroying,
                A::QP_ERR | A::RELEASE_QP | A::UNMAP | A::WAKE_CONNECT_WAITERS,
            ),
        );
    }
    // The downcall that was in flight may still fail afterwards: only the
    // (already taken) QP reference is released again, nothing delivered.
    expect(
        S::Destroying,
        I::ConnectFailed,
        go(S::Destroying, A::RELEASE_QP),
    );
    expect(
        S::Destroying,
        I::AcceptFailed,
        go(S::Destroying, A::RELEASE_QP),
    );
}

#[test]
fn early_close_is_a_fault_that_releases_the_qp() {
    // cm_close_handler would BUG() in CONN_SENT.
    for s in [S::Connecting, S::ConnSent] {
        expect(
            s,
            I::EvClose,
            fault(S::Idle, A::RELEASE_QP | A::WAKE_CONNECT_WAITERS),
        );
    }
    for s in [S::Idle, S::Listen, S::ConnRecv] {
        expect(s, I::EvClose, fault(s, A::NONE));
    }
}

#[test]
fn close_on_an_accepted_child_before_established_is_delivered() {
    // cm_close_handler would BUG() in CONN_RECV (accepted, not yet
    // established).  siw sends DISCONNECT + CLOSE there when an RTR-mode
    // peer closes before its RTR frame: the ULP must hear CLOSE, after the
    // QP reference is gone, and a waiting disconnect must wake.
    for s in [S::Accepting, S::AcceptSent] {
        expect(
            s,
            I::EvClose,
            go(
                S::Idle,
                A::RELEASE_QP | A::DELIVER | A::WAKE_CONNECT_WAITERS,
            ),
        );
    }
    let (s, d) = run(
        S::ConnRecv,
        &[
            I::Accept,
            I::AcceptDone,
            I::EvDisconnect,
            I::EvClose,
            I::Destroy,
        ],
    );
    assert_eq!(s, S::Destroying);
    assert_eq!(d, [I::EvClose]);
}

#[test]
fn duplicate_reply_or_established_is_a_fault() {
    // cm_conn_rep_handler / cm_conn_est_handler BUG_ON the state.
    for s in [S::Established, S::Closing, S::Idle] {
        for e in [I::EvConnectReply { ok: true }, I::EvConnectReply { ok: false }] {
            expect(s, e, fault(s, A::NONE));
        }
    }
    // A second ESTABLISHED, or one after CLOSE (siw, when its close work
    // runs before the RTR data_ready a peer's FIN woke): counted, no WARN.
    // Or in Closing, after a disconnect of an accepted id that it raced.
    for s in [S::Established, S::Idle, S::Closing] {
        expect(s, I::EvEstablished, fault(s, A::NONE));
    }
    // A reply on the passive side or ESTABLISHED on the active side too.
    for s in [S::Accepting, S::AcceptSent] {
        expect(s, I::EvConnectReply { ok: true }, fault(s, A::NONE));
    }
    for s in [S::Connecting, S::ConnSent] {
        expect(s, I::EvEstablished, fault(s, A::NONE));
    }
}

// ---- whole connections ------------------------------------------------------

#[test]
fn active_connection_lifecycle() {
    // connect, reply, local graceful disconnect, peer DISCONNECT, CLOSE.
    let (s, d) = run(
        S::Idle,
        &[
            I::Connect,
            I::EvConnectReply { ok: true },
            I::Disconnect { abrupt: false },
            I::EvDisconnect,
            I::EvClose,
            I::Destroy,
        ],
    );
    assert_eq!(s, S::Destroying);
    assert_eq!(d, [I::EvConnectReply { ok: true }, I::EvClose]);
}

#[test]
fn rejected_connect_then_reconnect() {
    // cm_conn_rep_handler failure leaves the id IDLE: iw_cm_connect works
    // again.
    let (s, d) = run(
        S::Idle,
        &[
            I::Connect,
            I::EvConnectReply { ok: false },
            I::Connect,
            I::EvConnectReply { ok: true },
        ],
    );
    assert_eq!(s, S::Established);
    assert_eq!(
        d,
        [
            I::EvConnectReply { ok: false },
            I::EvConnectReply { ok: true }
        ]
    );
}

#[test]
fn passive_connection_peer_closes_first() {
    // Listener spawns a child (CONN_RECV); child accepts, ESTABLISHED; the
    // peer disconnects (CLOSING), our disconnect is then a no-op returning
    // 0 (iw_cm_disconnect "remote peer closed first"), CLOSE -> IDLE.
    assert_eq!(run(S::Idle, &[I::Listen, I::EvConnectRequest]).0, S::Listen);
    let (s, d) = run(
        S::ConnRecv,
        &[
            I::Accept,
            I::EvEstablished,
            I::EvDisconnect,
            I::Disconnect { abrupt: true },
            I::EvClose,
            I::Disconnect { abrupt: false },
            I::Destroy,
        ],
    );
    assert_eq!(s, S::Destroying);
    assert_eq!(d, [I::EvEstablished, I::EvClose]);
}

#[test]
fn child_handler_failure_rejects() {
    // cm_conn_req_handler: cm_handler returns non-zero -> iw_cm_reject and
    // iw_destroy_cm_id of the child.
    let (_, a) = effect(step(S::ConnRecv, I::Destroy)).unwrap();
    assert!(a.contains(A::PROVIDER_REJECT));
    // An explicit reject first leaves nothing more to reject.
    expect(S::ConnRecv, I::Reject, go(S::Idle, A::PROVIDER_REJECT));
    let (_, a) = effect(step(S::Idle, I::Destroy)).unwrap();
    assert!(!a.contains(A::PROVIDER_REJECT));
}

#[test]
fn handler_failure_on_close_or_reply_destroys_without_a_qp() {
    // cm_work_handler: a non-zero return from cm_handler calls
    // destroy_cm_id.  After CLOSE or a failed CONNECT_REPLY the id is IDLE
    // and the QP is already released, so destroy only unmaps.
    let (s, _) = run(S::Idle, &[I::Connect, I::EvConnectReply { ok: false }]);
    assert_eq!(s, S::Idle);
    let (_, a) = effect(step(s, I::Destroy)).unwrap();
    assert!(!a.contains(A::QP_ERR));
}
