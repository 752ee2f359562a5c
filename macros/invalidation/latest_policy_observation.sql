{% macro latest_policy_observation() -%}
    {#- A one-row query: the latest snapshot observation of policies and segments (policy_observed_at). -#}
    select max(observed_at) as policy_observed_at
    from (
        select observed_at from {{ ref('int_merchant_segment_versions') }}
        union all
        select observed_at from {{ ref('int_reserve_policy_versions') }}
    )
{%- endmacro %}
