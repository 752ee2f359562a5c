with source as (
    select * from {{ source('payledger', 'payment_events') }}
),

{# The staging pattern (source, renamed) of every staging model; each lists its own columns. #}
renamed as (
    select
        ingest_seq,
        event_id,
        merchant_id,
        currency,
        event_type,
        {#- As landed (decimal(38,18)): int_payment_events_classified validates it against the
            currency's minor unit and money_type(), then casts it. #}
        amount,
        to_date(event_time) as event_date,
        event_time,
        ingested_at
    from source
)

select * from renamed
