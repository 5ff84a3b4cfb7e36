// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The iWARP connection state machine of one cm_id.
//!
//! This file has no kernel dependencies: the module compiles it as
//! `iw_cm_main::state`, and `tools/statemachine` compiles the very same file
//! in userspace so that `cargo test` checks every (state, input) pair.
//!
//! [`step`] maps a state and an input (a ULP call, the result of a provider
//! call, or a provider event being delivered) to the next state and the
//! [`Actions`] the kernel glue must execute, in this order: take the QP
//! reference out under the cm_id lock, unlock, drop the QP reference, call
//! the provider, deliver to the ULP.  The QP reference is therefore always
//! released outside any spinlock and before CLOSE or a failed CONNECT_REPLY
//! reaches the ULP (siw_destroy_qp and c4iw_destroy_qp wait for it).
//!
//! Mirrors the states of `enum iw_cm_state` in drivers/infiniband/core/iwcm.h,
//! with three additions that split C's IWCM_F_CONNECT_WAIT in two: while
//! the provider's `iw_accept` or `iw_connect` runs ([`State::Accepting`],
//! [`State::Connecting`]) and after it returned, when only the network can
//! bring ESTABLISHED or CONNECT_REPLY ([`State::AcceptSent`],
//! [`State::ConnSent`]).  iwcm.c's `iw_cm_disconnect` waits for the flag to
//! clear, i.e. for the remote peer; this machine waits only for the
//! downcall ([`Outcome::Wait`]) and afterwards resets the connection (QP to
//! ERR), so that a silent peer cannot hold a teardown.  Where C calls BUG()
//! this machine answers [`Outcome::ProviderFault`] (the glue counts it and
//! logs it once, without a WARN: a peer can cause every one of them) or
//! [`Outcome::Invalid`] (the ULP gets -EINVAL).

/// Connection state of a cm_id (`enum iw_cm_state` in iwcm.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Unbound, inactive.
    Idle,
    /// Listening for connect requests.
    Listen,
    /// Inbound request delivered, waiting for the ULP to accept or reject.
    ConnRecv,
    /// `iw_cm_accept` called, the provider's `iw_accept` still running
    /// (C: CONN_RECV with IWCM_F_CONNECT_WAIT, during the downcall).
    Accepting,
    /// `iw_accept` returned 0, waiting for ESTABLISHED from the network
    /// (C: CONN_RECV with IWCM_F_CONNECT_WAIT, after the downcall).
    AcceptSent,
    /// `iw_cm_connect` called, the provider's `iw_connect` still running
    /// (C: CONN_SENT during the downcall).
    Connecting,
    /// `iw_connect` returned 0, waiting for CONNECT_REPLY from the network.
    ConnSent,
    /// Connection established.
    Established,
    /// Disconnect started (locally or by the peer), waiting for CLOSE.
    Closing,
    /// `iw_destroy_cm_id` (or a failing ULP handler) destroyed the id; every
    /// later provider event is dropped.
    Destroying,
}

/// Everything that can happen to a cm_id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// ULP: `iw_cm_listen`.
    Listen,
    /// Provider: `iw_create_listen` (or the port mapper) failed.
    ListenFailed,
    /// ULP: `iw_cm_connect`.
    Connect,
    /// Provider: `iw_connect` (or the port mapper) failed.
    ConnectFailed,
    /// Provider: `iw_connect` returned 0.
    ConnectDone,
    /// ULP: `iw_cm_accept`.
    Accept,
    /// Provider: `iw_accept` failed.
    AcceptFailed,
    /// Provider: `iw_accept` returned 0.
    AcceptDone,
    /// ULP: `iw_cm_reject`.
    Reject,
    /// ULP: `iw_cm_disconnect`; `abrupt` resets the connection.
    Disconnect {
        /// Reset (QP to ERR) instead of a graceful close (QP to SQD).
        abrupt: bool,
    },
    /// ULP: `iw_destroy_cm_id`, or a ULP handler returned non-zero.
    Destroy,
    /// ULP: `iw_cm_init_qp_attr`.
    InitQpAttr,
    /// Provider event IW_CM_EVENT_CONNECT_REQUEST, being delivered.
    EvConnectRequest,
    /// Provider event IW_CM_EVENT_CONNECT_REPLY; `ok` when its status is 0.
    EvConnectReply {
        /// The event's status was 0 (accepted by the peer).
        ok: bool,
    },
    /// Provider event IW_CM_EVENT_ESTABLISHED.
    EvEstablished,
    /// Provider event IW_CM_EVENT_DISCONNECT.
    EvDisconnect,
    /// Provider event IW_CM_EVENT_CLOSE.
    EvClose,
}

