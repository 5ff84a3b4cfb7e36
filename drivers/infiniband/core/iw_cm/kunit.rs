// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! KUnit tests of the glue, against a fake iWARP provider: the suite
//! `rust_iw_cm`.
//!
//! The suite runs when iw_cm_kunit.ko is loaded (never with iw_cm.ko
//! alone); results are in /sys/kernel/debug/kunit/rust_iw_cm/results.  It
//! reaches iw_cm.ko through the nine exported functions and the test-only
//! interface of kunit_iface.rs (`crate::iface`).  Its cases are listed
//! below, in the order KUnit runs them; each runs the function of the same
//! name in the file of its concern:
//!
//! - kunit/fake_provider.rs, kunit/fake_ulp.rs: the fake provider and the
//!   fake ULP every case drives iw_cm.ko with;
//! - kunit/lifecycle.rs: a cm_id's life against a well-behaved provider;
//! - kunit/table.rs: the debugfs table and the stuck-handler watch's set;
//! - kunit/bad_input.rs: a provider that misbehaves;
//! - kunit/stress_model.rs, kunit/stress_ulp.rs, kunit/stress_park.rs,
//!   kunit/stress.rs: the concurrency stress.
//!
//! Pure functions of iw_cm.ko are tested in place, in suites of iw_cm.ko
//! itself (`#[kunit_tests]` at the end of their file: cm_id/portmap.rs,
//! cm_id/table.rs).

/// A helper's check that returns `Err` (the case then fails) instead of
/// ending the case's thread.
macro_rules! ensure {
    ($cond:expr) => {
        if !($cond) {
            pr_err!("check failed: {}\n", stringify!($cond));
            return Err(EINVAL);
        }
    };
}

// KUnit's `assert!` and `assert_eq!` for the files of the suite, as in a
// `#[test]` body (`#[kunit_tests]` defines them there): a failed one fails
// the running case and ends its thread (logged only, on a thread that runs
// no case); core's would panic the kernel.  The report's line is in the
// file of the case's concern (listed above).

#[allow(unused_macros)]
macro_rules! assert {
    ($cond:expr $(,)?) => {{
        kernel::kunit_assert!(
            "rust_iw_cm",
            c"drivers/infiniband/core/iw_cm/kunit/",
            0,
            $cond
        );
    }};
}

#[allow(unused_macros)]
macro_rules! assert_eq {
    ($left:expr, $right:expr $(,)?) => {{
        kernel::kunit_assert_eq!(
            "rust_iw_cm",
            c"drivers/infiniband/core/iw_cm/kunit/",
            0,
            $left,
            $right
        );
    }};
}

#[cfg(CONFIG_KUNIT = "y")]
mod bad_input;
#[cfg(CONFIG_KUNIT = "y")]
mod fake_provider;
#[cfg(CONFIG_KUNIT = "y")]
mod fake_ulp;
#[cfg(CONFIG_KUNIT = "y")]
mod lifecycle;
#[cfg(CONFIG_KUNIT = "y")]
mod stress;
#[cfg(CONFIG_KUNIT = "y")]
mod stress_model;
#[cfg(CONFIG_KUNIT = "y")]
mod stress_park;
#[cfg(CONFIG_KUNIT = "y")]
mod stress_ulp;
#[cfg(CONFIG_KUNIT = "y")]
mod table;

#[kernel::macros::kunit_tests(rust_iw_cm)]
mod tests {
    use super::{bad_input, lifecycle, stress, table};
    use kernel::prelude::*;

    #[test]
    fn upcalls_from_softirq_context() -> Result {
        lifecycle::upcalls_from_softirq_context()
    }

    #[test]
    fn close_is_delivered_after_the_qp_reference_is_dropped() -> Result {
        lifecycle::close_is_delivered_after_the_qp_reference_is_dropped()
    }

    #[test]
    fn failed_connect_reply_drops_the_qp_reference_first() -> Result {
        lifecycle::failed_connect_reply_drops_the_qp_reference_first()
    }

    #[test]
    fn destroy_of_a_connected_id_resets_the_qp_and_drops_later_events() -> Result {
        lifecycle::destroy_of_a_connected_id_resets_the_qp_and_drops_later_events()
    }

    #[test]
    fn late_provider_upcalls_after_the_device_is_gone() -> Result {
        lifecycle::late_provider_upcalls_after_the_device_is_gone()
    }

    #[test]
    fn api_misuse_returns_einval_and_leaves_no_reference() -> Result {
        lifecycle::api_misuse_returns_einval_and_leaves_no_reference()
    }

