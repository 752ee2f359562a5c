{% macro reserve_rates_as_of(merchant_days) -%}
    {#-
        The reserve_pct in effect for each (merchant_id, event_date) of `merchant_days` ("latest
        knowledge wins"): the merchant's segment is that of the most recently observed segment
        version with segment_effective_from_date <= the day; the rate is that of the most recently
        observed policy version of that segment with effective_from_date <= the day. Days with no
        applicable version get no row (the caller uses rate 0). Windows are partitioned by
        merchant_id first, so a filter on merchant_id is pushed below them.
    -#}
    select merchant_id, event_date, segment, reserve_pct
    from (
        select
            segment_days.merchant_id,
            segment_days.event_date,
            segment_days.segment,
            policies.reserve_pct,
            row_number() over (
                partition by segment_days.merchant_id, segment_days.event_date
                order by policies.observed_at desc
            ) as policy_rank
        from (
            select
                merchant_days.merchant_id,
                merchant_days.event_date,
                segments.segment,
                row_number() over (
                    partition by merchant_days.merchant_id, merchant_days.event_date
                    order by segments.observed_at desc
                ) as segment_rank
            from {{ merchant_days }} as merchant_days
            inner join {{ ref('int_merchant_segment_versions') }} as segments
                on merchant_days.merchant_id = segments.merchant_id
                and segments.segment_effective_from_date <= merchant_days.event_date
        ) as segment_days
        inner join {{ ref('int_reserve_policy_versions') }} as policies
            on segment_days.segment = policies.segment
            and policies.effective_from_date <= segment_days.event_date
        where segment_days.segment_rank = 1
    ) as ranked_rates
    where policy_rank = 1
{%- endmacro %}
