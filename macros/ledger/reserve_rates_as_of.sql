{% macro reserve_rates_as_of(accepted_events) -%}
    {#-
        Every row of `accepted_events` with `reserve_pct` (plus the helper column as_of_segment):
        for funds_released events, the rate in effect for the merchant on event_date ("latest
        knowledge wins"): the segment is that of the most recently observed segment version with
        segment_effective_from_date <= the day, and the rate that of the most recently observed
        policy version of that segment with effective_from_date <= the day; 0 when no version
        applies, and 0 for other event types. Scans `accepted_events` once, with no shuffle of it:
        each version becomes the interval of days it decides (_version_intervals), at most one per
        key and day, and both version tables are broadcast to an equi-join with a range condition.
    -#}
    select /*+ broadcast(segments, policies) */
        events.*,
        segments.segment as as_of_segment,
        coalesce(policies.reserve_pct, cast(0 as decimal(5, 4))) as reserve_pct
    from {{ accepted_events }} as events
    left join (
        {{ _version_intervals(ref('int_merchant_segment_versions'), 'merchant_id', 'segment_effective_from_date', 'segment') }}
    ) as segments
        on events.event_type = 'funds_released'
        and events.merchant_id = segments.merchant_id
        and events.event_date >= segments.applies_from
        and events.event_date < segments.applies_until
    left join (
        {{ _version_intervals(ref('int_reserve_policy_versions'), 'segment', 'effective_from_date', 'reserve_pct') }}
    ) as policies
        on segments.segment = policies.segment
        and events.event_date >= policies.applies_from
        and events.event_date < policies.applies_until
{%- endmacro %}


{% macro _version_intervals(versions, key, effective_from, value) -%}
    {#-
        Private. The days each version of `versions` decides under "latest knowledge wins", as
        (key, value, applies_from, applies_until): a version observed later overrides it from its
        own effective date on, so a version applies from its effective date until the earliest
        effective date of the versions of its key observed after it (exclusive; 9999-12-31 when
        none). A version overridden from its first day on decides no day and is left out. For a key
        and a day at most one interval holds: that of the latest observed version effective then.
    -#}
    select
        {{ key }},
        {{ value }},
        applies_from,
        applies_until
    from (
        select
            {{ key }},
            {{ value }},
            {{ effective_from }} as applies_from,
            coalesce(
                min({{ effective_from }}) over (
                    partition by {{ key }}
                    order by observed_at, {{ effective_from }}
                    rows between 1 following and unbounded following
                ),
                date '9999-12-31'
            ) as applies_until
        from {{ versions }}
    ) as intervals
    where applies_from < applies_until
{%- endmacro %}