/// What the glue does for one transition (a bit set).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions(u16);

impl Actions {
    /// Nothing to do.
    pub const NONE: Actions = Actions(0);
    /// Look up the QP by number and take iw_cm's reference on it.
    pub const ATTACH_QP: Actions = Actions(1 << 0);
    /// Drop iw_cm's QP reference (outside the lock, before any delivery).
    pub const RELEASE_QP: Actions = Actions(1 << 1);
    /// Call the provider's `iw_create_listen`.
    pub const PROVIDER_LISTEN: Actions = Actions(1 << 2);
    /// Call the provider's `iw_destroy_listen`.
    pub const PROVIDER_DESTROY_LISTEN: Actions = Actions(1 << 3);
    /// Call the provider's `iw_connect`.
    pub const PROVIDER_CONNECT: Actions = Actions(1 << 4);
    /// Call the provider's `iw_accept`.
    pub const PROVIDER_ACCEPT: Actions = Actions(1 << 5);
    /// Call the provider's `iw_reject`.
    pub const PROVIDER_REJECT: Actions = Actions(1 << 6);
    /// Move the QP to ERR (abrupt close).
    pub const QP_ERR: Actions = Actions(1 << 7);
    /// Move the QP to SQD (graceful close: RDMAC CLOSING).
    pub const QP_SQD: Actions = Actions(1 << 8);
    /// Deliver the event to the ULP's `cm_handler`.
    pub const DELIVER: Actions = Actions(1 << 9);
    /// Create a child cm_id for the request and deliver it to the ULP.
    pub const SPAWN_CHILD: Actions = Actions(1 << 10);
    /// Wake callers waiting for a connect or accept to finish.
    pub const WAKE_CONNECT_WAITERS: Actions = Actions(1 << 11);
    /// Remove the port mapper's mapping of the local address.
    pub const UNMAP: Actions = Actions(1 << 12);

    /// Whether every action of `other` is in `self`.
    pub const fn contains(self, other: Actions) -> bool {
        self.0 & other.0 == other.0
    }

    /// The union of two action sets.
    pub const fn with(self, other: Actions) -> Actions {
        Actions(self.0 | other.0)
    }

    /// The raw bits (for tests and traces).
    pub const fn bits(self) -> u16 {
        self.0
    }
}

impl core::ops::BitOr for Actions {
    type Output = Actions;
    fn bitor(self, rhs: Actions) -> Actions {
        self.with(rhs)
    }
}

/// Result of one [`step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Move to `next` and execute `actions`.
    Go {
        /// The next state.
        next: State,
        /// What the glue executes.
        actions: Actions,
    },
    /// A ULP call not allowed in this state: return -EINVAL, change nothing.
    Invalid,
    /// `iw_cm_disconnect` while this cm_id's `iw_connect`/`iw_accept`
    /// downcall runs: wait for the downcall to return (never for the
    /// network) and retry.  The glue answers a call from the id's own
    /// handler with -EINVAL instead of waiting.
    Wait,
    /// A provider event after destroy: drop it silently.
    Drop,
    /// A provider event that is impossible in this state (duplicate or out
    /// of order): count it, log it once (no WARN: a remote peer can make
    /// a provider send it), drop it, take `next` and `actions` (used to
    /// release the QP when a CLOSE comes early).
    ProviderFault {
        /// The next state.
        next: State,
        /// What the glue executes.
        actions: Actions,
    },
}

use Actions as A;

const fn go(next: State, actions: Actions) -> Outcome {
    Outcome::Go { next, actions }
}

