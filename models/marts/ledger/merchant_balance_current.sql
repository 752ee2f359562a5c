-- depends_on: {{ ref('int_balance_slices_invalidated') }}
-- depends_on: {{ ref('int_balance_merchants_invalidated') }}
-- depends_on: {{ ref('int_payment_events_classified') }}
-- depends_on: {{ ref('payment_event_types') }}
-- depends_on: {{ ref('int_merchant_segment_versions') }}
-- depends_on: {{ ref('int_reserve_policy_versions') }}
{{
    config(
        materialized='incremental',
        incremental_strategy='merge',
        unique_key=['merchant_id', 'currency'],
        on_schema_change='fail',
        tblproperties=log_checkpoint_tblproperties(merge_on_read_tblproperties()),
        post_hook="{{ restore_code_generation() }}",
    )
}}

{{ guard_full_refresh() }}

{#-
    One row per (merchant_id, currency). The first build sums the daily checkpoint. An incremental
    run, in one commit:
    - brings the keys of the merchants in this run's replay slices (policy, segment and manual;
      int_balance_merchants_invalidated), which the checkpoint replayed first, to the checkpoint's
      sums: by folding the checkpoint's changed rows since the view last took it in (the last
      write of the view or of the audit after it) into the stored rows where the change data feed
      gives them (change_feed_start; Delta through run_dbt) and no slice is a manual one, else by
      re-summing their keys over the whole checkpoint;
    - advances every other key touched by accepted events past the view's own watermark (max
      source_watermark) by those events' postings: stored balance + postings.
    The view's watermark is committed with its rows, so a run killed after the checkpoint and
    before the view is caught up by the next one (the slices' policy watermark is the audit's,
    written after the view, so the same slices are replayed again). Only rows whose values changed
    are merged. policy_observed_at is the latest snapshot observation known when a row was
    computed.
-#}

{%- set view_watermark = incremental_watermark('source_watermark') %}
{%- set has_replay = false %}
{%- set has_manual_replay = false %}
{%- if is_incremental() and execute and slice_bounds().replay_from is not none %}
    {#- The merchants (a view) are counted only where a slice is replayed (slice_bounds: read once
        per run, by the checkpoint already), in one query: all of them, and a manual slice's. #}
    {%- set merchants = run_query(
        "select count(*), count_if(cause = 'manual') from " ~ ref('int_balance_merchants_invalidated')
    ).rows[0] %}
    {%- set has_replay = merchants[0] > 0 %}
    {%- set has_manual_replay = merchants[1] > 0 %}
{%- endif %}
{%- set changes_from = none %}
{%- if has_replay and not has_manual_replay %}
    {#- From the last write of the view or of the audit, which a build appends after the view once
        the view took the checkpoint in (also when it merged no row). A manual replay repairs what
        may be wrong in the stored rows: it re-sums, never folds. #}
    {%- set changes_from = change_feed_start(ref('int_merchant_daily_balances'), [this, node_relation('balance_invalidations')]) %}
{%- endif %}
{#- A replay without the feed re-sums its merchants over the whole checkpoint: compiled code, where
    the run allows it. #}
{%- do compile_whole_history_read(has_replay and changes_from is none) %}

with
{% if is_incremental() %}
observations as (
    {{ latest_policy_observation() }}
),

replayed_merchants as (
    select distinct merchant_id
    from {{ ref('int_balance_merchants_invalidated') }}
    where {{ 'true' if has_replay else 'false' }}
),

{% endif %}

{% if changes_from is not none %}
summed_days as (
    {{ stored_plus_changes(ref('int_merchant_daily_balances'), changes_from, 'replayed_merchants', this) }}
),
{% else %}
daily_balances as (
    select * from {{ ref('int_merchant_daily_balances') }}
),

summed_days as (
    {#- Every key on a full build; on an incremental run, the keys of the replayed merchants. #}
    select
        daily_balances.merchant_id,
        daily_balances.currency,
        cast(sum(daily_balances.available_change) as {{ money_type() }}) as available_balance,
        cast(sum(daily_balances.pending_change) as {{ money_type() }}) as pending_balance,
        cast(sum(daily_balances.reserve_change) as {{ money_type() }}) as reserve_hold,
        max(daily_balances.last_event_time) as last_event_time,
        max(daily_balances.source_watermark) as source_watermark,
        max(daily_balances.policy_observed_at) as policy_observed_at
    from daily_balances
    {% if is_incremental() %}
    left semi join replayed_merchants
        on daily_balances.merchant_id = replayed_merchants.merchant_id
    where {{ 'true' if has_replay else 'false' }}
    {% endif %}
    group by 1, 2
),
{% endif %}

{% if is_incremental() %}
new_events as (
    {#- The watermark as a literal, so the scan prunes files to the new events. #}
    select events.*
    from {{ ref('int_payment_events_classified') }} as events
    left anti join replayed_merchants
        on events.merchant_id = replayed_merchants.merchant_id
    where events.is_accepted and events.ingest_seq > {{ view_watermark }}
),

new_postings as (
    {{ post_payment_events('new_events') }}
),

posted_sums as (
    select
        merchant_id,
        currency,
        sum(available_delta) as available_delta,
        sum(pending_delta) as pending_delta,
        sum(reserve_delta) as reserve_delta,
        max(event_time) as last_event_time,
        max(ingest_seq) as source_watermark
    from new_postings
    group by 1, 2
),

advanced as (
    select
        posted_sums.merchant_id,
        posted_sums.currency,
        {#- The same shape as int_merchant_daily_balances' added_days: stored row plus new
            postings, per key here and per day there; the sums are stored_plus_posted's. -#}
        {{ stored_plus_posted('stored_rows', 'balance', 'posted_sums', 'delta') }},
        greatest(stored_rows.last_event_time, posted_sums.last_event_time) as last_event_time,
        greatest(stored_rows.source_watermark, posted_sums.source_watermark) as source_watermark,
        observations.policy_observed_at
    from posted_sums
    cross join observations
    left join {{ this }} as stored_rows
        on posted_sums.merchant_id = stored_rows.merchant_id
        and posted_sums.currency = stored_rows.currency
),

balances as (
    select * from summed_days
    union all
    select * from advanced
),
{% else %}
balances as (
    select * from summed_days
),
{% endif %}

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
        {{ build_started_at() }} as written_at
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
