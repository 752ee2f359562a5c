{% macro post_payment_events(accepted_events) -%}
    {#-
        Postings of accepted events: one row per event with its reserve rate, reserve hold and the
        change it makes to each balance (see the docs block `balance_fold`).
        `accepted_events` is a relation or CTE name with the columns of int_payment_events_classified.
        The as-of rate is resolved per (merchant_id, event_date) of funds_released events only, in
        windows partitioned by merchant_id, so a filter on merchant_id reaches the event scan.
    -#}
    select
        events.merchant_id,
        events.currency,
        events.event_id,
        events.ingest_seq,
        events.event_type,
        events.amount,
        coalesce(rates.reserve_pct, cast(0 as decimal(5, 4))) as reserve_pct,
        cast(round(events.amount * coalesce(rates.reserve_pct, 0), 2) as decimal(18, 2)) as hold_amount,
        cast(
            rules.available_per_amount * events.amount
            + rules.available_per_hold * round(events.amount * coalesce(rates.reserve_pct, 0), 2)
            as decimal(18, 2)
        ) as available_delta,
        cast(rules.pending_per_amount * events.amount as decimal(18, 2)) as pending_delta,
        cast(
            rules.reserve_per_amount * events.amount
            + rules.reserve_per_hold * round(events.amount * coalesce(rates.reserve_pct, 0), 2)
            as decimal(18, 2)
        ) as reserve_delta,
        events.event_date,
        events.event_time
    from {{ accepted_events }} as events
    inner join {{ ref('payment_event_types') }} as rules
        on events.event_type = rules.event_type
    left join (
        {{ reserve_rates_as_of(
            "(select distinct merchant_id, event_date from " ~ accepted_events
            ~ " where event_type = 'funds_released')"
        ) }}
    ) as rates
        on events.merchant_id = rates.merchant_id
        and events.event_date = rates.event_date
        and events.event_type = 'funds_released'
{%- endmacro %}
