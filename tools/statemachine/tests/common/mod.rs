// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Helpers shared by the state machine tests: input classification, a
//! text rendering of transitions (for the golden table and for failure
//! messages) and a small deterministic PRNG.

// Every test crate includes this module but none uses all of it.
#![allow(dead_code)]

use iw_cm_state::{Actions, Input, Outcome, State, ALL_INPUTS, ALL_STATES};

/// Whether `input` is a ULP call or the result of a provider call made by a
/// ULP call (as opposed to a provider event being delivered).
///
/// The match is exhaustive on purpose: a new `Input` variant does not
/// compile until it is classified here.
pub fn is_ulp_call(input: Input) -> bool {
    match input {
        Input::Listen
        | Input::ListenFailed
        | Input::Connect
        | Input::ConnectFailed
        | Input::ConnectDone
        | Input::Accept
        | Input::AcceptFailed
        | Input::AcceptDone
        | Input::Reject
        | Input::Disconnect { .. }
        | Input::Destroy
        | Input::InitQpAttr => true,
        Input::EvConnectRequest
        | Input::EvConnectReply { .. }
        | Input::EvEstablished
        | Input::EvDisconnect
        | Input::EvClose => false,
    }
}

/// Whether `input` is a provider event (`Ev*`).
pub fn is_provider_event(input: Input) -> bool {
    !is_ulp_call(input)
}

/// Position of `state` in a canonical order.  Exhaustive: adding a state
/// breaks the build until the tests know about it.
pub fn state_index(state: State) -> usize {
    match state {
        State::Idle => 0,
        State::Listen => 1,
        State::ConnRecv => 2,
        State::Accepting => 3,
        State::AcceptSent => 4,
        State::Connecting => 5,
        State::ConnSent => 6,
        State::Established => 7,
        State::Closing => 8,
        State::Destroying => 9,
    }
}

/// Number of `State` variants (keep in sync with [`state_index`]).
pub const NUM_STATES: usize = 10;

/// Position of `input` in a canonical order, distinguishing the payloads.
pub fn input_index(input: Input) -> usize {
    match input {
        Input::Listen => 0,
        Input::ListenFailed => 1,
        Input::Connect => 2,
        Input::ConnectFailed => 3,
        Input::ConnectDone => 4,
        Input::Accept => 5,
        Input::AcceptFailed => 6,
        Input::AcceptDone => 7,
        Input::Reject => 8,
        Input::Disconnect { abrupt: false } => 9,
        Input::Disconnect { abrupt: true } => 10,
        Input::Destroy => 11,
        Input::InitQpAttr => 12,
        Input::EvConnectRequest => 13,
        Input::EvConnectReply { ok: true } => 14,
        Input::EvConnectReply { ok: false } => 15,
        Input::EvEstablished => 16,
        Input::EvDisconnect => 17,
        Input::EvClose => 18,
    }
}

/// Number of distinct inputs (keep in sync with [`input_index`]).
pub const NUM_INPUTS: usize = 19;

/// Index of a (state, input) pair in `0..NUM_STATES * NUM_INPUTS`.
pub fn pair_index(state: State, input: Input) -> usize {
    state_index(state) * NUM_INPUTS + input_index(input)
}

/// Every (state, input) pair, in `ALL_STATES` × `ALL_INPUTS` order.
pub fn all_pairs() -> impl Iterator<Item = (State, Input)> {
    ALL_STATES
        .iter()
        .flat_map(|&s| ALL_INPUTS.iter().map(move |&i| (s, i)))
}

/// Every action bit with its name, in bit order.
pub const ACTION_NAMES: [(Actions, &str); 13] = [
    (Actions::ATTACH_QP, "ATTACH_QP"),
    (Actions::RELEASE_QP, "RELEASE_QP"),
    (Actions::PROVIDER_LISTEN, "PROVIDER_LISTEN"),
    (Actions::PROVIDER_DESTROY_LISTEN, "PROVIDER_DESTROY_LISTEN"),
    (Actions::PROVIDER_CONNECT, "PROVIDER_CONNECT"),
    (Actions::PROVIDER_ACCEPT, "PROVIDER_ACCEPT"),
    (Actions::PROVIDER_REJECT, "PROVIDER_REJECT"),
    (Actions::QP_ERR, "QP_ERR"),
    (Actions::QP_SQD, "QP_SQD"),
    (Actions::DELIVER, "DELIVER"),
    (Actions::SPAWN_CHILD, "SPAWN_CHILD"),
    (Actions::WAKE_CONNECT_WAITERS, "WAKE_CONNECT_WAITERS"),
    (Actions::UNMAP, "UNMAP"),
];

/// Bits of every known action.
pub fn known_action_bits() -> u16 {
    ACTION_NAMES.iter().fold(0, |acc, (a, _)| acc | a.bits())
}

/// `A|B|C`, `NONE`, and any unknown bit as hex so it cannot go unnoticed.
pub fn render_actions(actions: Actions) -> String {
    let mut parts: Vec<String> = ACTION_NAMES
        .iter()
        .filter(|(a, _)| actions.contains(*a))
        .map(|(_, n)| (*n).to_string())
        .collect();
    let unknown = actions.bits() & !known_action_bits();
    if unknown != 0 {
        parts.push(format!("UNKNOWN(0x{unknown:04x})"));
    }
    if parts.is_empty() {
        "NONE".to_string()
    } else {
        parts.join("|")
    }
}

pub fn render_outcome(outcome: Outcome) -> String {
    match outcome {
        Outcome::Go { next, actions } => {
            format!("Go {next:?} [{}]", render_actions(actions))
        }
        Outcome::ProviderFault { next, actions } => {
            format!("ProviderFault {next:?} [{}]", render_actions(actions))
        }
        Outcome::Invalid => "Invalid".to_string(),
        Outcome::Wait => "Wait".to_string(),
        Outcome::Drop => "Drop".to_string(),
    }
}

/// One line of the transition table.
pub fn render_transition(state: State, input: Input, outcome: Outcome) -> String {
    format!(
        "{:<12} {:<28} -> {}",
        format!("{state:?}"),
        format!("{input:?}"),
        render_outcome(outcome)
    )
}

/// The next state and actions of a transition the glue executes (`Go` and
/// `ProviderFault`), `None` for the outcomes that change nothing.
pub fn effect(outcome: Outcome) -> Option<(State, Actions)> {
    match outcome {
        Outcome::Go { next, actions } | Outcome::ProviderFault { next, actions } => {
            Some((next, actions))
        }
        Outcome::Invalid | Outcome::Wait | Outcome::Drop => None,
    }
}

/// xorshift64* — small, deterministic, good enough to drive random walks.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Never zero (xorshift's fixed point); spread small seeds.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        ((self.next_u64() >> 32) % n as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: usize, den: usize) -> bool {
        self.below(den) < num
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}
