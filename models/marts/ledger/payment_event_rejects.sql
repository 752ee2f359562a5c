{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
        tblproperties=log_checkpoint_tblproperties(),
    )
}}

{#- Quarantine: every ingested row that is not folded, with the raw values and the reason. -#}

{#- The watermark as a literal (not a subquery), so the scan prunes files to the new rows. #}
{%- set watermark = incremental_watermark('ingest_seq') %}

with classified as (
    select * from {{ ref('int_payment_events_classified') }}
    where not is_accepted
        {% if is_incremental() %}
        and ingest_seq > {{ watermark }}
        {% endif %}
),

{# The columns of int_payment_events_classified but is_accepted, listed rather than `select *`:
    the list is this append-only table's contract (on_schema_change='fail'), so a column added
    upstream fails the build here instead of widening the quarantine unnoticed. #}
final as (
    select
        ingest_seq,
        event_id,
        merchant_id,
        currency,
        event_type,
        rejection_reason,
        duplicate_of_ingest_seq,
        amount,
        event_date,
        event_time,
        ingested_at
    from classified
)

select * from final
