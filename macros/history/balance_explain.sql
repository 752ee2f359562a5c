{% macro balance_explain(merchant_id, currency, build=none, by='event') -%}
    {#-
        A query of the postings that make up the balance of (merchant_id, currency) as published by
        build `build` (none: the latest build): every accepted event the build had folded for the
        key (ingest_seq up to its events watermark) through post_payment_events, the fold the models
        use, with the segment and policy versions the build knew (observed up to its
        policy_observed_at). by='event': one row per posting, in event_time order; by='day': one
        row per event_date. Their sum equals the view's row published by the build
        (balance_as_of(merchant_id, currency, build=...)). Raises a compiler error for a malformed
        value or an unknown build.
        Usage: dbt show --inline "{{ balance_explain('m_000042', 'USD', by='day') }}" --limit 400
    -#}
    {%- if by not in ['event', 'day'] -%}
        {{ exceptions.raise_compiler_error("by must be 'event' or 'day', got " ~ (by | string | tojson)) }}
    {%- endif -%}
    {%- set merchant = _balance_key_literal('merchant_id', merchant_id) -%}
    {%- set code = _balance_key_literal('currency', currency) -%}
    {%- set published = _published_build(build) -%}
    {%- set observed_until = "timestamp " ~ quoted_literal(published.policy_observed_at) if published.policy_observed_at else "cast(null as timestamp)" -%}
    with accepted_events as (
        select *
        from {{ ref('int_payment_events_classified') }}
        where is_accepted
            and merchant_id = {{ merchant }}
            and currency = {{ code }}
            and ingest_seq <= {{ published.events_watermark }}
    ),

    postings as (
        {{ post_payment_events('accepted_events', observed_until=observed_until) }}
    ),

    final as (
        {% if by == 'event' %}
        select
            event_id,
            event_type,
            amount,
            event_time,
            ingest_seq,
            available_delta,
            pending_delta,
            reserve_delta,
            as_of_segment as segment,
            as_of_segment_observed_at as segment_observed_at,
            reserve_pct,
            hold_amount,
            as_of_policy_effective_from_date as policy_effective_from_date,
            as_of_policy_observed_at as policy_observed_at
        from postings
        {% else %}
        select
            event_date,
            count(*) as postings,
            cast(sum(available_delta) as {{ money_type() }}) as available_delta,
            cast(sum(pending_delta) as {{ money_type() }}) as pending_delta,
            cast(sum(reserve_delta) as {{ money_type() }}) as reserve_delta,
            concat_ws(', ', array_sort(collect_set(case when event_type = 'funds_released' then cast(reserve_pct as string) end))) as reserve_pcts_applied,
            min(event_time) as first_event_time,
            max(event_time) as last_event_time
        from postings
        group by event_date
        {% endif %}
    )

    select * from final
    order by {{ 'event_time, ingest_seq' if by == 'event' else 'event_date' }}
{%- endmacro %}