/// The transition function.  Pure: no locks, no side effects.
pub fn step(state: State, input: Input) -> Outcome {
    use Input as I;
    use State as S;

    match (state, input) {
        // ---- ULP calls ---------------------------------------------------
        (S::Idle, I::Listen) => go(S::Listen, A::PROVIDER_LISTEN),
        (_, I::Listen) => Outcome::Invalid,
        (S::Listen, I::ListenFailed) => go(S::Idle, A::NONE),
        (_, I::ListenFailed) => Outcome::Invalid,

        (S::Idle, I::Connect) => go(S::Connecting, A::ATTACH_QP | A::PROVIDER_CONNECT),
        (_, I::Connect) => Outcome::Invalid,
        (S::Connecting, I::ConnectFailed) => go(S::Idle, A::RELEASE_QP | A::WAKE_CONNECT_WAITERS),
        (S::Destroying, I::ConnectFailed) => go(S::Destroying, A::RELEASE_QP),
        (_, I::ConnectFailed) => Outcome::Invalid,
        (S::Connecting, I::ConnectDone) => go(S::ConnSent, A::WAKE_CONNECT_WAITERS),
        // The provider's events overtook its return (siw may deliver
        // CONNECT_REPLY before iw_connect returns), or the ULP destroyed
        // the id meanwhile: nothing left to do.
        (S::Established | S::Closing | S::Idle | S::Destroying, I::ConnectDone) => {
            go(state, A::NONE)
        }
        (_, I::ConnectDone) => Outcome::Invalid,

        (S::ConnRecv, I::Accept) => go(S::Accepting, A::ATTACH_QP | A::PROVIDER_ACCEPT),
        (_, I::Accept) => Outcome::Invalid,
        // An error on accept precludes provider events (iwcm.c).
        (S::Accepting, I::AcceptFailed) => go(S::Idle, A::RELEASE_QP | A::WAKE_CONNECT_WAITERS),
        (S::Destroying, I::AcceptFailed) => go(S::Destroying, A::RELEASE_QP),
        (_, I::AcceptFailed) => Outcome::Invalid,
        (S::Accepting, I::AcceptDone) => go(S::AcceptSent, A::WAKE_CONNECT_WAITERS),
        // As for ConnectDone (siw reports ESTABLISHED from iw_accept when
        // no RTR frame is awaited).
        (S::Established | S::Closing | S::Idle | S::Destroying, I::AcceptDone) => {
            go(state, A::NONE)
        }
        (_, I::AcceptDone) => Outcome::Invalid,

        (S::ConnRecv, I::Reject) => go(S::Idle, A::PROVIDER_REJECT),
        (_, I::Reject) => Outcome::Invalid,

        (S::Established, I::Disconnect { abrupt }) => {
            go(S::Closing, if abrupt { A::QP_ERR } else { A::QP_SQD })
        }
        (S::Listen, I::Disconnect { .. }) => Outcome::Invalid,
        // The peer closed first, or accept/connect failed, or the ULP never
        // accepted: nothing to do, and not an error (iwcm.c).
        (S::Closing | S::Idle | S::ConnRecv, I::Disconnect { .. }) => go(state, A::NONE),
        // The provider's downcall is running: wait for it to return.
        (S::Connecting | S::Accepting, I::Disconnect { .. }) => Outcome::Wait,
        // Accepted, and only the network can bring ESTABLISHED (siw waits
        // for the peer's RTR frame with no timer): iwcm.c waits for it,
        // for good if the peer stays silent.  Reset the connection instead,
        // graceful or not (nothing was established to close gracefully):
        // the provider reports CLOSE (siw at once, from the QP's move to
        // ERR), which is delivered.
        (S::AcceptSent, I::Disconnect { .. }) => go(S::Closing, A::QP_ERR),
        // Connecting, and only the network can bring CONNECT_REPLY: reset
        // the QP and stay; the provider's CONNECT_REPLY (siw: its MPA reply
        // timer at the latest) ends the connect as usual.
        (S::ConnSent, I::Disconnect { .. }) => go(S::ConnSent, A::QP_ERR),
        (S::Destroying, I::Disconnect { .. }) => Outcome::Invalid,

        (S::Listen, I::Destroy) => go(S::Destroying, A::PROVIDER_DESTROY_LISTEN | A::UNMAP),
        (
            S::Established | S::Connecting | S::ConnSent | S::Accepting | S::AcceptSent,
            I::Destroy,
        ) => go(
            S::Destroying,
            A::QP_ERR | A::RELEASE_QP | A::UNMAP | A::WAKE_CONNECT_WAITERS,
        ),
        (S::Idle | S::Closing, I::Destroy) => go(S::Destroying, A::RELEASE_QP | A::UNMAP),
        (S::ConnRecv, I::Destroy) => go(S::Destroying, A::PROVIDER_REJECT | A::UNMAP),
        (S::Destroying, I::Destroy) => Outcome::Invalid,

        (
            S::Idle
            | S::Connecting
            | S::ConnSent
            | S::ConnRecv
            | S::Accepting
            | S::AcceptSent
            | S::Established,
            I::InitQpAttr,
        ) => go(state, A::NONE),
        (_, I::InitQpAttr) => Outcome::Invalid,

        // ---- provider events (at delivery, in order) ---------------------
        (S::Destroying, I::EvConnectRequest | I::EvConnectReply { .. } | I::EvEstablished) => {
            Outcome::Drop
        }
        (S::Destroying, I::EvDisconnect | I::EvClose) => Outcome::Drop,

        (S::Listen, I::EvConnectRequest) => go(S::Listen, A::SPAWN_CHILD),
        (_, I::EvConnectRequest) => Outcome::ProviderFault {
            next: state,
            actions: A::NONE,
        },

        (S::Connecting | S::ConnSent, I::EvConnectReply { ok: true }) => {
            go(S::Established, A::DELIVER | A::WAKE_CONNECT_WAITERS)
        }
        (S::Connecting | S::ConnSent, I::EvConnectReply { ok: false }) => go(
            S::Idle,
            A::RELEASE_QP | A::DELIVER | A::WAKE_CONNECT_WAITERS,
        ),
        (_, I::EvConnectReply { .. }) => Outcome::ProviderFault {
            next: state,
            actions: A::NONE,
        },

        (S::Accepting | S::AcceptSent, I::EvEstablished) => {
            go(S::Established, A::DELIVER | A::WAKE_CONNECT_WAITERS)
        }
        // Also in Closing when the ULP disconnected an accepted id before
        // ESTABLISHED came and the provider's ESTABLISHED was already on
        // its way (siw's RTR data_ready racing the QP's move to ERR):
        // CLOSE follows and ends the connection; the ULP, which asked to
        // close it, does not hear of it opening.
        (_, I::EvEstablished) => Outcome::ProviderFault {
            next: state,
            actions: A::NONE,
        },

        (S::Established, I::EvDisconnect) => go(S::Closing, A::NONE),
        // The peer's DISCONNECT racing our own disconnect, or arriving after
        // a failed connect: iwcm.c ignores it, and so do we.
        (
            S::Closing | S::Idle | S::Connecting | S::ConnSent | S::Accepting | S::AcceptSent,
            I::EvDisconnect,
        ) => go(state, A::NONE),
        (S::Listen | S::ConnRecv, I::EvDisconnect) => Outcome::ProviderFault {
            next: state,
            actions: A::NONE,
        },

        (S::Established | S::Closing, I::EvClose) => go(S::Idle, A::RELEASE_QP | A::DELIVER),
        // CLOSE on an accepted child before ESTABLISHED: siw sends it when
        // the peer asked for an RTR frame and closed before sending it
        // (siw_cm.c SIW_CM_WORK_PEER_CLOSE in RDMA_MODE: DISCONNECT, then
        // CLOSE).  C would BUG(); the ULP hears CLOSE (rdma_cm:
        // DISCONNECTED), or its queue would wait for ESTABLISHED forever.
        (S::Accepting | S::AcceptSent, I::EvClose) => go(
            S::Idle,
            A::RELEASE_QP | A::DELIVER | A::WAKE_CONNECT_WAITERS,
        ),
        // CLOSE before CONNECT_REPLY: C would BUG(); no provider sends it
        // (siw reports a dropped connection as CONNECT_REPLY -ECONNRESET).
        // Drop the event but still release the QP so that destroy_qp
        // cannot hang.
        (S::Connecting | S::ConnSent, I::EvClose) => Outcome::ProviderFault {
            next: S::Idle,
            actions: A::RELEASE_QP | A::WAKE_CONNECT_WAITERS,
        },
        (S::Idle | S::Listen | S::ConnRecv, I::EvClose) => Outcome::ProviderFault {
            next: state,
            actions: A::NONE,
        },
    }
}

