{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        on_schema_change='fail',
    )
}}

{#- Quarantine: every ingested row that is not folded, with the raw values and the reason. -#}

with classified as (
    select * from {{ ref('int_payment_events_classified') }}
    where not is_accepted
    {% if is_incremental() %}
        and ingest_seq > (select coalesce(max(ingest_seq), 0) from {{ this }})
    {% endif %}
),

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
