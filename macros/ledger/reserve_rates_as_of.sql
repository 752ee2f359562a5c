{% macro reserve_rates_as_of(accepted_events) -%}
    {#-
        Every row of `accepted_events` with `reserve_pct` (plus the helper columns as_of_segment,
        segment_rank, policy_rank): for funds_released events, the rate in effect for the merchant
        on event_date ("latest knowledge wins"): the segment is that of the most recently observed
        segment version with segment_effective_from_date <= the day, and the rate that of the most
        recently observed policy version of that segment with effective_from_date <= the day; 0 when
        no version applies, and 0 for other event types. Scans `accepted_events` once; windows are
        partitioned by (merchant_id, event_id).
    -#}
    select
        with_policy.*,
        coalesce(with_policy.policy_pct, cast(0 as decimal(5, 4))) as reserve_pct
    from (
        select
            with_segment.*,
            policies.reserve_pct as policy_pct,
            row_number() over (
                partition by with_segment.merchant_id, with_segment.event_id
                order by policies.observed_at desc
            ) as policy_rank
        from (
            select
                events.*,
                segments.segment as as_of_segment,
                row_number() over (
                    partition by events.merchant_id, events.event_id
                    order by segments.observed_at desc
                ) as segment_rank
            from {{ accepted_events }} as events
            left join {{ ref('int_merchant_segment_versions') }} as segments
                on events.event_type = 'funds_released'
                and events.merchant_id = segments.merchant_id
                and segments.segment_effective_from_date <= events.event_date
        ) as with_segment
        left join {{ ref('int_reserve_policy_versions') }} as policies
            on with_segment.as_of_segment = policies.segment
            and policies.effective_from_date <= with_segment.event_date
        where with_segment.segment_rank = 1
    ) as with_policy
    where with_policy.policy_rank = 1
{%- endmacro %}
