{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='append_new_columns',
        tblproperties=log_checkpoint_tblproperties(),
    )
}}

{#- The audit cannot be recomputed from canonical history: a full refresh would erase it, and a new
    column is appended to it (null in the rows written before) instead of failing the build. -#}
{{ guard_full_refresh() }}

{#-
    Append-only audit of what each run invalidated and replayed: which balances were stale, and
    which input change invalidated them. One row per slice of int_balance_slices_invalidated, with
    the keys the slice covers and the view rows this invocation rewrote among them. Written after
    the view, so its watermarks only ever record replays that were committed.
-#}

{%- set bounds = slice_bounds() %}
{%- set new_events_after = bounds.new_events_after %}
{%- set replay_from = bounds.replay_from %}
{#- The view's version after this build: the version this build published (the same as the
    previous build's when it merged no row). Read only once the slices exist: `dbt compile` and
    `dbt docs generate` work on an empty warehouse (a run always builds the slices first;
    slice_bounds then gives nones). -#}
{%- set view_version = current_table_version(ref('merchant_balance_current'))
    if execute and load_relation(ref('int_balance_slices_invalidated')) is not none else none %}

with slices as (
    select * from {{ ref('int_balance_slices_invalidated') }}
),

daily_balances as (
    select * from {{ ref('int_merchant_daily_balances') }}
),

view_rows as (
    select * from {{ ref('merchant_balance_current') }}
),

slice_keys as (
    select distinct
        slice_merchants.cause,
        slice_merchants.segment,
        slice_merchants.slice_merchant_id,
        slice_merchants.from_date,
        slice_merchants.observed_at,
        daily_balances.merchant_id,
        daily_balances.currency
    from {{ ref('int_balance_merchants_invalidated') }} as slice_merchants
    inner join daily_balances
        on slice_merchants.merchant_id = daily_balances.merchant_id
        and slice_merchants.from_date <= daily_balances.balance_date
    {#- The earliest replayed day as a literal, so the checkpoint scan prunes partitions. #}
    {% if replay_from %}
    where daily_balances.balance_date >= date {{ quoted_literal(replay_from) }}
    {% else %}
    where false
    {% endif %}

    union all

    select distinct
        slices.cause,
        slices.segment,
        slices.merchant_id as slice_merchant_id,
        slices.from_date,
        slices.observed_at,
        new_events.merchant_id,
        new_events.currency
    from slices
    inner join {{ ref('int_payment_events_classified') }} as new_events
        on slices.cause = 'new_events'
        and new_events.is_accepted
        and slices.after_ingest_seq < new_events.ingest_seq
    {#- The same bound as a literal, so the scan prunes files to the new events. #}
    where new_events.ingest_seq > {{ new_events_after if new_events_after is not none else 'null' }}
),

watermarks as (
    {#- Every classified row up to here is folded (rejected ones included): the next run's events
        watermark, so that its scan skips files holding only rows already seen. -#}
    select max(ingest_seq) as events_watermark
    from {{ ref('int_payment_events_classified') }}
),

observations as (
    {{ latest_policy_observation() }}
),

final as (
    select
        '{{ invocation_id }}' as invocation_id,
        slices.cause,
        slices.segment,
        slices.merchant_id,
        slices.predicate,
        count(distinct slice_keys.merchant_id, slice_keys.currency) as keys_affected,
        count(distinct view_rows.merchant_id, view_rows.currency) as rows_rewritten,
        watermarks.events_watermark,
        observations.policy_observed_at,
        slices.from_date,
        slices.observed_at,
        {{ build_started_at() }} as recorded_at,
        cast({{ 'null' if view_version is none else view_version | int }} as bigint) as view_version
    from slices
    cross join watermarks
    cross join observations
    left join slice_keys
        on {{ in_same_slice('slices', 'slice_keys') }}
    left join view_rows
        on slice_keys.merchant_id = view_rows.merchant_id
        and slice_keys.currency = view_rows.currency
        and view_rows.written_by_invocation_id = '{{ invocation_id }}'
    group by
        slices.cause, slices.segment, slices.merchant_id, slices.predicate, watermarks.events_watermark,
        observations.policy_observed_at, slices.from_date, slices.observed_at
)

select * from final
