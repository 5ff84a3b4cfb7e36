// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Properties checked over every (State, Input) pair of
//! `ALL_STATES` × `ALL_INPUTS`.  Each test collects every violating pair
//! and fails with the whole list, one rendered transition per line.

mod common;

use common::*;
use iw_cm_state::{may_hold_qp, step, Actions, Input, Outcome, State, ALL_INPUTS, ALL_STATES};

/// Runs `check` on every pair and panics with all the violations.
fn for_every_pair(what: &str, check: impl Fn(State, Input, Outcome) -> Result<(), String>) {
    let mut failures = Vec::new();
    for (state, input) in all_pairs() {
        let outcome = step(state, input);
        if let Err(why) = check(state, input, outcome) {
            failures.push(format!(
                "  {}\n      {why}",
                render_transition(state, input, outcome)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{what}: {} violation(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn ensure(cond: bool, why: &str) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(why.to_string())
    }
}

// ---- the tables themselves -------------------------------------------------

#[test]
fn all_states_and_inputs_are_listed_exactly_once() {
    let mut seen = [0u32; NUM_STATES];
    for &s in ALL_STATES.iter() {
        seen[state_index(s)] += 1;
    }
    assert_eq!(
        seen, [1; NUM_STATES],
        "ALL_STATES must list each state once"
    );

    let mut seen = [0u32; NUM_INPUTS];
    for &i in ALL_INPUTS.iter() {
        seen[input_index(i)] += 1;
    }
    assert_eq!(
        seen, [1; NUM_INPUTS],
        "ALL_INPUTS must list each input (and payload) once"
    );
}

#[test]
fn step_is_deterministic() {
    for_every_pair("step is a function", |s, i, o| {
        ensure(step(s, i) == o, "differs on a second call")
    });
}

#[test]
fn only_known_action_bits_are_used() {
    for_every_pair("unknown action bits", |_, _, o| match effect(o) {
        Some((_, a)) => ensure(
            a.bits() & !known_action_bits() == 0,
            "action outside Actions::*",
        ),
        None => Ok(()),
    });
}

// ---- rule 1: outcome kinds by input class ----------------------------------

#[test]
fn ulp_calls_never_drop_or_fault() {
    for_every_pair(
        "ULP call answered as if it were a provider event",
        |_, i, o| {
            if !is_ulp_call(i) {
                return Ok(());
            }
            ensure(
                !matches!(o, Outcome::Drop | Outcome::ProviderFault { .. }),
                "a ULP call (or its provider-call result) must be Go, Invalid or Wait",
            )
        },
    );
}

#[test]
fn provider_events_never_invalid_or_wait() {
    for_every_pair(
        "provider event answered as if it were a ULP call",
        |_, i, o| {
            if !is_provider_event(i) {
                return Ok(());
            }
            ensure(
                !matches!(o, Outcome::Invalid | Outcome::Wait),
                "a provider event must be Go, Drop or ProviderFault",
            )
        },
    );
}

#[test]
fn wait_only_for_disconnect_while_the_downcall_runs() {
    // iw_cm_disconnect is the only call that waits in our design (destroy
    // never waits), and only while its own iw_connect/iw_accept runs:
    // never in a state where only the network can end the wait.
    for_every_pair("Wait", |s, i, o| {
        if o != Outcome::Wait {
            return Ok(());
        }
        ensure(
            matches!(i, Input::Disconnect { .. })
                && matches!(s, State::Connecting | State::Accepting),
            "only iw_cm_disconnect in Connecting/Accepting may wait",
        )
    });
}

#[test]
fn drop_only_in_destroying() {
    for_every_pair("Drop", |s, _, o| {
        if o != Outcome::Drop {
            return Ok(());
        }
        ensure(
            s == State::Destroying,
            "events are dropped only once destroyed (IWCM_F_DROP_EVENTS)",
        )
    });
}

// ---- rule 2: QP reference accounting ---------------------------------------

#[test]
fn attach_qp_only_when_not_holding_and_into_a_qp_state() {
    for_every_pair("ATTACH_QP", |s, _, o| {
        let Some((next, a)) = effect(o) else {
            return Ok(());
        };
        if !a.contains(Actions::ATTACH_QP) {
            return Ok(());
        }
        ensure(
            !may_hold_qp(s),
            "attaching in a state that may already hold the QP",
        )?;
        ensure(
            may_hold_qp(next),
            "attaching into a state that may not hold a QP (leak)",
        )?;
        ensure(
            !a.contains(Actions::RELEASE_QP),
            "ATTACH_QP and RELEASE_QP together",
        )?;
        ensure(
            matches!(o, Outcome::Go { .. }),
            "a provider fault must not attach a QP",
        )
    });
}

#[test]
fn leaving_a_qp_state_releases_the_qp() {
    for_every_pair("QP reference leak", |s, _, o| {
        let Some((next, a)) = effect(o) else {
            return Ok(());
        };
        if may_hold_qp(s) && !may_hold_qp(next) {
            ensure(
                a.contains(Actions::RELEASE_QP),
                "leaves a QP state without RELEASE_QP",
            )
        } else {
            Ok(())
        }
    });
}

#[test]
fn entering_a_qp_state_from_outside_attaches_the_qp() {
    // The converse of the leak check: a state that may hold a QP is only
    // entered from one that may not by taking the reference, so the glue
    // always has a QP for QP_ERR/QP_SQD there.
    for_every_pair("QP state without a QP", |s, _, o| {
        let Some((next, a)) = effect(o) else {
            return Ok(());
        };
        if !may_hold_qp(s) && may_hold_qp(next) {
            ensure(
                a.contains(Actions::ATTACH_QP),
                "enters a QP state without ATTACH_QP",
            )
        } else {
            Ok(())
        }
    });
}

#[test]
fn close_and_failed_connect_reply_release_before_delivery() {
    for_every_pair(
        "CLOSE / failed CONNECT_REPLY delivered with a QP ref",
        |_, i, o| {
            let Some((_, a)) = effect(o) else {
                return Ok(());
            };
            if a.contains(Actions::DELIVER)
                && matches!(i, Input::EvClose | Input::EvConnectReply { ok: false })
            {
                // cm_close_handler, cm_conn_rep_handler: iw_rem_ref before cm_handler.
                ensure(a.contains(Actions::RELEASE_QP), "must include RELEASE_QP")
            } else {
                Ok(())
            }
        },
    );
}

#[test]
fn qp_state_changes_only_where_a_qp_may_be_held() {
    for_every_pair("QP_ERR/QP_SQD without a QP", |s, _, o| {
        let Some((_, a)) = effect(o) else {
            return Ok(());
        };
        let qp_ops = a.contains(Actions::QP_ERR) || a.contains(Actions::QP_SQD);
        if !qp_ops {
            return Ok(());
        }
        ensure(may_hold_qp(s), "moves a QP in a state that holds none")?;
        ensure(
            !(a.contains(Actions::QP_ERR) && a.contains(Actions::QP_SQD)),
            "QP_ERR and QP_SQD together",
        )
    });
}

// ---- rule 3: destroy --------------------------------------------------------

#[test]
fn destroy_goes_to_destroying_from_every_other_state() {
    for &s in ALL_STATES.iter() {
        let o = step(s, Input::Destroy);
        if s == State::Destroying {
            assert_eq!(
                o,
                Outcome::Invalid,
                "{}",
                render_transition(s, Input::Destroy, o)
            );
        } else {
            assert!(
                matches!(
                    o,
                    Outcome::Go {
                        next: State::Destroying,
                        ..
                    }
                ),
                "destroy never waits and always destroys: {}",
                render_transition(s, Input::Destroy, o)
            );
        }
    }
}

#[test]
fn every_event_in_destroying_is_dropped() {
    for &i in ALL_INPUTS.iter().filter(|&&i| is_provider_event(i)) {
        let o = step(State::Destroying, i);
        assert_eq!(
            o,
            Outcome::Drop,
            "{}",
            render_transition(State::Destroying, i, o)
        );
    }
}

#[test]
fn destroying_is_absorbing_and_silent() {
    for &i in ALL_INPUTS.iter() {
        let o = step(State::Destroying, i);
        if let Some((next, a)) = effect(o) {
            let t = render_transition(State::Destroying, i, o);
            assert_eq!(next, State::Destroying, "left Destroying: {t}");
            let allowed = Actions::RELEASE_QP.bits();
            assert_eq!(
                a.bits() & !allowed,
                0,
                "only a late QP release is allowed: {t}"
            );
        }
    }
}

#[test]
fn destroy_unmaps_and_wakes_in_flight_callers() {
    // destroy_cm_id always removes the port mapping (if any); with a
    // non-waiting destroy, whoever waits in iw_cm_disconnect for a connect
    // or accept must be woken.
    for &s in ALL_STATES.iter().filter(|&&s| s != State::Destroying) {
        let o = step(s, Input::Destroy);
        let t = render_transition(s, Input::Destroy, o);
        let (_, a) = effect(o).expect("destroy is Go");
        assert!(a.contains(Actions::UNMAP), "{t}");
        if matches!(s, State::ConnSent | State::Accepting) {
            assert!(a.contains(Actions::WAKE_CONNECT_WAITERS), "{t}");
            assert!(a.contains(Actions::QP_ERR), "{t}");
        }
    }
}

// ---- further structural properties -----------------------------------------

#[test]
fn only_provider_events_deliver_and_only_ulp_calls_call_the_provider() {
    let provider_calls = Actions::PROVIDER_LISTEN
        | Actions::PROVIDER_DESTROY_LISTEN
        | Actions::PROVIDER_CONNECT
        | Actions::PROVIDER_ACCEPT
        | Actions::PROVIDER_REJECT;
    for_every_pair("delivery / downcall by the wrong side", |_, i, o| {
        let Some((_, a)) = effect(o) else {
            return Ok(());
        };
        let delivers = a.contains(Actions::DELIVER) || a.contains(Actions::SPAWN_CHILD);
        if is_ulp_call(i) {
            ensure(!delivers, "a ULP call must not deliver an event")
        } else {
            ensure(
                a.bits() & provider_calls.bits() == 0,
                "an event must not call the provider",
            )?;
            ensure(
                !a.contains(Actions::ATTACH_QP),
                "an event must not attach a QP",
            )
        }
    });
}

#[test]
fn provider_faults_only_release_and_wake() {
    let allowed = (Actions::RELEASE_QP | Actions::WAKE_CONNECT_WAITERS).bits();
    for_every_pair("ProviderFault", |_, _, o| match o {
        Outcome::ProviderFault { actions, .. } => ensure(
            actions.bits() & !allowed == 0,
            "a fault only cleans up, never delivers or calls down",
        ),
        _ => Ok(()),
    });
}

#[test]
fn disconnect_events_are_never_delivered() {
    // cm_disconnect_handler never calls cm_handler.
    for &s in ALL_STATES.iter() {
        let o = step(s, Input::EvDisconnect);
        if let Some((_, a)) = effect(o) {
            assert!(
                !a.contains(Actions::DELIVER),
                "{}",
                render_transition(s, Input::EvDisconnect, o)
            );
        }
    }
}

#[test]
fn leaving_connsent_or_accepting_wakes_waiters() {
    // A disconnect answered Wait in Connecting/Accepting sleeps until the
    // state moves on; every way out must wake it.
    for_every_pair("waiter left asleep", |s, _, o| {
        let Some((next, a)) = effect(o) else {
            return Ok(());
        };
        if matches!(s, State::Connecting | State::Accepting) && next != s {
            ensure(
                a.contains(Actions::WAKE_CONNECT_WAITERS),
                "leaves without WAKE_CONNECT_WAITERS",
            )
        } else {
            Ok(())
        }
    });
}

#[test]
fn non_transitions_change_nothing() {
    // A Go or fault to the same state must not have side effects other
    // than the ones listed here (the provider or ULP work of that input).
    for_every_pair("self-loop with effects", |s, i, o| {
        let Some((next, a)) = effect(o) else {
            return Ok(());
        };
        if next != s {
            return Ok(());
        }
        match (s, i) {
            (State::Listen, Input::EvConnectRequest) => ensure(
                a == Actions::SPAWN_CHILD,
                "CONNECT_REQUEST only spawns a child",
            ),
            (State::Destroying, Input::ConnectFailed | Input::AcceptFailed) => ensure(
                a == Actions::RELEASE_QP,
                "late downcall failure only releases",
            ),
            (State::ConnSent, Input::Disconnect { .. }) => ensure(
                a == Actions::QP_ERR,
                "a disconnect awaiting CONNECT_REPLY only resets the QP",
            ),
            _ => ensure(a == Actions::NONE, "self-loop must have no actions"),
        }
    });
}

#[test]
fn every_state_is_reachable() {
    // From a fresh id (Idle) and a freshly spawned child (ConnRecv).
    let mut reached = [false; NUM_STATES];
    let mut todo = vec![State::Idle, State::ConnRecv];
    while let Some(s) = todo.pop() {
        if std::mem::replace(&mut reached[state_index(s)], true) {
            continue;
        }
        for &i in ALL_INPUTS.iter() {
            if let Some((next, _)) = effect(step(s, i)) {
                todo.push(next);
            }
        }
    }
    for &s in ALL_STATES.iter() {
        assert!(reached[state_index(s)], "{s:?} unreachable");
    }
}
