{{ config(store_failures=true, schema='audit', alias='merchant_balance_reconciliation_failures') }}

{#-
    Reconciliation: recompute balances from canonical history (the accepted events of
    int_payment_events_classified through post_payment_events, the fold int_payment_events_posted
    is) and return each key where the view differs, with both values, its slice and this
    reconciliation's build_seq and invocation.
    Which keys: reconciliation_scope. A scheduled build compares one rotating slice of the keys
    (var reconcile_slices, N: every key at least once every N builds) and the slices of keys found
    wrong before; with var reconcile_full, every key. The slice filter is on the key and on the
    stored bucket, so the scan of canonical events can skip the other slices' row groups (not
    those of rows classified before the bucket column, nor a small batch's single row group
    until maintenance sorts its day again).
    Failing rows are stored in payledger_audit.merchant_balance_reconciliation_failures; the
    on-run-end hook record_reconciliation appends what was compared to
    payledger_audit.merchant_balance_reconciliation_runs, reading the scope from the comment below.
-#}
{%- set scope = reconciliation_scope() %}
/* reconciliation_scope: {{ scope | tojson }} */

with accepted_events as (
    {#- The slice's accepted events, folded as int_payment_events_posted folds all of them: the
        bucket ranges let the scan skip the row groups of the other slices
        (int_payment_events_classified is sorted by bucket within each write and day). #}
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
        and {{ reconciliation_slice_predicate(scope, bucket='reconciliation_bucket') }}
),

posted as (
    {{ post_payment_events('accepted_events') | indent(4) }}
),

replayed as (
    select
        merchant_id,
        currency,
        cast(sum(available_delta) as {{ money_type() }}) as available_balance,
        cast(sum(pending_delta) as {{ money_type() }}) as pending_balance,
        cast(sum(reserve_delta) as {{ money_type() }}) as reserve_hold,
        max(event_time) as last_event_time,
        max(ingest_seq) as source_watermark
    from posted
    group by 1, 2
),

view_rows as (
    select * from {{ ref('merchant_balance_current') }}
    where {{ reconciliation_slice_predicate(scope) }}
),

compared as (
    select
        coalesce(replayed.merchant_id, view_rows.merchant_id) as merchant_id,
        coalesce(replayed.currency, view_rows.currency) as currency,
        view_rows.available_balance as view_available_balance,
        replayed.available_balance as replayed_available_balance,
        view_rows.pending_balance as view_pending_balance,
        replayed.pending_balance as replayed_pending_balance,
        view_rows.reserve_hold as view_reserve_hold,
        replayed.reserve_hold as replayed_reserve_hold,
        view_rows.source_watermark as view_source_watermark,
        replayed.source_watermark as replayed_source_watermark,
        view_rows.last_event_time as view_last_event_time,
        replayed.last_event_time as replayed_last_event_time
    from replayed
    full outer join view_rows
        on replayed.merchant_id = view_rows.merchant_id
        and replayed.currency = view_rows.currency
),

wrong as (
    select * from compared
    where not (
            view_available_balance <=> replayed_available_balance
            and view_pending_balance <=> replayed_pending_balance
            and view_reserve_hold <=> replayed_reserve_hold
            and view_source_watermark <=> replayed_source_watermark
            and view_last_event_time <=> replayed_last_event_time
        )
)

select
    wrong.*,
    {{ quoted_literal(invocation_id) }} as invocation_id,
    {{ reconciliation_slice_of('wrong.merchant_id', scope.slices) }} as reconciliation_slice,
    {{ scope.slices }} as reconciliation_slices,
    {{ scope.build_seq }} as build_seq
from wrong