    #[test]
    fn table_line_names_role_state_addresses_handler_and_references() -> Result {
        table::table_line_names_role_state_addresses_handler_and_references()
    }

    #[test]
    fn many_cm_ids_register_and_unregister_consistently() -> Result {
        table::many_cm_ids_register_and_unregister_consistently()
    }

    #[test]
    fn a_read_lists_no_cm_id_created_after_its_count_line() -> Result {
        table::a_read_lists_no_cm_id_created_after_its_count_line()
    }

    #[test]
    fn only_running_deliveries_are_in_the_watch_set() -> Result {
        table::only_running_deliveries_are_in_the_watch_set()
    }

    #[test]
    fn churn_keeps_at_most_one_number_reserved() -> Result {
        table::churn_keeps_at_most_one_number_reserved()
    }

    #[test]
    fn backlog_above_the_cap_is_clamped() -> Result {
        lifecycle::backlog_above_the_cap_is_clamped()
    }

    #[test]
    fn a_queued_request_costs_its_child_alone() -> Result {
        lifecycle::a_queued_request_costs_its_child_alone()
    }

    #[test]
    fn a_request_child_enters_the_table_when_delivered() -> Result {
        lifecycle::a_request_child_enters_the_table_when_delivered()
    }

    #[test]
    fn listen_with_a_backlog_beyond_kmalloc_max() -> Result {
        lifecycle::listen_with_a_backlog_beyond_kmalloc_max()
    }

    #[test]
    fn child_destroyed_inside_its_connect_request() -> Result {
        lifecycle::child_destroyed_inside_its_connect_request()
    }

    #[test]
    fn failing_connect_request_handler_rejects_and_frees_the_child() -> Result {
        lifecycle::failing_connect_request_handler_rejects_and_frees_the_child()
    }

    #[test]
    fn accepted_child_gets_established_then_close() -> Result {
        lifecycle::accepted_child_gets_established_then_close()
    }

    #[test]
    fn accepted_child_hears_close_when_the_peer_closes_first() -> Result {
        lifecycle::accepted_child_hears_close_when_the_peer_closes_first()
    }

    #[test]
    fn disconnect_of_an_accepted_id_does_not_wait_for_established() -> Result {
        lifecycle::disconnect_of_an_accepted_id_does_not_wait_for_established()
    }

    #[test]
    fn an_aborted_accept_hears_close_within_the_bound() -> Result {
        lifecycle::an_aborted_accept_hears_close_within_the_bound()
    }

    #[test]
    fn disconnect_of_a_connecting_id_does_not_wait_for_the_reply() -> Result {
        lifecycle::disconnect_of_a_connecting_id_does_not_wait_for_the_reply()
    }

    #[test]
    fn close_gives_the_qp_back_while_an_earlier_handler_runs() -> Result {
        lifecycle::close_gives_the_qp_back_while_an_earlier_handler_runs()
    }

    #[test]
    fn a_blocked_handler_does_not_delay_other_cm_ids() -> Result {
        lifecycle::a_blocked_handler_does_not_delay_other_cm_ids()
    }

    #[test]
    fn destroy_from_the_own_handler_does_not_deadlock() -> Result {
        lifecycle::destroy_from_the_own_handler_does_not_deadlock()
    }

    #[test]
    fn nonzero_handler_return_destroys_the_id() -> Result {
        lifecycle::nonzero_handler_return_destroys_the_id()
    }

    #[test]
    fn bad_provider_input_matrix() -> Result {
        bad_input::bad_provider_input_matrix()
    }

    #[test]
    fn malformed_event_contents() -> Result {
        bad_input::malformed_event_contents()
    }

    #[test]
    fn unbalanced_rem_ref_is_ignored() -> Result {
        bad_input::unbalanced_rem_ref_is_ignored()
    }

    #[test]
    fn destroyed_listener_rejects_its_undelivered_requests() -> Result {
        lifecycle::destroyed_listener_rejects_its_undelivered_requests()
    }

    #[test]
    fn requests_are_handed_back_without_allocating() -> Result {
        lifecycle::requests_are_handed_back_without_allocating()
    }

    #[test]
    fn connect_request_on_a_non_listener_is_rejected_back() -> Result {
        bad_input::connect_request_on_a_non_listener_is_rejected_back()
    }

    #[test]
    fn reject_msg_strings() {
        lifecycle::reject_msg_strings()
    }

    #[test]
    fn concurrency_stress() -> Result {
        stress::concurrency_stress()
    }
}
