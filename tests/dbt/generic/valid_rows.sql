{% test valid_rows(model, unique=none, not_null=none, accepted_values=none, scoped_by=none) %}
{#-
    A model's row checks in one scan (one aggregate), instead of a scan per `unique`, `not_null`
    and `accepted_values` test: returns one row per check that fails, with the number of rows that
    fail it.
    - `unique`: keys, each a column name, a list of columns, or `{columns: [...], where: <sql>}`
      (the key of the rows the condition selects): no key value occurs twice, no key has a null part;
    - `not_null`: columns that are never null;
    - `accepted_values`: `{column: [values]}`; a null is not checked (as dbt's `accepted_values`);
    - `scoped_by`: an ingest position column (ingest_seq). In a build that payledger runs
      (checked_since), only the rows past the published build's events watermark are checked, with
      the earlier rows that share a `unique` key with one of them (so a new key equal to an old one
      is still a duplicate); the published build checked the rest. Every row otherwise.
-#}
{%- set specs = [] -%}
{%- for key in unique or [] -%}
    {%- do specs.append(key if key is mapping else {'columns': [key] if key is string else key}) -%}
{%- endfor -%}
{%- set since = checked_since() if scoped_by else none -%}
{%- set scope = namespace(rows='true') -%}
{%- if since is not none -%}
    {%- set new_rows = scoped_by ~ ' > ' ~ since.events_watermark -%}
    {%- set parts = [new_rows] -%}
    {%- for spec in specs if spec['columns'] | list != [scoped_by] -%}
        {%- set columns = spec['columns'] | join(', ') -%}
        {%- do parts.append(
            '(' ~ columns ~ ') in (select ' ~ columns ~ ' from ' ~ model ~ ' where ' ~ new_rows
            ~ ' and (' ~ (spec.get('where') or 'true') ~ '))'
        ) -%}
    {%- endfor -%}
    {%- set scope.rows = parts | join(' or ') -%}
{%- endif -%}
{%- set checks = [] -%}
{%- for spec in specs -%}
    {%- set where = spec.get('where') or 'true' -%}
    {%- set all_present = '(' ~ where ~ ') and ' ~ spec['columns'] | join(' is not null and ') ~ ' is not null' -%}
    {%- set key_label = spec['columns'] | join(', ') ~ (' where ' ~ spec['where'] if spec.get('where') else '') -%}
    {%- do checks.append((
        'duplicate key (' ~ key_label ~ ')',
        'count(case when ' ~ all_present ~ ' then 1 end) - count(distinct case when '
            ~ all_present ~ ' then struct(' ~ spec['columns'] | join(', ') ~ ') end)'
    )) -%}
    {%- do checks.append((
        'null in key (' ~ key_label ~ ')',
        'count(case when (' ~ where ~ ') and not (' ~ all_present ~ ') then 1 end)'
    )) -%}
{%- endfor -%}
{%- for column in not_null or [] -%}
    {%- do checks.append(('null ' ~ column, 'count(*) - count(' ~ column ~ ')')) -%}
{%- endfor -%}
{%- for column, values in (accepted_values or {}).items() -%}
    {%- do checks.append((
        'unaccepted value of ' ~ column,
        'count(case when ' ~ column ~ " not in ('" ~ values | join("', '") ~ "') then 1 end)"
    )) -%}
{%- endfor -%}
{%- if not checks -%}
    {{ exceptions.raise_compiler_error('valid_rows on ' ~ model ~ ': no check given (unique, not_null or accepted_values)') }}
{%- endif %}
with counted as (
    select
        {% for label, failing in checks -%}
            {{ failing }} as check_{{ loop.index }}{{ ',' if not loop.last }}
        {% endfor %}
    from {{ model }}
    where {{ scope.rows }}
),

checked as (
    select stack(
        {{ checks | length }},
        {% for label, failing in checks -%}
            '{{ label | replace("'", "\\'") }}', check_{{ loop.index }}{{ ',' if not loop.last }}
        {% endfor %}
    ) as (failed_check, failing_rows)
    from counted
)

select
    failed_check,
    failing_rows
from checked
where failing_rows > 0
{% endtest %}
