//! The macro that holds a backend to the whole conformance suite.

/// Expands to a module `$name` of `#[test]`s, one per case of the [`suite`](crate::suite),
/// each run against the backend `$backend` (an expression of a type implementing
/// [`Backend`](crate::backend::Backend)). Test names follow the suite:
/// `$name::races::approve_versus_deny_has_one_winner`.
///
/// ```
/// approval_gate_tests::conformance!(directory, approval_gate_tests::backend::Directory);
/// # fn main() {}
/// ```
///
/// Every backend runs every case: a case added here runs everywhere.
#[macro_export]
macro_rules! conformance {
    ($name:ident, $backend:expr) => {
        $crate::__conformance_cases! {
            $name, $backend;
            model: the_gate_behaves_like_the_state_machine;
            races:
                sixty_four_processes_race_to_execute_one_approval_and_exactly_one_runs,
                approve_versus_deny_has_one_winner,
                revoke_versus_execute_never_both,
                expiry_versus_consume_has_one_consistent_outcome,
                approve_versus_expiry_has_one_outcome,
                concurrent_filings_keep_the_caps_and_deduplication_exact;
            lifecycle:
                a_request_starts_pending_and_never_authorizes,
                every_non_approved_state_refuses_consume_with_its_own_reason,
                the_expiry_boundary_is_inclusive_and_recorded,
                a_clock_past_expiry_after_persistence_refuses_and_spends,
                decisions_apply_only_to_the_right_states,
                bad_input_is_refused_and_nothing_changes_in_the_store,
                an_identical_pending_request_is_returned_not_duplicated,
                queue_cap_and_creation_limit_fail_requests_never_decisions,
                approve_as_shown_approves_only_the_record_the_human_saw,
                the_operators_default_ttl_applies_unless_the_request_asks_and_is_checked_at_open,
                the_health_check_names_what_the_store_did_not_write,
                a_waiter_wakes_with_the_decision;
            binding:
                any_change_to_action_operation_or_payload_refuses_without_spending,
                key_order_and_whitespace_do_not_matter,
                a_request_without_operation_or_payload_refuses_bindings_that_add_them,
                a_lossy_executor_type_is_refused_before_anything_is_spent,
                every_json_type_at_the_top_level_round_trips_and_null_is_refused_at_the_door;
            execute:
                runs_once_with_the_frozen_payload_and_records_start_and_finish,
                a_payload_that_differs_in_any_field_never_runs,
                an_approval_that_expires_before_the_side_effect_is_caught_by_assert_active,
                a_panicking_executor_leaves_an_unknown_outcome_and_no_second_chance,
                the_async_form_runs_once_and_records_the_error_outcome,
                dropping_the_async_execution_midway_records_an_unknown_outcome,
                binding_helper_matches_manual_canonical_text,
                error_texts_up_to_1024_bytes_are_recorded_whole_and_longer_ones_cut_with_a_mark,
                a_long_error_text_is_cut_before_a_character_that_straddles_the_limit;
            notices:
                the_ledger_keeps_what_was_delivered_and_lets_one_notifier_send_at_a_time;
            audit:
                every_event_of_a_lifecycle_is_logged_and_the_chain_verifies,
                a_workload_records_every_lifecycle_event_and_the_chain_verifies,
                every_refused_consume_leaves_a_line_even_for_an_unreadable_unknown_or_archived_request,
                a_well_chained_line_that_says_what_cannot_happen_fails_verification_at_that_line,
                every_refused_decision_leaves_a_line,
                a_cut_chain_refuses_every_yes_until_a_human_reanchors_it;
            recovery:
                sigkill_at_every_failpoint_never_executes_twice_and_recovers,
                a_process_that_dies_mid_execution_is_recorded_as_unknown_and_never_rerun;
            signed:
                a_quorum_of_signed_approvals_runs_exactly_once,
                each_approver_counts_once_and_only_signed_trusted_approvals_are_taken,
                one_denial_or_expiry_ends_a_quorum_in_progress,
                two_approvers_at_the_same_moment_both_count_once,
                forged_approvals_are_refused_with_their_reason_and_spend_nothing,
                an_approval_without_the_executors_quorum_is_refused,
                a_squatted_principal_counts_for_nothing_and_blocks_nobody,
                more_approvals_than_any_quorum_never_make_a_record_unreadable,
                every_field_an_approver_is_shown_is_signed;
            passkeys:
                a_cloned_passkey_whose_counter_goes_back_approves_nothing_and_is_audited,
                two_approvals_with_the_same_counter_race_and_exactly_one_is_recorded;
            allowances:
                an_allowance_is_granted_only_with_the_quorum_of_every_operation_it_reaches,
                a_granted_allowance_is_listed_and_revoked_once_with_its_lines;
            allowed:
                a_covered_request_is_approved_by_the_allowance_and_each_use_counted,
                exhaustion_revocation_and_expiry_after_filing_refuse_and_spend_nothing;
            allowance_races:
                sixty_four_concurrent_consumes_under_five_uses_run_exactly_five,
                a_budget_is_never_overdrawn_by_concurrent_uses,
                the_rate_and_the_window_hold_at_their_edges,
                revoke_racing_a_use_has_one_winner,
                every_forgery_of_a_kept_allowance_is_refused_at_the_consume;
            cosign:
                an_allowance_needing_two_approvers_approves_nothing_until_cosigned,
                a_cosignature_that_would_not_count_is_refused_and_changes_nothing,
                cosignatures_racing_add_each_approver_once,
                an_allowance_signed_as_part_of_a_larger_quorum_needs_all_of_it;
        }
    };
}

