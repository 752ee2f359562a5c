{% macro reserve_rates_as_of(accepted_events, observed_until=none) -%}
    {#-
        Every row of `accepted_events` with `reserve_pct` and the versions that decided it
        (as_of_segment, as_of_segment_observed_at, as_of_policy_effective_from_date,
        as_of_policy_observed_at; null where no version applies):
        for funds_released events, the rate in effect for the merchant on event_date ("latest
        knowledge wins"): the segment is that of the most recently observed segment version with
        segment_effective_from_date <= the day, and the rate that of the most recently observed
        policy version of that segment with effective_from_date <= the day; 0 when no version
        applies, and 0 for other event types. Scans `accepted_events` once, with no shuffle of it:
        each version becomes the interval of days it decides (_version_intervals), at most one per
        key and day, and both version tables are broadcast to an equi-join with a range condition.
        `observed_until` (a SQL timestamp expression; none: every version) keeps only the versions
        observed by then: the knowledge of a past build.
    -#}
    {%- set segment_versions = ref('int_merchant_segment_versions') %}
    {%- set policy_versions = ref('int_reserve_policy_versions') %}
    {%- if observed_until is not none %}
        {%- set segment_versions = "(select * from " ~ segment_versions ~ " where observed_at <= " ~ observed_until ~ ")" %}
        {%- set policy_versions = "(select * from " ~ policy_versions ~ " where observed_at <= " ~ observed_until ~ ")" %}
    {%- endif %}
    select /*+ broadcast(segments, policies) */
        events.*,
        segments.segment as as_of_segment,
        segments.observed_at as as_of_segment_observed_at,
        policies.applies_from as as_of_policy_effective_from_date,
        policies.observed_at as as_of_policy_observed_at,
        coalesce(policies.reserve_pct, cast(0 as decimal(5, 4))) as reserve_pct
    from {{ accepted_events }} as events
    left join (
        {{ _version_intervals(segment_versions, 'merchant_id', 'segment_effective_from_date', 'segment') }}
    ) as segments
        on events.event_type = 'funds_released'
        and events.merchant_id = segments.merchant_id
        and events.event_date >= segments.applies_from
        and events.event_date < segments.applies_until
    left join (
        {{ _version_intervals(policy_versions, 'segment', 'effective_from_date', 'reserve_pct') }}
    ) as policies
        on segments.segment = policies.segment
        and events.event_date >= policies.applies_from
        and events.event_date < policies.applies_until
{%- endmacro %}


{% macro _version_intervals(versions, key, effective_from, value) -%}
    {#-
        Private. The days each version of `versions` decides under "latest knowledge wins", as
        (key, value, observed_at, applies_from, applies_until): a version observed later overrides it from its
        own effective date on, so a version applies from its effective date until the earliest
        effective date of the versions of its key observed after it (exclusive; 9999-12-31 when
        none). A version overridden from its first day on decides no day and is left out. For a key
        and a day at most one interval holds: that of the latest observed version effective then.
    -#}
    select
        {{ key }},
        {{ value }},
        observed_at,
        applies_from,
        applies_until
    from (
        select
            {{ key }},
            {{ value }},
            observed_at,
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
