{% macro invalidated_merchants(slices) -%}
    {#-
        The merchants each slice invalidates: a query with the slice's columns (cause, segment,
        slice_merchant_id, from_date, observed_at) and merchant_id, one row per slice and merchant.
        A merchant slice names its merchant. A segment slice (segment S from day D) names every
        merchant that was in S on some day >= D under "latest knowledge wins": a merchant's segment
        can only change on the effective date of one of its versions, so D and those later dates are
        the days checked. `slices` is a relation or CTE name with the columns of
        int_balance_slices_invalidated.
    -#}
    select cause, segment, merchant_id as slice_merchant_id, from_date, observed_at, merchant_id
    from {{ slices }}
    where merchant_id is not null

    union all

    select distinct cause, segment, slice_merchant_id, from_date, observed_at, merchant_id
    from (
        select
            check_days.cause,
            check_days.segment,
            cast(null as string) as slice_merchant_id,
            check_days.from_date,
            check_days.observed_at,
            check_days.merchant_id,
            versions.segment as version_segment,
            row_number() over (
                partition by
                    check_days.merchant_id, check_days.cause, check_days.segment, check_days.from_date,
                    check_days.observed_at, check_days.check_date
                order by versions.observed_at desc
            ) as version_rank
        from (
            select segment_slices.*, merchants.merchant_id, segment_slices.from_date as check_date
            from (
                select distinct cause, segment, from_date, observed_at from {{ slices }} where segment is not null
            ) as segment_slices
            cross join (select distinct merchant_id from {{ ref('int_merchant_segment_versions') }}) as merchants

            union

            select segment_slices.*, later.merchant_id, later.segment_effective_from_date as check_date
            from (
                select distinct cause, segment, from_date, observed_at from {{ slices }} where segment is not null
            ) as segment_slices
            inner join {{ ref('int_merchant_segment_versions') }} as later
                on later.segment_effective_from_date > segment_slices.from_date
        ) as check_days
        inner join {{ ref('int_merchant_segment_versions') }} as versions
            on check_days.merchant_id = versions.merchant_id
            and versions.segment_effective_from_date <= check_days.check_date
    ) as segment_days
    where version_rank = 1
        and version_segment = segment
{%- endmacro %}