/// The expansion of [`conformance!`]: one module per area, one `#[test]` per case.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($name:ident, $backend:expr; $($area:ident: $($case:ident),+;)+) => {
        mod $name {
            fn backend() -> impl $crate::backend::Backend {
                $backend
            }

            /// Fails if the suite's cases never call one of the store's steps on this backend.
            #[test]
            fn every_store_step_is_called() {
                $crate::conformance::every_step_is_called(&backend(), module_path!());
            }
            $(
                mod $area {
                    $(
                        #[test]
                        fn $case() {
                            $crate::suite::$area::$case(&super::backend());
                        }
                    )+
                }
            )+
        }
    };
}

/// The cases that, between them, call every step of the store: [`every_step_is_called`]
/// runs these (cheap ones; the races and crash matrix call no step these do not).
pub const TOUR: &[&str] = &[
    "lifecycle::a_request_starts_pending_and_never_authorizes",
    "lifecycle::the_expiry_boundary_is_inclusive_and_recorded",
    "execute::a_panicking_executor_leaves_an_unknown_outcome_and_no_second_chance",
    "audit::every_refused_consume_leaves_a_line_even_for_an_unreadable_unknown_or_archived_request",
    "audit::a_workload_records_every_lifecycle_event_and_the_chain_verifies",
    "audit::a_cut_chain_refuses_every_yes_until_a_human_reanchors_it",
    "lifecycle::the_health_check_names_what_the_store_did_not_write",
    "lifecycle::a_waiter_wakes_with_the_decision",
    "passkeys::a_cloned_passkey_whose_counter_goes_back_approves_nothing_and_is_audited",
    "notices::the_ledger_keeps_what_was_delivered_and_lets_one_notifier_send_at_a_time",
    "allowances::a_granted_allowance_is_listed_and_revoked_once_with_its_lines",
    "allowed::a_covered_request_is_approved_by_the_allowance_and_each_use_counted",
    "cosign::an_allowance_needing_two_approvers_approves_nothing_until_cosigned",
];

/// Runs the [`TOUR`] of the suite against `backend` in a process of its own (this test
/// binary, `module` naming the backend's tests) with the store's calls noted
/// (`approval_gate::store_trace`), and fails naming every step of the store it never
/// called. A step no test calls is a step nobody knows works on this backend.
///
/// # Panics
///
/// If a step was never called, or the tour itself fails.
pub fn every_step_is_called(backend: &dyn crate::backend::Backend, module: &str) {
    use approval_gate::store_trace::{ENV, STEPS};

    let kind = match backend.fresh().location() {
        text if text.starts_with("postgres") => "postgres",
        _ => "dir",
    };
    // Test names leave out the crate: `directory::audit::…`.
    let prefix = module.split_once("::").map_or(module, |(_, rest)| rest);
    let trace = tempfile::NamedTempFile::new().expect("a trace file");
    let output = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(TOUR.iter().map(|case| format!("{prefix}::{case}")))
        .arg("--exact")
        .env(ENV, trace.path())
        .output()
        .expect("run the tour");
    assert!(
        output.status.success(),
        "the tour failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let ran = String::from_utf8_lossy(&output.stdout);
    assert!(
        ran.contains(&format!("{} passed", TOUR.len())),
        "every case of the tour ran: {ran}"
    );
    let noted = std::fs::read_to_string(trace.path()).expect("read the trace");
    let called: std::collections::BTreeSet<&str> = noted
        .lines()
        .filter_map(|line| line.strip_prefix(kind)?.strip_prefix(' '))
        .collect();
    let missing: Vec<&str> = STEPS
        .iter()
        .copied()
        .filter(|step| !called.contains(step))
        .collect();
    assert!(
        missing.is_empty(),
        "the conformance suite never calls these steps of the {kind} store: {missing:?}"
    );
}
