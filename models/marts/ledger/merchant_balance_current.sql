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
    One row per (merchant_id, currency). An incremental run recomputes only the keys that
    balance_invalidated_keys() returns and merges only the rows whose values changed, in one commit.
-#}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
),

{% if is_incremental() %}
invalidated_keys as (
    {{ balance_invalidated_keys(this) }}
),

replayed_events as (
    select accepted_events.*
    from accepted_events
    left semi join invalidated_keys
        on accepted_events.merchant_id = invalidated_keys.merchant_id
        and accepted_events.currency = invalidated_keys.currency
),
{% else %}
replayed_events as (
    select * from accepted_events
),
{% endif %}

posted as (
    {{ post_payment_events('replayed_events') }}
),

observations as (
    select max(observed_at) as policy_observed_at
    from (
        select observed_at from {{ ref('int_merchant_segment_versions') }}
        union all
        select observed_at from {{ ref('int_reserve_policy_versions') }}
    )
),

balances as (
    select
        merchant_id,
        currency,
        cast(sum(available_delta) as decimal(18, 2)) as available_balance,
        cast(sum(pending_delta) as decimal(18, 2)) as pending_balance,
        cast(sum(reserve_delta) as decimal(18, 2)) as reserve_hold,
        max(event_time) as last_event_time,
        max(ingest_seq) as source_watermark
    from posted
    group by 1, 2
),

final as (
    select
        balances.merchant_id,
        balances.currency,
        balances.available_balance,
        balances.pending_balance,
        balances.reserve_hold,
        balances.last_event_time,
        balances.source_watermark,
        observations.policy_observed_at,
        '{{ invocation_id }}' as written_by_invocation_id,
        current_timestamp() as written_at
    from balances
    cross join observations
)

{% if is_incremental() %}
, changed as (
    select final.*
    from final
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
)

select * from changed
{% else %}
select * from final
{% endif %}
