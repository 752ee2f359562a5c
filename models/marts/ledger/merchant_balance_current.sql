{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key=['merchant_id', 'currency'],
        on_schema_change='fail',
        tblproperties={
            'format-version': '2',
            'write.merge.mode': 'merge-on-read',
            'write.update.mode': 'merge-on-read',
            'write.delete.mode': 'merge-on-read',
        },
    )
}}

{{ guard_full_refresh() }}

{#-
    One row per (merchant_id, currency), summed from the daily checkpoint. An incremental run
    recomputes only the keys whose checkpoint rows were written by this invocation or are past the
    view's watermarks (so a run killed between the two models is caught up), and merges only the
    rows whose values changed, in one commit. policy_observed_at changes with a row's values: a
    policy change that leaves a balance as it was does not rewrite it, so the policy watermark is
    the greater of the view's and the audit's (balance_invalidations, written after the view).
-#}

{%- set marks = balance_watermarks() %}

with daily_balances as (
    select * from {{ ref('int_merchant_daily_balances') }}
),

{% if is_incremental() %}
view_watermarks as (
    select
        coalesce(max(source_watermark), 0) as source_watermark,
        greatest(
            coalesce(max(policy_observed_at), timestamp '1970-01-01 00:00:00'),
            timestamp {{ quoted_literal(marks.audited_policy_observed_at or '1970-01-01 00:00:00') }}
        ) as policy_observed_at
    from {{ this }}
),

invalidated_keys as (
    select distinct
        daily_balances.merchant_id,
        daily_balances.currency
    from daily_balances
    cross join view_watermarks
    where daily_balances.written_by_invocation_id = '{{ invocation_id }}'
        or daily_balances.source_watermark > view_watermarks.source_watermark
        or daily_balances.policy_observed_at > view_watermarks.policy_observed_at
),

replayed_days as (
    select daily_balances.*
    from daily_balances
    left semi join invalidated_keys
        on daily_balances.merchant_id = invalidated_keys.merchant_id
        and daily_balances.currency = invalidated_keys.currency
),
{% else %}
replayed_days as (
    select * from daily_balances
),
{% endif %}

balances as (
    select
        merchant_id,
        currency,
        cast(sum(available_change) as decimal(18, 2)) as available_balance,
        cast(sum(pending_change) as decimal(18, 2)) as pending_balance,
        cast(sum(reserve_change) as decimal(18, 2)) as reserve_hold,
        max(last_event_time) as last_event_time,
        max(source_watermark) as source_watermark,
        max(policy_observed_at) as policy_observed_at
    from replayed_days
    group by 1, 2
),

final as (
    select
        merchant_id,
        currency,
        available_balance,
        pending_balance,
        reserve_hold,
        last_event_time,
        source_watermark,
        policy_observed_at,
        '{{ invocation_id }}' as written_by_invocation_id,
        current_timestamp() as written_at
    from balances
),

changed as (
    {#- On an incremental run, only the rows whose values differ from the stored ones are merged. #}
    select final.*
    from final
    {% if is_incremental() %}
    left join {{ this }} as current_rows
        on final.merchant_id = current_rows.merchant_id
        and final.currency = current_rows.currency
    where current_rows.merchant_id is null
        or not (
            final.available_balance <=> current_rows.available_balance
            and final.pending_balance <=> current_rows.pending_balance
            and final.reserve_hold <=> current_rows.reserve_hold
            and final.last_event_time <=> current_rows.last_event_time
            and final.source_watermark <=> current_rows.source_watermark
        )
    {% endif %}
)

select * from changed
