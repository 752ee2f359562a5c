with source as (
    select * from {{ source('payledger', 'payment_events') }}
),

{# The staging pattern (source, renamed) of every staging model; each lists its own columns. #}
renamed as (
    select
        ingest_seq,
        event_id,
        merchant_id,
        {#- ISO 4217 codes in capitals: Stripe's API and exports write them in lower case (`usd`).
            ASCII letters only, whatever the JVM's locale; anything else stays as landed and is
            validated by int_payment_events_classified. #}
        translate(currency, 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') as currency,
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