/// Whether `state` may hold iw_cm's QP reference.  Used by the tests to
/// check that no transition leaves a QP reference behind.
pub const fn may_hold_qp(state: State) -> bool {
    matches!(
        state,
        State::Connecting
            | State::ConnSent
            | State::Accepting
            | State::AcceptSent
            | State::Established
            | State::Closing
    )
}

/// All states, for exhaustive tests.
pub const ALL_STATES: [State; 10] = [
    State::Idle,
    State::Listen,
    State::ConnRecv,
    State::Accepting,
    State::AcceptSent,
    State::Connecting,
    State::ConnSent,
    State::Established,
    State::Closing,
    State::Destroying,
];

/// All inputs, for exhaustive tests.
pub const ALL_INPUTS: [Input; 19] = [
    Input::Listen,
    Input::ListenFailed,
    Input::Connect,
    Input::ConnectFailed,
    Input::ConnectDone,
    Input::Accept,
    Input::AcceptFailed,
    Input::AcceptDone,
    Input::Reject,
    Input::Disconnect { abrupt: false },
    Input::Disconnect { abrupt: true },
    Input::Destroy,
    Input::InitQpAttr,
    Input::EvConnectRequest,
    Input::EvConnectReply { ok: true },
    Input::EvConnectReply { ok: false },
    Input::EvEstablished,
    Input::EvDisconnect,
    Input::EvClose,
];

