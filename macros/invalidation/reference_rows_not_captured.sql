{% macro reference_rows_not_captured(reference) -%}
    {#-
        Landed rows of a reference table ('reserve_policies' or 'merchants') whose values differ
        from the current version in its snapshot (or that have none): the rows the next build's
        snapshot captures. Columns: the landed row's (staging model). One query for the dry-run
        plan (balance_invalidation_slices) and for freshness (balance_freshness).
    -#}
    {%- set references = {
        'reserve_policies': {
            'landed': ref('stg_payledger__reserve_policies'),
            'versions': ref('int_reserve_policy_versions'),
            'key': 'segment',
            'values': ['reserve_pct', 'effective_from_date'],
        },
        'merchants': {
            'landed': ref('stg_payledger__merchants'),
            'versions': ref('int_merchant_segment_versions'),
            'key': 'merchant_id',
            'values': ['segment', 'segment_effective_from_date'],
        },
    } -%}
    {%- if reference not in references -%}
        {{ exceptions.raise_compiler_error(
            "reference_rows_not_captured: unknown reference " ~ reference ~ "; expected one of " ~ references.keys() | join(', ')
        ) }}
    {%- endif -%}
    {%- set spec = references[reference] -%}
    select landed.*
    from {{ spec['landed'] }} as landed
    left join {{ spec['versions'] }} as current_version
        on landed.{{ spec['key'] }} = current_version.{{ spec['key'] }}
        and current_version.superseded_at is null
    where not ({% for column in spec['values'] %}{{ ' and ' if not loop.first }}landed.{{ column }} <=> current_version.{{ column }}{% endfor %})
{%- endmacro %}
