{% macro post_payment_events(accepted_events, observed_until=none) -%}
    {#-
        Postings of accepted events: one row per event with its reserve rate, reserve hold and the
        change it makes to each balance (see the docs block `balance_fold`).
        `accepted_events` is a relation or CTE name with the columns of int_payment_events_classified;
        it is scanned once, and a filter on it reaches the event scan (no window over the events).
        The as-of rate (reserve_rates_as_of) is resolved for funds_released events only, with the
        segment and policy versions it came from; `observed_until` (a SQL timestamp expression)
        limits them to the versions observed by then (see reserve_rates_as_of).
        The reserve hold is amount x reserve_pct rounded half up to the currency's minor unit
        (round_to_minor_unit; JPY 0 decimals, USD 2, KWD 3), stored as money_type() (scale 4).
    -#}
    {%- set hold = round_to_minor_unit('events.amount * events.reserve_pct', 'events.hold_minor_unit') -%}
    select
        events.merchant_id,
        events.currency,
        events.event_id,
        events.ingest_seq,
        events.event_type,
        events.amount,
        events.as_of_segment,
        events.reserve_pct,
        cast({{ hold }} as {{ money_type() }}) as hold_amount,
        cast(rules.available_per_amount * events.amount + rules.available_per_hold * {{ hold }} as {{ money_type() }}) as available_delta,
        cast(rules.pending_per_amount * events.amount as {{ money_type() }}) as pending_delta,
        cast(rules.reserve_per_amount * events.amount + rules.reserve_per_hold * {{ hold }} as {{ money_type() }}) as reserve_delta,
        events.event_date,
        events.event_time,
        events.as_of_segment_observed_at,
        events.as_of_policy_effective_from_date,
        events.as_of_policy_observed_at
    from (
        {#- Events are accepted in ISO 4217 currencies only (int_payment_events_classified); one
            accepted before that check, in another code, keeps two decimals, never dropped. #}
        select
            *,
            {{ currency_minor_unit('currency', otherwise=2) | indent(12) }} as hold_minor_unit
        from ({{ reserve_rates_as_of(accepted_events, observed_until) }})
    ) as events
    inner join {{ ref('payment_event_types') }} as rules
        on events.event_type = rules.event_type
{%- endmacro %}
