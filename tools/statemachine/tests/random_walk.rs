// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Deterministic random walks over a small world of cm_ids: an active side,
//! a listener, and the children the listener spawns (each starts in
//! ConnRecv, as cm_conn_req_handler creates it).  ULP calls and provider
//! events are interleaved at random across the ids; `step` decides, and
//! the walk checks what a ULP could observe:
//!
//! * active side: a CONNECT_REPLY only for a connect that is pending (so at
//!   most one per successful `iw_cm_connect`), CLOSE only after a
//!   successful CONNECT_REPLY;
//! * passive side: ESTABLISHED at most once, and only after an accept;
//!   CLOSE only after ESTABLISHED;
//! * listener: children spawned only while listening;
//! * nothing delivered (and no child spawned) after destroy;
//! * the QP reference (a bool) is never taken twice, is held exactly in the
//!   states where `may_hold_qp`, and is not held in Idle or after destroy.
//!
//! Invalid/Wait/Drop are rejected inputs: the walk stays in the old state.
//! ProviderFault is applied like the glue does (warn, take `next` and the
//! clean-up actions).
//!
//! Environment overrides: IW_CM_WALK_SEED, IW_CM_WALKS, IW_CM_WALK_STEPS.

mod common;

use common::*;
use iw_cm_state::{may_hold_qp, step, Actions, Input, Outcome, State, ALL_INPUTS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Active,
    Listener,
    Child,
}

/// One cm_id as the ULP and the glue see it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Id {
    role: Role,
    state: State,
    /// iw_cm holds a reference on the QP.
    qp_held: bool,
    /// `Destroy` was accepted.
    destroyed: bool,
    /// `Listen` accepted and neither failed nor destroyed since.
    listening: bool,
    /// `Connect` accepted, neither failed synchronously nor answered yet.
    connect_pending: bool,
    /// `Accept` accepted, neither failed synchronously nor answered yet.
    accept_pending: bool,
    /// The ULP saw a successful CONNECT_REPLY or ESTABLISHED and no CLOSE.
    connected: bool,
    connects: u32,
    replies: u32,
    established: u32,
}

impl Id {
    fn new(role: Role, state: State) -> Id {
        Id {
            role,
            state,
            qp_held: false,
            destroyed: false,
            listening: false,
            connect_pending: false,
            accept_pending: false,
            connected: false,
            connects: 0,
            replies: 0,
            established: 0,
        }
    }
}

const ACTIVE_INPUTS: &[Input] = &[
    Input::Connect,
    Input::Connect,
    Input::Connect,
    Input::ConnectFailed,
    Input::EvConnectReply { ok: true },
    Input::EvConnectReply { ok: true },
    Input::EvConnectReply { ok: true },
    Input::EvConnectReply { ok: false },
    Input::Disconnect { abrupt: false },
    Input::Disconnect { abrupt: false },
    Input::Disconnect { abrupt: true },
    Input::EvDisconnect,
    Input::EvDisconnect,
    Input::EvClose,
    Input::EvClose,
    Input::EvClose,
    Input::InitQpAttr,
];

const LISTENER_INPUTS: &[Input] = &[
    Input::Listen,
    Input::Listen,
    Input::Listen,
    Input::ListenFailed,
    Input::EvConnectRequest,
    Input::EvConnectRequest,
    Input::EvConnectRequest,
    Input::EvConnectRequest,
    Input::Disconnect { abrupt: false },
    Input::InitQpAttr,
];

const CHILD_INPUTS: &[Input] = &[
    Input::Accept,
    Input::Accept,
    Input::Accept,
    Input::AcceptFailed,
    Input::Reject,
    Input::EvEstablished,
    Input::EvEstablished,
    Input::EvEstablished,
    Input::Disconnect { abrupt: false },
    Input::Disconnect { abrupt: false },
    Input::Disconnect { abrupt: true },
    Input::EvDisconnect,
    Input::EvDisconnect,
    Input::EvClose,
    Input::EvClose,
    Input::EvClose,
    Input::InitQpAttr,
];

/// Children tracked per walk; later spawns are not driven further.
const MAX_CHILDREN: usize = 6;