/// The machine's rules checked where it runs, in the kernel (KUnit, at
/// `insmod iw_cm.ko`); `tools/statemachine` checks every pair against the
/// golden table on the host.
#[cfg(CONFIG_KUNIT)]
#[kernel::macros::kunit_tests(rust_iw_cm_state)]
mod tests {
    use super::*;

    /// The outcome's next state and actions, if it moves.
    fn moves(o: Outcome) -> Option<(State, Actions)> {
        match o {
            Outcome::Go { next, actions } | Outcome::ProviderFault { next, actions } => {
                Some((next, actions))
            }
            Outcome::Invalid | Outcome::Wait | Outcome::Drop => None,
        }
    }

    #[test]
    fn no_transition_leaves_a_qp_reference_behind() {
        for s in ALL_STATES {
            for i in ALL_INPUTS {
                if let Some((next, actions)) = moves(step(s, i)) {
                    if may_hold_qp(s) && !may_hold_qp(next) {
                        assert!(actions.contains(Actions::RELEASE_QP));
                    }
                }
            }
        }
    }

    #[test]
    fn disconnect_waits_only_while_a_downcall_runs() {
        let d = Input::Disconnect { abrupt: false };
        assert_eq!(step(State::Connecting, d), Outcome::Wait);
        assert_eq!(step(State::Accepting, d), Outcome::Wait);
        assert_eq!(
            moves(step(State::ConnSent, d)),
            Some((State::ConnSent, Actions::QP_ERR))
        );
        assert_eq!(
            moves(step(State::AcceptSent, d)),
            Some((State::Closing, Actions::QP_ERR))
        );
    }

    #[test]
    fn a_close_before_established_is_delivered_and_gives_the_qp_back() {
        let want = Actions::RELEASE_QP | Actions::DELIVER;
        assert!(matches!(
            moves(step(State::AcceptSent, Input::EvClose)),
            Some((State::Idle, a)) if a.contains(want)
        ));
    }

    #[test]
    fn a_late_established_is_a_provider_fault_not_a_delivery() {
        for s in [State::Idle, State::Closing, State::Established] {
            assert!(matches!(
                step(s, Input::EvEstablished),
                Outcome::ProviderFault { actions, .. } if !actions.contains(Actions::DELIVER)
            ));
        }
    }
}
