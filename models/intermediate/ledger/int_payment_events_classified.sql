{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='append_new_columns',
        partition_by=['event_date'],
        tblproperties=log_checkpoint_tblproperties(bucket_sorted_tblproperties()),
    )
}}

{#-
    Every ingested row exactly once, accepted or rejected with a reason. Validation comes before
    dedup: among the valid copies of an event_id the lowest ingest_seq wins, and later copies are
    exact or conflicting duplicates of it. Incremental runs classify only rows past this model's own
    watermark (max ingest_seq), looking up earlier accepted copies of the same event_ids in the
    dedup index (dedup_lookup_query: the files those ids fall in, not all canonical history).
    Partitioned by event_date so that a replay from day D reads canonical events from D on only;
    within a day each write is sorted by reconciliation_bucket, in small row groups
    (bucket_sorted_tblproperties), so that a reconciliation slice's replay can skip the other
    slices' row groups. New columns are appended (reconciliation_bucket came after the others: rows
    written before it hold null there, and readers of a slice keep them), so a column added here
    widens canonical history instead of failing the build; payment_event_rejects, which lists its
    columns, keeps failing on a change.
-#}

{#- The watermark as a literal (not a subquery), so the scan prunes files to the new rows. #}
{%- set watermark = incremental_watermark('ingest_seq') %}
{#- Nothing landed past it: `false` filters, so that neither the landing table nor the earlier
    events are scanned at all (Spark drops the scans of an empty input). #}
{%- set has_landed = not (is_incremental() and execute) or run_watermarks().landed_ingest_seq > watermark %}
{%- set landed_event_ids = 'select event_id from ' ~ ref('stg_payledger__payment_events')
    ~ ' where ingest_seq > ' ~ watermark %}

with events as (
    select * from {{ ref('stg_payledger__payment_events') }}
    {% if is_incremental() %}
    where ingest_seq > {{ watermark }}{{ '' if has_landed else ' and false' }}
    {% endif %}
),

event_types as (
    select event_type from {{ ref('payment_event_types') }}
),

{# Each event's ISO 4217 minor unit (null for a code that is not a payment currency). #}
events_with_minor_unit as (
    select
        *,
        {{ currency_minor_unit('currency') | indent(8) }} as minor_unit
    from events
),

validated as (
    select
        events.*,
        case
            when events.event_id is null or trim(events.event_id) = '' then 'missing_event_id'
            when events.merchant_id is null or trim(events.merchant_id) = '' then 'missing_merchant_id'
            when event_types.event_type is null then 'unknown_event_type'
            {#- Beyond money_type()'s 14 integer digits the cast is null. #}
            when events.amount is null or events.amount <= 0
                or cast(events.amount as {{ money_type() }}) is null then 'invalid_amount'
            when events.currency is null
                or not events.currency rlike '^{{ identifier_pattern("currency") }}$' then 'invalid_currency'
            when events.minor_unit is null then 'unknown_currency'
            when events.amount != {{ round_to_minor_unit('events.amount', 'events.minor_unit') }}
                then 'amount_precision'
            when events.event_time is null then 'missing_event_time'
        end as validation_reason
    from events_with_minor_unit as events
    left join event_types
        on events.event_type = event_types.event_type
),

valid_copies as (
    select
        event_id,
        ingest_seq,
        {{ event_payload_hash() }} as payload_hash
    from validated
    where validation_reason is null
),

{% if is_incremental() %}
new_event_ids as (
    select distinct event_id from valid_copies
),

earlier_accepted as (
    {{ dedup_lookup_query(this, landed_event_ids if has_landed else none) | indent(4) }}
),

previously_accepted as (
    {#- The new ids are few: broadcasting them filters the earlier events as they are scanned,
        instead of shuffling every earlier event to a sort-merge join. #}
    select /*+ broadcast(new_event_ids) */
        earlier.event_id,
        earlier.ingest_seq,
        earlier.payload_hash
    from earlier_accepted as earlier
    left semi join new_event_ids
        on earlier.event_id = new_event_ids.event_id
    where {{ 'true' if has_landed else 'false' }}
),
{% endif %}

candidates as (
    select * from valid_copies
    {% if is_incremental() %}
    union all
    select * from previously_accepted
    {% endif %}
),

ranked_candidates as (
    select
        *,
        row_number() over (partition by event_id order by ingest_seq) as copy_number
    from candidates
),

canonical as (
    select * from ranked_candidates
    where copy_number = 1
),

classified as (
    select
        validated.ingest_seq,
        validated.event_id,
        validated.merchant_id,
        validated.currency,
        validated.event_type,
        case
            when validated.validation_reason is not null then validated.validation_reason
            when validated.ingest_seq = canonical.ingest_seq then null
            when {{ event_payload_hash('validated') }} = canonical.payload_hash then 'exact_duplicate'
            else 'conflicting_duplicate'
        end as rejection_reason,
        case
            when validated.validation_reason is null and validated.ingest_seq != canonical.ingest_seq
                then canonical.ingest_seq
        end as duplicate_of_ingest_seq,
        validated.amount,
        validated.event_date,
        validated.event_time,
        validated.ingested_at
    from validated
    left join canonical
        on validated.event_id = canonical.event_id
        and validated.validation_reason is null
),

{# The staging columns plus the classification, listed as every final CTE lists its columns
    (payment_event_rejects lists the same ones again, as its own contract). #}
final as (
    select
        ingest_seq,
        event_id,
        merchant_id,
        currency,
        event_type,
        rejection_reason,
        duplicate_of_ingest_seq,
        {#- Exact for every accepted amount (validated above); a rejected one with more than four
            decimals is rounded here, and payledger_raw.payment_events keeps it as sent. #}
        cast(amount as {{ money_type() }}) as amount,
        rejection_reason is null as is_accepted,
        event_date,
        event_time,
        ingested_at,
        cast({{ reconciliation_bucket('merchant_id') }} as int) as reconciliation_bucket
    from classified
)

{# One task per day, sorted by bucket: each write adds one file per day it touches, in bucket
    order (the partition column first, so the writer keeps this order). #}
select * from final
distribute by event_date
sort by event_date, reconciliation_bucket
