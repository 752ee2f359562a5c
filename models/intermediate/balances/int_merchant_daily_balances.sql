-- depends_on: {{ ref('int_balance_slices_invalidated') }}
-- depends_on: {{ ref('int_balance_merchants_invalidated') }}
{#- A change data feed: after a replay the view folds the rows it changed (change_feed_start). #}
{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key=['merchant_id', 'currency', 'balance_date'],
        on_schema_change='fail',
        partition_by=['balance_date'],
        tblproperties=log_checkpoint_tblproperties(merge_on_read_tblproperties(change_feed=true)),
    )
}}

{#-
    The checkpoint: per key and UTC day, the balance changes of that day's accepted events. An
    incremental run
    - replays the invalidated slices (policy, segment and manual) from their first invalid day on,
      reading canonical events only from that day (event_date is the partition of the events);
    - adds the postings of new events (ingest_seq past this model's watermark) to their days.
    Each written row carries the snapshot observation it reflects and the invocation that wrote it.
    Partitioned by balance_date: reading the checkpoint days the new events fall on, and the MERGE
    (merge_pruning_predicate: those days and the replayed ones), touch those days' files only.
-#}

{%- set marks = balance_watermarks() %}
{%- set replay_from = none %}
{%- set new_event_dates = [] %}
{%- if is_incremental() and execute %}
    {#- Events past the watermark exist only where some landed past it (the classification keeps
        each landed row's ingest_seq): otherwise there are no new days, and no query. #}
    {%- if run_watermarks().landed_ingest_seq > marks.events %}
        {%- set new_event_dates = run_query(
            "select distinct cast(event_date as string) from " ~ ref('int_payment_events_classified')
            ~ " where is_accepted and ingest_seq > " ~ marks.events
        ).columns[0].values() %}
    {%- endif %}
    {%- set replay_from = slice_bounds().replay_from %}
{%- endif %}
{%- if is_incremental() %}
{{ merge_pruning_predicate(
    "(" ~ date_literal_list('DBT_INTERNAL_DEST.balance_date', new_event_dates)
    ~ (" or DBT_INTERNAL_DEST.balance_date >= date " ~ quoted_literal(replay_from) if replay_from else "") ~ ")"
) }}
{%- endif %}

with accepted_events as (
    select * from {{ ref('int_payment_events_classified') }}
    where is_accepted
),

observations as (
    {{ latest_policy_observation() }}
),

{% if is_incremental() %}
invalid_merchants as (
    {#- The merchants (a view) are read only where a slice is replayed: none otherwise. #}
    {% if replay_from %}
    select
        merchant_id,
        min(from_date) as from_date
    from {{ ref('int_balance_merchants_invalidated') }}
    group by merchant_id
    {% else %}
    select
        cast(null as string) as merchant_id,
        cast(null as date) as from_date
    where false
    {% endif %}
),

replayed_events as (
    select accepted_events.*
    from accepted_events
    inner join invalid_merchants
        on accepted_events.merchant_id = invalid_merchants.merchant_id
        and accepted_events.event_date >= invalid_merchants.from_date
    {% if replay_from %}
    where accepted_events.event_date >= date {{ quoted_literal(replay_from) }}
    {% else %}
    where false
    {% endif %}
),

new_events as (
    select accepted_events.*
    from accepted_events
    left anti join invalid_merchants
        on accepted_events.merchant_id = invalid_merchants.merchant_id
        and accepted_events.event_date >= invalid_merchants.from_date
    where accepted_events.ingest_seq > {{ marks.events }}
),

replayed_postings as (
    {{ post_payment_events('replayed_events') }}
),

new_postings as (
    {{ post_payment_events('new_events') }}
),

replayed_days as (
    {{ _daily_balance_aggregate('replayed_postings') }}
),

new_days as (
    {{ _daily_balance_aggregate('new_postings') }}
),

checkpoint_days as (
    {#- Only the days the new events fall on, as literal dates: the scan prunes partitions. #}
    select * from {{ this }}
    where {{ date_literal_list('balance_date', new_event_dates) }}
),

added_days as (
    select
        new_days.merchant_id,
        new_days.currency,
        new_days.balance_date,
        {{ stored_plus_posted('checkpoint_days', 'change', 'new_days', 'change') }},
        new_days.event_count + coalesce(checkpoint_days.event_count, 0) as event_count,
        greatest(new_days.source_watermark, coalesce(checkpoint_days.source_watermark, 0)) as source_watermark,
        greatest(new_days.last_event_time, checkpoint_days.last_event_time) as last_event_time
    from new_days
    left join checkpoint_days
        on new_days.merchant_id = checkpoint_days.merchant_id
        and new_days.currency = checkpoint_days.currency
        and new_days.balance_date = checkpoint_days.balance_date
),

changed_days as (
    select * from replayed_days
    union all
    select * from added_days
),
{% else %}
all_postings as (
    {{ post_payment_events('accepted_events') }}
),

changed_days as (
    {{ _daily_balance_aggregate('all_postings') }}
),
{% endif %}

final as (
    select
        changed_days.merchant_id,
        changed_days.currency,
        changed_days.available_change,
        changed_days.pending_change,
        changed_days.reserve_change,
        changed_days.event_count,
        changed_days.source_watermark,
        observations.policy_observed_at,
        '{{ invocation_id }}' as written_by_invocation_id,
        changed_days.balance_date,
        changed_days.last_event_time,
        {{ build_started_at() }} as written_at
    from changed_days
    cross join observations
)

select * from final