fn fail(why: String) -> Result<bool, String> {
    Err(why)
}

/// Applies `outcome` of `input` to `id` and checks everything the ULP and
/// the glue could observe.  Returns whether a child was spawned.
fn apply(id: &mut Id, input: Input, outcome: Outcome) -> Result<bool, String> {
    let before = id.clone();
    let mut spawned = false;

    match outcome {
        Outcome::Invalid | Outcome::Wait => {
            if !is_ulp_call(input) {
                return fail(format!("{outcome:?} for a provider event"));
            }
        }
        Outcome::Drop => {
            if !is_provider_event(input) {
                return fail("Drop for a ULP call".into());
            }
            if !before.destroyed || before.state != State::Destroying {
                return fail("event dropped although the id was not destroyed".into());
            }
        }
        Outcome::Go { next, actions } | Outcome::ProviderFault { next, actions } => {
            let fault = matches!(outcome, Outcome::ProviderFault { .. });
            if fault {
                if !is_provider_event(input) {
                    return fail("ProviderFault for a ULP call".into());
                }
                let cleanup = (Actions::RELEASE_QP | Actions::WAKE_CONNECT_WAITERS).bits();
                if actions.bits() & !cleanup != 0 {
                    return fail("a provider fault did more than clean up".into());
                }
            }

            // QP reference.
            if (actions.contains(Actions::QP_ERR) || actions.contains(Actions::QP_SQD))
                && !before.qp_held
            {
                return fail("QP state change without a QP reference".into());
            }
            if actions.contains(Actions::ATTACH_QP) {
                if id.qp_held {
                    return fail("QP reference taken twice".into());
                }
                id.qp_held = true;
            }
            if actions.contains(Actions::RELEASE_QP) {
                // The glue takes the pointer out under the lock: releasing
                // when nothing is held is a no-op, not a double put.
                id.qp_held = false;
            }

            // What the ULP sees.
            if actions.contains(Actions::DELIVER) {
                if before.destroyed {
                    return fail("event delivered after destroy".into());
                }
                match input {
                    Input::EvConnectReply { ok } => {
                        if !before.connect_pending {
                            return fail("CONNECT_REPLY without a pending connect".into());
                        }
                        id.connect_pending = false;
                        id.replies += 1;
                        if id.replies > id.connects {
                            return fail("more CONNECT_REPLYs than connects".into());
                        }
                        if ok {
                            id.connected = true;
                        }
                    }
                    Input::EvEstablished => {
                        if !before.accept_pending {
                            return fail("ESTABLISHED without a pending accept".into());
                        }
                        id.accept_pending = false;
                        id.established += 1;
                        if id.established > 1 {
                            return fail("ESTABLISHED delivered twice".into());
                        }
                        id.connected = true;
                    }
                    Input::EvClose => {
                        // An accepted child may hear CLOSE without
                        // ESTABLISHED (the peer closed first); an active
                        // id never hears it before its CONNECT_REPLY.
                        if !before.connected && !before.accept_pending {
                            return fail(
                                "CLOSE before a successful CONNECT_REPLY/ESTABLISHED or an accept"
                                    .into(),
                            );
                        }
                        id.accept_pending = false;
                        if !actions.contains(Actions::RELEASE_QP) {
                            return fail(
                                "CLOSE delivered before the QP reference is dropped".into(),
                            );
                        }
                        id.connected = false;
                    }
                    _ => return fail(format!("{input:?} delivered to the ULP")),
                }
                if input == (Input::EvConnectReply { ok: false })
                    && !actions.contains(Actions::RELEASE_QP)
                {
                    return fail("failed CONNECT_REPLY delivered with the QP held".into());
                }
            }
            if actions.contains(Actions::SPAWN_CHILD) {
                if before.destroyed {
                    return fail("child spawned after destroy".into());
                }
                if !before.listening || input != Input::EvConnectRequest {
                    return fail("child spawned by a non-listener".into());
                }
                spawned = true;
            }

            // ULP bookkeeping of calls that were accepted.
            match input {
                Input::Connect => {
                    id.connect_pending = true;
                    id.connects += 1;
                }
                Input::ConnectFailed => id.connect_pending = false,
                Input::Accept => id.accept_pending = true,
                Input::AcceptFailed => id.accept_pending = false,
                Input::Listen => id.listening = true,
                Input::ListenFailed => id.listening = false,
                Input::Destroy => {
                    id.destroyed = true;
                    id.listening = false;
                }
                _ => {}
            }

            if before.destroyed && next != State::Destroying {
                return fail("left Destroying".into());
            }
            id.state = next;
        }
    }

    if !matches!(outcome, Outcome::Go { .. } | Outcome::ProviderFault { .. }) && *id != before {
        return fail("a rejected input changed the id".into());
    }

    // Invariants after every step.
    if id.qp_held != may_hold_qp(id.state) {
        return fail(format!(
            "QP held = {} in {:?} (may_hold_qp = {})",
            id.qp_held,
            id.state,
            may_hold_qp(id.state)
        ));
    }
    if id.state == State::Idle && id.qp_held {
        return fail("QP held in Idle".into());
    }
    if id.destroyed && (id.state != State::Destroying || id.qp_held) {
        return fail("destroyed id not in Destroying or still holding the QP".into());
    }
    if !id.destroyed {
        if id.state == State::Destroying {
            return fail("Destroying without destroy".into());
        }
        if id.listening != (id.state == State::Listen) {
            return fail("listening as seen by the ULP disagrees with the state".into());
        }
        // A disconnect of an accepted id before ESTABLISHED closes it
        // without the ULP ever hearing it connected.
        let connected = id.state == State::Established
            || (id.state == State::Closing && !id.accept_pending);
        if id.connected != connected {
            return fail("connected as seen by the ULP disagrees with the state".into());
        }
    }
    Ok(spawned)
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

struct Stats {
    /// Pairs (by `pair_index`) seen at least once.
    pairs: Vec<bool>,
    spawned: u64,
    delivered: u64,
    /// Deliveries per input, by `input_index`.
    delivered_by_input: Vec<u64>,
    destroyed: u64,
}

/// One walk; panics with the trace on the first violation.
fn walk(seed: u64, n: u64, steps: u64, stats: &mut Stats) {
    let mut rng = Rng::new(seed ^ n.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let mut ids = vec![
        Id::new(Role::Active, State::Idle),
        Id::new(Role::Listener, State::Idle),
    ];
    let mut trace: Vec<(usize, Role, State, Input, Outcome)> = Vec::new();

    for _ in 0..steps {
        let children = ids.len() - 2;
        let which = match rng.below(10) {
            0..=3 => 0,
            4 | 5 => 1,
            _ if children == 0 => 1,
            _ => 2 + rng.below(children),
        };
        let id = &mut ids[which];
        // Destroy (or a failing handler) is rare so that walks get deep;
        // the other inputs are mostly the role's own, sometimes anything.
        let input = if rng.chance(1, 50) {
            Input::Destroy
        } else if rng.chance(1, 5) {
            rng.pick(&ALL_INPUTS)
        } else {
            rng.pick(match id.role {
                Role::Active => ACTIVE_INPUTS,
                Role::Listener => LISTENER_INPUTS,
                Role::Child => CHILD_INPUTS,
            })
        };
        let outcome = step(id.state, input);
        // step is pure: asking again in the same state gives the same answer.
        assert_eq!(
            step(id.state, input),
            outcome,
            "step() is not deterministic"
        );
        trace.push((which, id.role, id.state, input, outcome));
        stats.pairs[pair_index(id.state, input)] = true;

        match apply(id, input, outcome) {
            Ok(spawned) => {
                if let Some((_, a)) = effect(outcome) {
                    if a.contains(Actions::DELIVER) {
                        stats.delivered += 1;
                        stats.delivered_by_input[input_index(input)] += 1;
                    }
                }
                if input == Input::Destroy
                    && id.destroyed
                    && trace.last().unwrap().2 != State::Destroying
                {
                    stats.destroyed += 1;
                }
                if spawned {
                    stats.spawned += 1;
                    if ids.len() - 2 < MAX_CHILDREN {
                        // cm_conn_req_handler: the child starts in CONN_RECV.
                        ids.push(Id::new(Role::Child, State::ConnRecv));
                    }
                }
            }
            Err(why) => {
                let lines: Vec<String> = trace
                    .iter()
                    .map(|&(k, r, s, i, o)| {
                        format!(
                            "  id{k} {:<9} {}",
                            format!("{r:?}"),
                            render_transition(s, i, o)
                        )
                    })
                    .collect();
                panic!(
                    "walk {n} (IW_CM_WALK_SEED={seed}) failed: {why}\n\
                     id{which} as the checker left it: {:?}\ntrace:\n{}",
                    ids[which],
                    lines.join("\n")
                );
            }
        }
    }
}

#[test]
fn random_walks_keep_the_ulp_view_and_qp_refs_consistent() {
    let seed = env_u64("IW_CM_WALK_SEED", 0x013C_5EED);
    let walks = env_u64("IW_CM_WALKS", 10_000);
    let steps = env_u64("IW_CM_WALK_STEPS", 50);
    let mut stats = Stats {
        pairs: vec![false; NUM_STATES * NUM_INPUTS],
        spawned: 0,
        delivered: 0,
        delivered_by_input: vec![0; NUM_INPUTS],
        destroyed: 0,
    };
    for n in 0..walks {
        walk(seed, n, steps, &mut stats);
    }

    // The walks must actually explore: every (state, input) pair is hit,
    // and the interesting things happen often.
    if walks >= 10_000 && steps >= 50 {
        let missing: Vec<String> = all_pairs()
            .filter(|&(s, i)| !stats.pairs[pair_index(s, i)])
            .map(|(s, i)| format!("  {s:?} {i:?}"))
            .collect();
        assert!(
            missing.is_empty(),
            "pairs never exercised:\n{}",
            missing.join("\n")
        );
        assert!(
            stats.spawned > walks,
            "too few children spawned: {}",
            stats.spawned
        );
        assert!(
            stats.delivered > walks / 2,
            "too few deliveries: {}",
            stats.delivered
        );
        assert!(
            stats.destroyed > walks,
            "too few destroys: {}",
            stats.destroyed
        );
        // Each kind of ULP-visible event is delivered many times.
        for i in [
            Input::EvConnectReply { ok: true },
            Input::EvConnectReply { ok: false },
            Input::EvEstablished,
            Input::EvClose,
        ] {
            let n = stats.delivered_by_input[input_index(i)];
            assert!(n > walks / 10, "{i:?} delivered only {n} times");
        }
        eprintln!(
            "{walks} walks x {steps} steps: {} children, {} deliveries {:?}, {} destroys",
            stats.spawned, stats.delivered, stats.delivered_by_input, stats.destroyed
        );
    }
}

#[test]
fn single_id_walks_from_every_start() {
    // One id per walk, inputs uniform over ALL_INPUTS (no role bias), from
    // the two states a cm_id can be born in.
    let seed = env_u64("IW_CM_WALK_SEED", 0x013C_5EED);
    for (start, role) in [(State::Idle, Role::Active), (State::ConnRecv, Role::Child)] {
        for n in 0..2_000u64 {
            let mut rng = Rng::new(seed.wrapping_add(n) ^ 0xA5A5_5A5A);
            let mut id = Id::new(role, start);
            let mut trace = Vec::new();
            for _ in 0..40 {
                let input = rng.pick(&ALL_INPUTS);
                let outcome = step(id.state, input);
                trace.push(render_transition(id.state, input, outcome));
                if let Err(why) = apply(&mut id, input, outcome) {
                    panic!("walk {n} from {start:?}: {why}\n  {}", trace.join("\n  "));
                }
            }
        }
    }
}

#[test]
fn the_checker_rejects_bad_transitions() {
    // The walk checker must catch what a broken `step` could return; feed
    // it hand-made outcomes and check it names the violated property.
    fn id_in(role: Role, state: State, qp_held: bool) -> Id {
        let mut id = Id::new(role, state);
        id.qp_held = qp_held;
        id
    }
    fn expect_err(mut id: Id, input: Input, outcome: Outcome, what: &str) {
        match apply(&mut id, input, outcome) {
            Err(why) => assert!(why.contains(what), "expected '{what}', got '{why}'"),
            Ok(_) => panic!(
                "checker accepted {}",
                render_transition(id.state, input, outcome)
            ),
        }
    }
    let go = |next, actions| Outcome::Go { next, actions };

    // CONNECT_REPLY with no connect pending.
    let mut id = id_in(Role::Active, State::ConnSent, true);
    id.connected = false;
    expect_err(
        id,
        Input::EvConnectReply { ok: true },
        go(State::Established, Actions::DELIVER),
        "without a pending connect",
    );
    // Leaving ConnSent without releasing the QP.
    let mut id = id_in(Role::Active, State::ConnSent, true);
    id.connect_pending = true;
    id.connects = 1;
    expect_err(
        id,
        Input::ConnectFailed,
        go(State::Idle, Actions::NONE),
        "QP held = true in Idle",
    );
    // Attaching twice.
    let id = id_in(Role::Active, State::ConnSent, true);
    expect_err(
        id,
        Input::Connect,
        go(State::ConnSent, Actions::ATTACH_QP),
        "taken twice",
    );
    // CLOSE before ESTABLISHED.
    let id = id_in(Role::Child, State::Accepting, true);
    expect_err(
        id,
        Input::EvClose,
        go(State::Idle, Actions::RELEASE_QP | Actions::DELIVER),
        "CLOSE before",
    );
    // CLOSE delivered while the QP is still held.
    let mut id = id_in(Role::Active, State::Established, true);
    id.connected = true;
    expect_err(
        id,
        Input::EvClose,
        go(State::Idle, Actions::DELIVER),
        "QP reference is dropped",
    );
    // Delivery after destroy.
    let mut id = id_in(Role::Active, State::Destroying, false);
    id.destroyed = true;
    expect_err(
        id,
        Input::EvConnectReply { ok: false },
        go(State::Destroying, Actions::DELIVER),
        "after destroy",
    );
    // Spawning from a non-listener.
    let id = id_in(Role::Listener, State::Idle, false);
    expect_err(
        id,
        Input::EvConnectRequest,
        go(State::Idle, Actions::SPAWN_CHILD),
        "non-listener",
    );
    // A second ESTABLISHED.
    let mut id = id_in(Role::Child, State::Accepting, true);
    id.accept_pending = true;
    id.established = 1;
    expect_err(
        id,
        Input::EvEstablished,
        go(State::Established, Actions::DELIVER),
        "ESTABLISHED delivered twice",
    );
    // DISCONNECT delivered to the ULP.
    let mut id = id_in(Role::Active, State::Established, true);
    id.connected = true;
    expect_err(
        id,
        Input::EvDisconnect,
        go(State::Closing, Actions::DELIVER),
        "delivered to the ULP",
    );
    // Drop of a live id's event, Wait for an event, fault for a ULP call.
    let id = id_in(Role::Active, State::Idle, false);
    expect_err(id.clone(), Input::EvClose, Outcome::Drop, "not destroyed");
    expect_err(
        id.clone(),
        Input::EvClose,
        Outcome::Wait,
        "for a provider event",
    );
    expect_err(
        id,
        Input::Connect,
        Outcome::ProviderFault {
            next: State::Idle,
            actions: Actions::NONE,
        },
        "ProviderFault for a ULP call",
    );

    // And the real transitions of a full connection pass.
    let mut id = Id::new(Role::Active, State::Idle);
    for input in [
        Input::Connect,
        Input::EvConnectReply { ok: true },
        Input::Disconnect { abrupt: false },
        Input::EvDisconnect,
        Input::EvClose,
        Input::Destroy,
    ] {
        let o = step(id.state, input);
        apply(&mut id, input, o)
            .unwrap_or_else(|e| panic!("{}: {e}", render_transition(id.state, input, o)));
    }
    assert_eq!(id.state, State::Destroying);
}
